/**
 * Who sees what. Three sections per object: `data` (everyone who can see the object),
 * `owner` (its owner and admins), `admin` (admins only). `visibility` decides who can see
 * the object at all on public routes: `public` (any signed-in user of the collection),
 * `owner` (its owner only), `admin` (nobody: 404). Every response passes through `present`,
 * so stripping cannot be forgotten by one route.
 */
import type { Caller } from '../../../platform/auth.ts';
import type { ObjectKind } from './kinds.ts';

/** The callers of app-object routes: anonymous callers are refused by the routes' guard. */
export type Actor = Exclude<Caller, { role: 'anonymous' }> & {
  /** Called on the `/public/...` zone: the `admin` section is never returned there, even to admins. */
  publicZone?: boolean;
};
export type Row = Record<string, unknown> & {
  id: string;
  collection_id: string;
  app_id: string;
  visibility: string;
  contact_id: string | null;
  deleted_at: Date | null;
};
export type AppObject = Record<string, unknown>;

export const isAdmin = (c: Actor): c is Actor & { role: 'admin' } => c.role === 'admin';
export const isOwner = (c: Actor, row: Pick<Row, 'contact_id'>) =>
  c.role === 'user' && row.contact_id !== null && row.contact_id === c.contactId;

/** Only admins on the admin zone ever receive the `admin` section. */
export const seesAdminSection = (c: Actor) => isAdmin(c) && !c.publicZone;

/** Whether the caller may read this (not deleted) object at all. */
export function canSee(c: Actor, row: Row): boolean {
  if (isAdmin(c)) return true;
  if (row.deleted_at !== null) return false;
  if (row.visibility === 'public') return true;
  return row.visibility === 'owner' && isOwner(c, row);
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

/** A stored row as the API object the caller may see: every field, sections stripped by role. */
export function present(kind: ObjectKind, row: Row, c: Actor): AppObject {
  const out: AppObject = {
    id: row.id,
    // `orgId`: the collection is the organisation here (docs/app-objects.md).
    orgId: row.collection_id,
    collectionId: row.collection_id,
    appId: row.app_id,
  };
  for (const [name, def] of Object.entries(kind.fields)) {
    const v = row[def.col];
    out[name] = v === undefined ? null : iso(v);
  }
  out.createdAt = iso(row.created_at);
  out.updatedAt = iso(row.updated_at);
  out.deletedAt = iso(row.deleted_at) ?? null;
  out.data = row.data ?? {};
  if (isAdmin(c) || isOwner(c, row)) out.owner = row.owner ?? {};
  if (seesAdminSection(c)) out.admin = row.admin ?? {};
  return out;
}
