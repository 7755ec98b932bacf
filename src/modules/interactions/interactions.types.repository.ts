/** SQL of interaction types (interaction_types): their CRUD. */
import sql, { empty, raw } from 'sql-template-tag';
import { allOf, pageOf, type Queryable, setList } from '../../db/index.ts';
import type { InteractionPermissions } from './interactions.schema.ts';

export interface TypeRow {
  collection_id: string;
  id: string;
  app_id: string;
  permissions: InteractionPermissions;
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const TYPE_COLUMNS = raw('collection_id, id, app_id, permissions, data, created_at, updated_at');

export async function insertType(
  db: Queryable,
  collectionId: string,
  t: { id: string; appId: string; permissions: InteractionPermissions; data: Record<string, unknown> },
): Promise<TypeRow | undefined> {
  const { rows } = await db.query<TypeRow>(sql`
    INSERT INTO interaction_types (collection_id, id, app_id, permissions, data)
    VALUES (${collectionId}, ${t.id}, ${t.appId}, ${JSON.stringify(t.permissions)}::jsonb, ${JSON.stringify(t.data)}::jsonb)
    ON CONFLICT DO NOTHING
    RETURNING ${TYPE_COLUMNS}`);
  return rows[0];
}

/** `forUpdate` locks the row until the transaction ends (read-modify-write of permissions). */
export async function findType(
  db: Queryable,
  collectionId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<TypeRow | undefined> {
  const { rows } = await db.query<TypeRow>(sql`
    SELECT ${TYPE_COLUMNS} FROM interaction_types WHERE collection_id = ${collectionId} AND id = ${id}
    ${opts.forUpdate ? sql`FOR UPDATE` : empty}`);
  return rows[0];
}

export async function findTypes(db: Queryable, collectionId: string, ids: string[]): Promise<TypeRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<TypeRow>(
    sql`SELECT ${TYPE_COLUMNS} FROM interaction_types WHERE collection_id = ${collectionId} AND id = ANY(${ids}::text[])`,
  );
  return rows;
}

/** "Enabled" means permissions.enabled is not false. */
const ENABLED = raw(`coalesce((permissions->>'enabled')::boolean, true)`);

export async function listTypes(
  db: Queryable,
  collectionId: string,
  q: { appId?: string; limit: number; offset: number; enabledOnly: boolean },
): Promise<TypeRow[]> {
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    q.appId && sql`app_id = ${q.appId}`,
    q.enabledOnly && sql`${ENABLED}`,
  );
  return pageOf<TypeRow>(db, {
    ...q,
    columns: TYPE_COLUMNS,
    from: sql`FROM interaction_types WHERE ${where}`,
    orderBy: sql`created_at, id`,
  });
}

export async function updateType(
  db: Queryable,
  collectionId: string,
  id: string,
  p: { appId?: string; permissions?: InteractionPermissions; data?: Record<string, unknown> },
): Promise<TypeRow | undefined> {
  const sets = setList(
    sql`updated_at = now()`,
    p.appId !== undefined && sql`app_id = ${p.appId}`,
    p.permissions !== undefined && sql`permissions = ${JSON.stringify(p.permissions)}::jsonb`,
    p.data !== undefined && sql`data = ${JSON.stringify(p.data)}::jsonb`,
  );
  const { rows } = await db.query<TypeRow>(sql`
    UPDATE interaction_types SET ${sets}
    WHERE collection_id = ${collectionId} AND id = ${id}
    RETURNING ${TYPE_COLUMNS}`);
  return rows[0];
}

export async function deleteType(db: Queryable, collectionId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    sql`DELETE FROM interaction_types WHERE collection_id = ${collectionId} AND id = ${id}`,
  );
  return rowCount > 0;
}
