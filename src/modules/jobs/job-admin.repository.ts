/**
 * What the API reads and changes of a collection's visible jobs: one job, the list, cancel and
 * retry. Lock order as in jobs.repository.ts: statements that change several rows lock them
 * in id order first; the others change one row.
 */
import sql, { raw } from 'sql-template-tag';
import { allOf, pageOf, type Queryable } from '../../db/index.ts';
import { COLUMNS, type JobRow, type JobStatus } from './jobs.repository.ts';

export async function findVisible(q: Queryable, collectionId: string, id: number): Promise<JobRow | undefined> {
  const { rows } = await q.query<JobRow>(
    sql`SELECT ${COLUMNS} FROM jobs WHERE collection_id = ${collectionId} AND id = ${id} AND visible`,
  );
  return rows[0];
}

export interface ListFilter {
  state?: JobStatus;
  task?: string;
  from?: string;
  to?: string;
  limit: number;
  offset: number;
}

/** The collection's visible jobs, newest first; `from`/`to` bound the creation time. */
export async function listVisible(q: Queryable, collectionId: string, f: ListFilter): Promise<JobRow[]> {
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    sql`visible`,
    f.state && sql`status = ${f.state}`,
    f.task && sql`task = ${f.task}`,
    f.from && sql`created_at >= ${f.from}::timestamptz`,
    f.to && sql`created_at < ${f.to}::timestamptz`,
  );
  return pageOf<JobRow>(q, {
    ...f,
    columns: COLUMNS,
    from: sql`FROM jobs WHERE ${where}`,
    orderBy: sql`created_at DESC, id DESC`,
  });
}

/** Cancels a pending visible job; returns the row either way so the caller can explain a refusal. */
export async function cancel(
  q: Queryable,
  collectionId: string,
  id: number,
): Promise<{ row: JobRow | undefined; cancelled: boolean }> {
  const { rows } = await q.query<JobRow>(sql`
    UPDATE jobs SET status = 'cancelled', finished_at = now(), updated_at = now()
    WHERE collection_id = ${collectionId} AND id = ${id} AND visible AND status IN ('queued', 'errored')
    RETURNING ${COLUMNS}`);
  if (rows[0]) return { row: rows[0], cancelled: true };
  return { row: await findVisible(q, collectionId, id), cancelled: false };
}

/** What a retry changes: a finished job is queued again as new (attempts, error, result reset). */
const RETRY_SET = sql`status = 'queued', attempts = 0, run_at = now(), last_error = NULL, result = NULL,
      progress = NULL, finished_at = NULL, locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()`;

/**
 * A pending job of the same collection holds the key (the unique index jobs_pending_key):
 * retrying the finished one would make two.
 */
const keyFree = (alias: string) =>
  raw(`(${alias}.key IS NULL OR NOT EXISTS (SELECT 1 FROM jobs p WHERE p.collection_id = ${alias}.collection_id
      AND p.key = ${alias}.key AND p.status IN ('queued', 'errored')))`);

/**
 * Queues a failed or cancelled visible job again. Returns the row either way (with whether it
 * was retried), so the caller can explain a refusal.
 */
export async function retry(
  q: Queryable,
  collectionId: string,
  id: number,
): Promise<{ row: JobRow | undefined; retried: boolean }> {
  const { rows } = await q.query<JobRow>(sql`
    UPDATE jobs j SET ${RETRY_SET}
    WHERE j.collection_id = ${collectionId} AND j.id = ${id} AND j.visible AND j.status IN ('failed', 'cancelled')
      AND ${keyFree('j')}
    RETURNING ${COLUMNS}`);
  if (rows[0]) return { row: rows[0], retried: true };
  return { row: await findVisible(q, collectionId, id), retried: false };
}

export interface RetryFilter {
  status: 'failed' | 'cancelled';
  task?: string;
  queueName?: string;
  /** Finished at or after. */
  from?: string;
  /** Finished before. */
  to?: string;
  limit: number;
}

const retryWhere = (collectionId: string, f: RetryFilter) =>
  allOf(
    sql`j.collection_id = ${collectionId}`,
    sql`j.visible`,
    sql`j.status = ${f.status}`,
    f.task && sql`j.task = ${f.task}`,
    f.queueName && sql`j.queue_name = ${f.queueName}`,
    f.from && sql`j.finished_at >= ${f.from}::timestamptz`,
    f.to && sql`j.finished_at < ${f.to}::timestamptz`,
  );

/**
 * Queues again up to `limit` of the collection's visible finished jobs the filter matches
 * (oldest first; locked in id order, see the top of the file; one whose key a pending job
 * holds is left). Answers the retried jobs and whether more match.
 */
export async function retryMany(
  q: Queryable,
  collectionId: string,
  f: RetryFilter,
): Promise<{ rows: { id: number; run_at: Date; queue_name: string | null }[]; more: boolean }> {
  const where = retryWhere(collectionId, f);
  const { rows } = await q.query<{ id: number; run_at: Date; queue_name: string | null }>(sql`
    WITH picked AS MATERIALIZED (
      SELECT j.collection_id, j.id FROM jobs j WHERE ${where} AND ${keyFree('j')}
        -- Of finished jobs sharing a key, the newest only: two would both become pending.
        AND (j.key IS NULL OR NOT EXISTS (SELECT 1 FROM jobs k WHERE k.collection_id = j.collection_id
          AND k.key = j.key AND k.id > j.id AND k.status = j.status AND k.visible))
      ORDER BY j.id LIMIT ${f.limit}
      FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs j SET ${RETRY_SET}
    FROM picked WHERE j.collection_id = picked.collection_id AND j.id = picked.id
    RETURNING j.id, j.run_at, j.queue_name`);
  const more = await q.query(sql`SELECT 1 FROM jobs j WHERE ${where} AND ${keyFree('j')} LIMIT 1`);
  return { rows: rows.sort((a, b) => a.id - b.id), more: more.rows.length > 0 };
}

/** Due jobs waiting for a worker, by lane and task, and when the longest-waiting one fell due. */
export interface BacklogRow {
  lane: string;
  task: string;
  due: number;
  oldest: Date;
}

/**
 * The backlog the metrics read at each scrape (jobs.metrics.ts): due jobs waiting, by lane and
 * task, counting at most `limit` of them, so that a scrape during a backlog of millions reads a
 * bounded number of rows (the depth then reads as the cap, the oldest as that of those read).
 */
export async function backlog(q: Queryable, limit: number): Promise<BacklogRow[]> {
  const { rows } = await q.query<BacklogRow>(sql`
    SELECT lane, task, count(*)::int AS due, min(run_at) AS oldest
    FROM (SELECT lane, task, run_at FROM jobs
          WHERE status IN ('queued', 'errored') AND run_at <= now() LIMIT ${limit}) AS waiting
    GROUP BY lane, task`);
  return rows;
}
