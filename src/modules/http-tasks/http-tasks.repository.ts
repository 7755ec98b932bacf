/** All SQL of the http-tasks module: the collections' signing secrets. */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';

export interface SecretRow {
  secret: string;
  previous_secret: string | null;
  previous_until: Date | null;
  created_at: Date;
  rotated_at: Date | null;
}

const COLUMNS = sql`secret, previous_secret, previous_until, created_at, rotated_at`;

async function findSecret(q: Queryable, collectionId: string): Promise<SecretRow | undefined> {
  const { rows } = await q.query<SecretRow>(
    sql`SELECT ${COLUMNS} FROM http_task_secrets WHERE collection_id = ${collectionId}`,
  );
  return rows[0];
}

/**
 * The collection's secret, made from `fresh` if it has none yet. Three statements at most, not
 * one: when another transaction makes the secret at the same moment (a collection's first http
 * jobs start together), the INSERT waits for it to commit and then does nothing, and a SELECT
 * in the same statement still reads the snapshot from before that commit, so it finds nothing
 * either. A new statement (READ COMMITTED: a new snapshot) finds the secret made.
 */
export async function secretOf(q: Queryable, collectionId: string, fresh: string): Promise<SecretRow> {
  const found = await findSecret(q, collectionId);
  if (found) return found;
  const { rows } = await q.query<SecretRow>(sql`
    INSERT INTO http_task_secrets (collection_id, secret) VALUES (${collectionId}, ${fresh})
    ON CONFLICT (collection_id) DO NOTHING
    RETURNING ${COLUMNS}`);
  const made = rows[0] ?? (await findSecret(q, collectionId));
  if (!made)
    throw new Error(`http-task secret of collection ${collectionId}: made by another transaction, not visible`);
  return made;
}

/** Replaces the secret by `fresh`; the old one keeps signing for `graceSeconds`. */
export async function rotateSecret(
  q: Queryable,
  collectionId: string,
  fresh: string,
  graceSeconds: number,
): Promise<SecretRow> {
  const { rows } = await q.query<SecretRow>(sql`
    INSERT INTO http_task_secrets AS s (collection_id, secret) VALUES (${collectionId}, ${fresh})
    ON CONFLICT (collection_id) DO UPDATE SET
      previous_secret = s.secret,
      previous_until = now() + make_interval(secs => ${graceSeconds}),
      secret = excluded.secret,
      rotated_at = now()
    RETURNING ${COLUMNS}`);
  return rows[0];
}
