/**
 * The SQL of leases: an app's workers take its tasks' jobs (the `app` lane, which no engine of
 * ours claims) over HTTP, extend them, and write their outcome. A lease is the claim the engine
 * makes for itself (status running, attempts + 1, `locked_by`, `lock_expires_at`), with a lease
 * id of its own per job (`lease:<uuid>`) in `locked_by`: every later call names it, and only the
 * job's current lease is honoured. An expired lease is handed back by the engine's lock-timeout
 * sweep (`reclaimExpired`, jobs.repository.ts), whatever the lane: the attempt counts.
 *
 * Lock order (see jobs.repository.ts): the lease skips what is locked (SKIP LOCKED); every other
 * statement here changes one row.
 */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import type { JobProgress, JobStatus } from './jobs.repository.ts';

export interface LeasedRow {
  collection_id: string;
  id: number;
  task: string;
  payload: unknown;
  priority: number;
  key: string | null;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  created_at: Date;
  locked_by: string;
  lock_expires_at: Date;
  lease_seconds: number;
  /** Seconds from falling due (`run_at`) to this lease, on the database's clock (the metrics). */
  waited_seconds: number;
}

/** What a lease asks for: each task with its lease length. */
export interface Wanted {
  task: string;
  leaseSeconds: number;
}

/**
 * Leases up to `max` due jobs of the collection's `wanted` tasks, outside named queues, most
 * urgent first (priority, then due time, then id), each under a lease id of its own. Each task's
 * head is read on its own range of `jobs_app_pending` (migration 0501), so a backlog of one task
 * is never stepped over to lease another; at most `max` per task are locked (SKIP LOCKED: a
 * job another lease is taking is passed over, never waited for), the best `max` of them leased,
 * and the rest let go at commit.
 */
export async function lease(
  q: Queryable,
  lane: string,
  collectionId: string,
  wanted: Wanted[],
  max: number,
): Promise<LeasedRow[]> {
  const { rows } = await q.query<LeasedRow>(sql`
    WITH wanted AS (
      SELECT * FROM unnest(${wanted.map((w) => w.task)}::text[], ${wanted.map((w) => w.leaseSeconds)}::integer[])
        AS w(task, secs)
    ), heads AS MATERIALIZED (
      SELECT h.collection_id, h.id, h.priority, h.run_at, w.secs FROM wanted w
      CROSS JOIN LATERAL (
        SELECT j.collection_id, j.id, j.priority, j.run_at FROM jobs j
        WHERE j.collection_id = ${collectionId} AND j.task = w.task AND j.lane = ${lane}
          AND j.status IN ('queued', 'errored') AND j.queue_name IS NULL AND j.run_at <= now()
        ORDER BY j.priority DESC, j.run_at, j.id
        LIMIT ${max}
        FOR UPDATE OF j SKIP LOCKED
      ) h
    ), next AS (
      SELECT collection_id, id, secs FROM heads ORDER BY priority DESC, run_at, id LIMIT ${max}
    )
    UPDATE jobs j SET status = 'running', attempts = j.attempts + 1, locked_at = now(),
      locked_by = 'lease:' || gen_random_uuid()::text,
      lock_expires_at = now() + make_interval(secs => next.secs), updated_at = now()
    FROM next WHERE j.collection_id = next.collection_id AND j.id = next.id
    RETURNING j.collection_id, j.id, j.task, j.payload, j.priority, j.key, j.attempts, j.max_attempts, j.last_error,
      j.created_at, j.locked_by, j.lock_expires_at, next.secs AS lease_seconds,
      greatest(0, extract(epoch FROM now() - j.run_at))::float8 AS waited_seconds`);
  return rows.sort((x, y) => y.priority - x.priority || x.id - y.id);
}

/**
 * The jobs a named-queue claim just took under `claimId` (queues.repository.ts, `claimQueued`,
 * in the same transaction) become leases: each its own lease id and its task's lease length.
 */
export async function leaseClaimed(
  q: Queryable,
  collectionId: string,
  claimId: string,
  wanted: Wanted[],
): Promise<LeasedRow[]> {
  const { rows } = await q.query<LeasedRow>(sql`
    WITH wanted AS (
      SELECT * FROM unnest(${wanted.map((w) => w.task)}::text[], ${wanted.map((w) => w.leaseSeconds)}::integer[])
        AS w(task, secs)
    )
    UPDATE jobs j SET locked_by = 'lease:' || gen_random_uuid()::text,
      lock_expires_at = now() + make_interval(secs => w.secs)
    FROM wanted w
    WHERE j.collection_id = ${collectionId} AND j.locked_by = ${claimId} AND j.status = 'running' AND j.task = w.task
    RETURNING j.collection_id, j.id, j.task, j.payload, j.priority, j.key, j.attempts, j.max_attempts, j.last_error,
      j.created_at, j.locked_by, j.lock_expires_at, w.secs AS lease_seconds,
      greatest(0, extract(epoch FROM now() - j.run_at))::float8 AS waited_seconds`);
  return rows.sort((x, y) => x.id - y.id);
}

/** A job's state as far as a lease goes: why a lease was not honoured. */
export interface LeaseState {
  lane: string;
  visible: boolean;
  task: string;
  status: JobStatus;
  locked_by: string | null;
  lock_expires_at: Date | null;
  attempts: number;
  max_attempts: number;
}

export async function leaseState(q: Queryable, collectionId: string, id: number): Promise<LeaseState | undefined> {
  const { rows } = await q.query<LeaseState>(sql`
    SELECT lane, visible, task, status, locked_by, lock_expires_at, attempts, max_attempts FROM jobs
    WHERE collection_id = ${collectionId} AND id = ${id}`);
  return rows[0];
}

/**
 * The job under its current lease `leaseId`, locked for the transaction: its attempt so far;
 * undefined if that is not its lease.
 */
export async function lockLeased(
  q: Queryable,
  lane: string,
  collectionId: string,
  id: number,
  leaseId: string,
): Promise<{ attempts: number } | undefined> {
  const { rows } = await q.query<{ attempts: number }>(sql`
    SELECT attempts FROM jobs
    WHERE collection_id = ${collectionId} AND id = ${id} AND lane = ${lane} AND locked_by = ${leaseId}
      AND status = 'running'
    FOR UPDATE`);
  return rows[0];
}

/**
 * Extends the lease by `seconds` from now (and records progress when given); answers the new
 * expiry, or undefined when `leaseId` is not the job's current lease.
 */
export async function extend(
  q: Queryable,
  lane: string,
  collectionId: string,
  id: number,
  leaseId: string,
  /** Default: the task's declared leaseSeconds (60 once its declaration is gone). */
  seconds: number | undefined,
  progress?: JobProgress,
): Promise<{ lock_expires_at: Date } | undefined> {
  const { rows } = await q.query<{ lock_expires_at: Date }>(sql`
    UPDATE jobs j SET locked_at = now(),
      lock_expires_at = now() + make_interval(secs => coalesce(${seconds ?? null}::integer,
        (SELECT t.lease_seconds FROM app_tasks t WHERE t.collection_id = j.collection_id AND t.name = j.task), 60)),
      progress = coalesce(${progress ? JSON.stringify(progress) : null}::jsonb, j.progress), updated_at = now()
    WHERE j.collection_id = ${collectionId} AND j.id = ${id} AND j.lane = ${lane} AND j.locked_by = ${leaseId}
      AND j.status = 'running'
    RETURNING j.lock_expires_at`);
  return rows[0];
}

/**
 * Completes the job its lease holds (locked by `lockLeased` in the same transaction); the job is
 * read again with job-admin.repository.ts's `findVisible`.
 */
export async function complete(q: Queryable, collectionId: string, id: number, result: unknown): Promise<void> {
  await q.query(sql`
    UPDATE jobs SET status = 'completed', result = ${JSON.stringify(result ?? null)}::jsonb, finished_at = now(),
      locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()
    WHERE collection_id = ${collectionId} AND id = ${id}`);
}

/**
 * Records the failed attempt of the job its lease holds (locked by `lockLeased`): errored, to be
 * leased again at `retryAt` (not before now), or failed when its attempts are spent. Read again
 * as `complete`'s.
 */
export async function fail(
  q: Queryable,
  collectionId: string,
  id: number,
  error: string,
  retryAt: Date,
): Promise<void> {
  await q.query(sql`
    UPDATE jobs SET
      status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'errored' END,
      run_at = CASE WHEN attempts >= max_attempts THEN run_at ELSE greatest(${retryAt}::timestamptz, now()) END,
      finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
      last_error = ${error}, locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()
    WHERE collection_id = ${collectionId} AND id = ${id}`);
}

/**
 * Hands back jobs leased for a client that hung up before it got them: queued again at once,
 * the attempt not counted (it never started).
 */
export async function release(q: Queryable, collectionId: string, leaseIds: string[]): Promise<number> {
  const { rowCount } = await q.query(sql`
    WITH picked AS MATERIALIZED (
      SELECT collection_id, id FROM jobs
      WHERE collection_id = ${collectionId} AND locked_by = ANY(${leaseIds}::text[]) AND status = 'running'
      ORDER BY id
      FOR UPDATE
    )
    UPDATE jobs j SET status = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(),
      locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()
    FROM picked WHERE j.collection_id = picked.collection_id AND j.id = picked.id`);
  return rowCount;
}
