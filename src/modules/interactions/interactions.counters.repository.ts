/**
 * SQL of the counters the service maintains itself: each interaction's total (milestones) and
 * the compaction of the striped counters the triggers keep.
 */
import sql, { raw } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';

/**
 * Adds `k` recorded events to an interaction's count and answers the count after: the row
 * stays locked until the transaction ends, so concurrent writers of one interaction each see
 * their own before and after (milestones, migration 0205). Called last in a transaction that
 * stores events, so that the lock is held only for the commit that follows.
 */
export async function addToTotal(
  db: Queryable,
  collectionId: string,
  interactionId: string,
  k: number,
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql`
    INSERT INTO interaction_totals AS t (collection_id, interaction_id, n) VALUES (${collectionId}, ${interactionId}, ${k})
    ON CONFLICT (collection_id, interaction_id) DO UPDATE SET n = t.n + excluded.n
    RETURNING n`);
  return Number(rows[0].n);
}

/**
 * The striped counter tables (migrations 0201, 0203) and their keys without the slot, in
 * primary-key order: the order their triggers lock rows in, which compaction keeps.
 */
const STRIPED = [
  { table: 'interaction_counts_hourly', key: ['collection_id', 'interaction_id', 'hour', 'app_id', 'outcome'] },
  { table: 'interaction_latest_counts', key: ['collection_id', 'id_field', 'interaction_id', 'hour', 'outcome'] },
] as const;

/**
 * Folds the slots of counter rows for hours before `before` into slot 0, and removes slot-0
 * rows that count nothing, at most `batch` rows a statement; returns the rows removed. Writers
 * spread a counter over 16 slots (by backend) so they do not queue on one row; over time every
 * hour of a busy installation holds up to 16 rows per counter, and a latest event moving on
 * leaves a -1 in its old hour's slot: the reads then sum far more rows than counters. The rows
 * are locked in key order, as the triggers lock them, and a slot's value moves in the
 * statement that deletes it, so every sum stays exact while writers go on. Spans every
 * collection: housekeeping of the server's tables, not of one tenant's data.
 */
export async function compactCounters(db: Queryable, before: Date, batch: number): Promise<number> {
  const until = before.toISOString();
  let removed = 0;
  for (const { table, key } of STRIPED) {
    const cols = raw(key.join(', '));
    const match = raw(key.map((k) => `c.${k} = v.${k}`).join(' AND '));
    for (;;) {
      const { rows } = await db.query<{ gone: number }>(sql`
        WITH victims AS (
          SELECT ${cols}, slot FROM ${raw(table)}
          WHERE hour < ${until}::timestamptz AND slot <> 0
          ORDER BY ${cols}, slot LIMIT ${batch} FOR UPDATE
        ), gone AS (
          DELETE FROM ${raw(table)} c USING victims v WHERE ${match} AND c.slot = v.slot
          RETURNING ${raw(key.map((k) => `c.${k}`).join(', '))}, c.n
        ), folded AS (
          INSERT INTO ${raw(table)} AS t (${cols}, slot, n)
          SELECT ${cols}, 0, sum(n) FROM gone GROUP BY ${cols} HAVING sum(n) <> 0 ORDER BY ${cols}
          ON CONFLICT (${cols}, slot) DO UPDATE SET n = t.n + excluded.n
        )
        SELECT count(*)::int AS gone FROM gone`);
      removed += rows[0].gone;
      if (rows[0].gone < batch) break;
    }
    const zero = await db.query(
      sql`DELETE FROM ${raw(table)} WHERE hour < ${until}::timestamptz AND slot = 0 AND n = 0`,
    );
    removed += zero.rowCount;
  }
  return removed;
}
