/**
 * Locations: places, global (platform-wide, collectionId null) or owned by one collection.
 * - search: a collection sees its own locations and the global ones together.
 * - public get: anyone may read one location by id; the collection form falls back to global.
 */
import { defineModule, noSettings } from '../../platform/module.ts';
import { locationsRoutes } from './locations.routes.ts';
import { LocationsService } from './locations.service.ts';

export { LocationsService };

export const locationsModule = defineModule({
  name: 'locations',
  needs: [],
  settings: noSettings,
  tables: { owns: ['locations'], reads: ['collections'] },
  create: ({ db }) => new LocationsService(db),
  routes: locationsRoutes,
});
