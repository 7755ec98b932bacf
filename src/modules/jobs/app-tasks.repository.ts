/** The SQL of an app's own tasks: the declarations (`app_tasks`). Their jobs' SQL is in leases.repository.ts. */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';

export interface AppTaskRow {
  collection_id: string;
  name: string;
  description: string;
  max_attempts: number;
  lease_seconds: number;
  payload_schema: unknown;
  example: unknown;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = sql`collection_id, name, description, max_attempts, lease_seconds, payload_schema, example, created_at, updated_at`;

export interface NewAppTask {
  name: string;
  description: string;
  maxAttempts: number;
  leaseSeconds: number;
  payloadSchema: unknown;
  example: unknown;
}

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

/**
 * Declares or replaces a task, unless the collection already has `limit` others: answers the
 * row and whether it is new, or undefined when the limit refused it. The collection's
 * declarations are serialised (a transaction-scoped advisory lock on the collection), so two at
 * once cannot both pass the count.
 */
export async function upsert(
  q: Queryable,
  collectionId: string,
  t: NewAppTask,
  limit: number,
): Promise<{ row: AppTaskRow; created: boolean } | undefined> {
  await q.query(sql`SELECT pg_advisory_xact_lock(hashtext('app_tasks'), hashtext(${collectionId}))`);
  const { rows } = await q.query<AppTaskRow & { created: boolean }>(sql`
    INSERT INTO app_tasks AS t (collection_id, name, description, max_attempts, lease_seconds, payload_schema, example)
    SELECT ${collectionId}, ${t.name}, ${t.description}, ${t.maxAttempts}, ${t.leaseSeconds},
      ${json(t.payloadSchema)}::jsonb, ${json(t.example)}::jsonb
    WHERE EXISTS (SELECT 1 FROM app_tasks WHERE collection_id = ${collectionId} AND name = ${t.name})
      OR (SELECT count(*) FROM app_tasks WHERE collection_id = ${collectionId}) < ${limit}
    ON CONFLICT (collection_id, name) DO UPDATE SET description = excluded.description,
      max_attempts = excluded.max_attempts, lease_seconds = excluded.lease_seconds,
      payload_schema = excluded.payload_schema, example = excluded.example, updated_at = now()
    RETURNING ${COLUMNS}, (xmax = 0) AS created`);
  if (!rows[0]) return undefined;
  const { created, ...row } = rows[0];
  return { row, created };
}

export async function list(q: Queryable, collectionId: string): Promise<AppTaskRow[]> {
  const { rows } = await q.query<AppTaskRow>(
    sql`SELECT ${COLUMNS} FROM app_tasks WHERE collection_id = ${collectionId} ORDER BY name`,
  );
  return rows;
}

export async function find(q: Queryable, collectionId: string, name: string): Promise<AppTaskRow | undefined> {
  const { rows } = await q.query<AppTaskRow>(
    sql`SELECT ${COLUMNS} FROM app_tasks WHERE collection_id = ${collectionId} AND name = ${name}`,
  );
  return rows[0];
}

/** The declarations of `names` the collection has (the lease's tasks). */
export async function findMany(q: Queryable, collectionId: string, names: string[]): Promise<AppTaskRow[]> {
  const { rows } = await q.query<AppTaskRow>(
    sql`SELECT ${COLUMNS} FROM app_tasks WHERE collection_id = ${collectionId} AND name = ANY(${names}::text[])`,
  );
  return rows;
}

export async function names(q: Queryable, collectionId: string): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(
    sql`SELECT name FROM app_tasks WHERE collection_id = ${collectionId} ORDER BY name`,
  );
  return rows.map((r) => r.name);
}

export async function remove(q: Queryable, collectionId: string, name: string): Promise<boolean> {
  const { rowCount } = await q.query(
    sql`DELETE FROM app_tasks WHERE collection_id = ${collectionId} AND name = ${name}`,
  );
  return rowCount > 0;
}
