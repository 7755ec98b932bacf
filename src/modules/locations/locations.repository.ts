/** All SQL of the locations module. */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import { pageWithTotal, type Queryable } from '../../db/index.ts';
import type { LocationPayload, LocationSearchQuery } from './locations.schema.ts';

export interface LocationRow {
  id: string;
  collection_id: string | null;
  name: string;
  category: string | null;
  description: string | null;
  country_name: string | null;
  country_code: string | null;
  website_url: string | null;
  logo_url: string | null;
  phone: string | null;
  email: string | null;
  geofence: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  total?: number;
}

const COLUMNS = raw(
  'id, collection_id, name, category, description, country_name, country_code, website_url, logo_url, phone, email, geofence, metadata, created_at, updated_at',
);

const jsonOrNull = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

export async function insertLocation(
  db: Queryable,
  collectionId: string | null,
  id: string,
  p: LocationPayload,
): Promise<LocationRow> {
  const { rows } = await db.query<LocationRow>(sql`
    INSERT INTO locations (id, collection_id, name, category, description, country_name, country_code,
      website_url, logo_url, phone, email, geofence, metadata)
    VALUES (${id}, ${collectionId}, ${p.name}, ${p.category ?? null}, ${p.description ?? null},
      ${p.countryName ?? null}, ${p.countryCode?.toUpperCase() ?? null}, ${p.websiteUrl ?? null},
      ${p.logoUrl ?? null}, ${p.phone ?? null}, ${p.email ?? null},
      ${jsonOrNull(p.geofence)}::jsonb, ${jsonOrNull(p.metadata)}::jsonb)
    RETURNING ${COLUMNS}`);
  return rows[0];
}

export async function findGlobal(db: Queryable, id: string): Promise<LocationRow | undefined> {
  const { rows } = await db.query<LocationRow>(
    sql`SELECT ${COLUMNS} FROM locations WHERE id = ${id} AND collection_id IS NULL`,
  );
  return rows[0];
}

/** The collection's own location, else a global one. */
export async function findForCollection(
  db: Queryable,
  collectionId: string,
  id: string,
): Promise<LocationRow | undefined> {
  const { rows } = await db.query<LocationRow>(
    sql`SELECT ${COLUMNS} FROM locations WHERE id = ${id} AND (collection_id = ${collectionId} OR collection_id IS NULL)`,
  );
  return rows[0];
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A Map, not an object: the sort name comes from the query string. */
const BY_NAME = raw('name, id');
const ORDER = new Map([
  ['name', BY_NAME],
  ['countryCode', raw('country_code NULLS LAST, name, id')],
  ['countryName', raw('country_name NULLS LAST, name, id')],
]);

export interface SearchPage {
  rows: LocationRow[];
  total: number;
}

async function searchWhere(
  db: Queryable,
  where: Sql[],
  q: LocationSearchQuery & { limit: number; offset: number },
): Promise<SearchPage> {
  return pageWithTotal<LocationRow>(db, {
    columns: COLUMNS,
    from: sql`FROM locations WHERE ${join(where, ' AND ')}`,
    orderBy: ORDER.get(q.sort ?? 'name') ?? BY_NAME,
    limit: q.limit,
    offset: q.offset,
  });
}

/**
 * The collection's and the global locations matching the filters. `q` is first a
 * case-insensitive substring of name or description; only when nothing matches that way is
 * it tried as a near match of the name (small typos). Doing both in one OR makes PostgreSQL
 * recheck word similarity on every row: two orders of magnitude slower on 100,000 rows.
 */
export async function search(
  db: Queryable,
  collectionId: string,
  q: LocationSearchQuery & { limit: number; offset: number },
): Promise<SearchPage> {
  const where = [sql`(collection_id = ${collectionId} OR collection_id IS NULL)`];
  if (q.category) where.push(sql`lower(category) = lower(${q.category})`);
  if (q.countryCode) where.push(sql`country_code = upper(${q.countryCode})`);
  if (q.countryName) where.push(sql`lower(country_name) = lower(${q.countryName})`);
  const term = q.q?.trim().toLowerCase();
  if (!term) return searchWhere(db, where, q);
  const exact = await searchWhere(db, [...where, sql`search_text LIKE ${`%${escapeLike(term)}%`}`], q);
  if (exact.total > 0) return exact;
  return searchWhere(db, [...where, sql`lower(name) %> ${term}`], q);
}
