/**
 * Locations are places a collection's apps point at. Global ones are created by the platform
 * (super admin with features.adminApps) and visible to every collection; a collection's own
 * are visible only to it. Reads of a single location are public.
 */
import type { Db } from '../../db/index.ts';
import { notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import * as repo from './locations.repository.ts';
import type { Location, LocationPayload, LocationSearchQuery } from './locations.schema.ts';

function toLocation(r: repo.LocationRow): Location {
  const loc: Location = {
    locationId: r.id,
    collectionId: r.collection_id,
    scope: r.collection_id === null ? 'global' : 'collection',
    name: r.name,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
  if (r.category !== null) loc.category = r.category;
  if (r.description !== null) loc.description = r.description;
  if (r.country_name !== null) loc.countryName = r.country_name;
  if (r.country_code !== null) loc.countryCode = r.country_code;
  if (r.website_url !== null) loc.websiteUrl = r.website_url;
  if (r.logo_url !== null) loc.logoUrl = r.logo_url;
  if (r.phone !== null) loc.phone = r.phone;
  if (r.email !== null) loc.email = r.email;
  if (r.geofence !== null) loc.geofence = r.geofence;
  if (r.metadata !== null) loc.metadata = r.metadata;
  return loc;
}

export class LocationsService {
  constructor(private readonly db: Db) {}

  async createGlobal(payload: LocationPayload): Promise<Location> {
    return toLocation(await repo.insertLocation(this.db, null, newId('loc'), payload));
  }

  async createForCollection(collectionId: string, payload: LocationPayload): Promise<Location> {
    return toLocation(await repo.insertLocation(this.db, collectionId, newId('loc'), payload));
  }

  async getGlobal(locationId: string): Promise<Location> {
    const row = await repo.findGlobal(this.db, locationId);
    if (!row) throw notFound('Location');
    return toLocation(row);
  }

  async getForCollection(collectionId: string, locationId: string): Promise<Location> {
    const row = await repo.findForCollection(this.db, collectionId, locationId);
    if (!row) throw notFound('Location');
    return toLocation(row);
  }

  async search(collectionId: string, query: LocationSearchQuery): Promise<{ items: Location[]; count: number }> {
    const { rows, total } = await repo.search(this.db, collectionId, {
      ...query,
      limit: query.limit ?? 20,
      offset: query.offset ?? 0,
    });
    return { items: rows.map(toLocation), count: total };
  }
}
