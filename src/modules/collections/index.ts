/**
 * Collections: the tenants of the service, and how callers prove who they are.
 * - collection: a tenant; every stored row of a tenant resource carries its id.
 * - admin API key: a secret of one collection (`ck_...`), shown once, stored hashed, revocable;
 *   resolved keys are cached per process, and a revocation reaches every process's cache at
 *   once (LISTEN/NOTIFY `api_keys_revoked`).
 * - user token: a signed JWT for a public user of one collection (`sub` = userId, `contactId`).
 * - super admin: the platform operator's key from SUPER_ADMIN_KEY, with a feature map.
 */
import { defineModule, SERVING } from '../../platform/module.ts';
import { collectionsRoutes } from './collections.routes.ts';
import { CollectionsService } from './collections.service.ts';
import { collectionsSettings } from './collections.settings.ts';

export {
  type ApiKey,
  type Collection,
  CollectionsService,
  generatedSuperAdminKey,
} from './collections.service.ts';
export { type CollectionsSettings, collectionsSettings } from './collections.settings.ts';

export const collectionsModule = defineModule({
  name: 'collections',
  needs: [],
  settings: collectionsSettings,
  tables: { owns: ['platform_settings', 'collections', 'api_keys'] },
  create: ({ db }, settings) => new CollectionsService(db, settings),
  routes: collectionsRoutes,
  // Processes that serve requests follow revocations made elsewhere; a worker resolves no keys.
  background: (service) => [
    { roles: SERVING, start: () => service.revocations.start(), stop: () => service.revocations.stop() },
  ],
});
