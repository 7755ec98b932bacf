/**
 * Collections: the tenants of the service, and how callers prove who they are.
 * - collection: a tenant; every stored row of a tenant resource carries its id.
 * - admin API key: a secret of one collection (`ck_...`), shown once, stored hashed, revocable.
 * - user token: a signed JWT for a public user of one collection (`sub` = userId, `contactId`).
 * - super admin: the platform operator's key from SUPER_ADMIN_KEY, with a feature map.
 */
export { collectionsRoutes } from './collections.routes.ts';
export { type ApiKey, type Collection, CollectionsService, generatedSuperAdminKey } from './collections.service.ts';
