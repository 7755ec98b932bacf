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

/** The collection's secret, made from `fresh` if it has none yet (one statement, race-free). */
export async function secretOf(q: Queryable, collectionId: string, fresh: string): Promise<SecretRow> {
  const { rows } = await q.query<SecretRow>(sql`
    WITH made AS (
      INSERT INTO http_task_secrets (collection_id, secret) VALUES (${collectionId}, ${fresh})
      ON CONFLICT (collection_id) DO NOTHING
      RETURNING ${COLUMNS})
    SELECT ${COLUMNS} FROM made
    UNION ALL
    SELECT ${COLUMNS} FROM http_task_secrets WHERE collection_id = ${collectionId}
    LIMIT 1`);
  return rows[0];
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
