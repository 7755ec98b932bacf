/**
 * Locations: places, global (platform-wide, collectionId null) or owned by one collection.
 * - search: a collection sees its own locations and the global ones together.
 * - public get: anyone may read one location by id; the collection form falls back to global.
 */
export { locationsRoutes } from './locations.routes.ts';
export { LocationsService } from './locations.service.ts';
