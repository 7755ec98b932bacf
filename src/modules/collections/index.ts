/**
 * Collections: the tenants of the service, and how callers prove who they are.
 * - collection: a tenant; every stored row of a tenant resource carries its id.
 * - admin API key: a secret of one collection (`ck_...`), shown once, stored hashed, revocable.
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
});
