/**
 * Collections: the tenants of the service, and how callers prove who they are.
 * - collection: a tenant; every stored row of a tenant resource carries its id.
 * - admin API key: a secret of one collection (`ck_...`), shown once, stored hashed, revocable;
 *   resolved keys are cached per process, and a revocation reaches every process's cache at
 *   once (LISTEN/NOTIFY `api_keys_revoked`).
 * - user token: a signed JWT for a public user of one collection (`sub` = userId, `contactId`).
 * - super admin: the platform operator's key from SUPER_ADMIN_KEY, with a feature map.
 */
import { defineModule } from '../../platform/module.ts';
import { collectionsRoutes } from './collections.routes.ts';
import { CollectionsService, collectionsSettings } from './collections.service.ts';

export {
  type ApiKey,
  type Collection,
  CollectionsService,
  type CollectionsSettings,
  collectionsSettings,
  generatedSuperAdminKey,
} from './collections.service.ts';

export const collectionsModule = defineModule({
  name: 'collections',
  needs: [],
  settings: collectionsSettings,
  create: ({ db }, settings) => new CollectionsService(db, settings),
  routes: collectionsRoutes,
  // Processes that serve requests follow revocations made elsewhere; a worker resolves no keys.
  lifecycle: (service, role) =>
    role === 'worker' ? undefined : { start: () => service.start(), stop: () => service.stop() },
});
