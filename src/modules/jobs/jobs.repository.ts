/**
 * The SQL of the engine: the jobs' shape, enqueue, the lock-timeout sweep and retention (a
 * worker's claim, heartbeat, finish and release are in claims.repository.ts, the API's reads
 * and changes of single jobs in job-admin.repository.ts, named queues in queues.repository.ts,
 * leases in leases.repository.ts).
 * Times come from the database clock (`now()`), so every worker process agrees on them.
 *
 * Lock order: every statement that changes several job rows locks them first, in a CTE,
 * ordered by `id` (unique across collections: one sequence). Two such statements can then
 * never wait for each other in a cycle (a heartbeat and a completion batch of one worker,
 * a worker's completion batch and a stop's release, …); without the ORDER BY each takes its
 * rows in whatever order its plan meets them, and PostgreSQL aborts one side with a deadlock.
 * Statements that may leave a row to another (claims, heartbeat, sweeps) use SKIP LOCKED:
 * they never wait, so they cannot be part of a cycle either. Single-row statements (`fail`,
 * `setProgress`, `cancel`, `upsertJob`) hold one row and wait for nothing else.
 */
import sql, { raw } from 'sql-template-tag';
import { prepared, type Queryable } from '../../db/index.ts';

export type JobStatus = 'queued' | 'running' | 'errored' | 'completed' | 'failed' | 'cancelled';
export const JOB_STATUSES: readonly JobStatus[] = ['queued', 'running', 'errored', 'completed', 'failed', 'cancelled'];

export interface JobProgress {
  done: number;
  total?: number;
  message?: string;
}

export interface JobRow {
  collection_id: string;
  id: number;
  task: string;
  payload: unknown;
  priority: number;
  run_at: Date;
  key: string | null;
  queue_name: string | null;
  status: JobStatus;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  progress: JobProgress | null;
  result: unknown;
  visible: boolean;
  locked_at: Date | null;
  locked_by: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/**
 * What a worker needs of a job it claims: a claim answers these columns only. Parsing the
 * other ten (five timestamps among them) cost the worker about a fifth of a pickup.
 */
const CLAIMED_NAMES = [
  'collection_id',
  'id',
  'task',
  'payload',
  'priority',
  'run_at',
  'queue_name',
  'attempts',
  'max_attempts',
  'progress',
] as const satisfies readonly (keyof JobRow)[];
export type ClaimedJob = Pick<JobRow, (typeof CLAIMED_NAMES)[number]>;

/** Every column of a job: a claim's, then the rest. */
export const COLUMNS = raw(
  [
    ...CLAIMED_NAMES,
    'key',
    'status',
    'last_error',
    'result',
    'visible',
    'locked_at',
    'locked_by',
    'created_at',
    'updated_at',
    'finished_at',
  ].join(', '),
);
/**
 * A NULL for each column, named: the completion half of `completeAndClaim`'s answer has no job
 * row, and it comes first in the UNION, whose first branch names the columns.
 */
export const CLAIMED_NULLS = raw(CLAIMED_NAMES.map((c) => `NULL AS ${c}`).join(', '));
export const CLAIMED_OF = (alias: string) => raw(CLAIMED_NAMES.map((c) => `${alias}.${c}`).join(', '));

export const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
export const interval = (ms: number) => sql`make_interval(secs => ${ms / 1000}::double precision)`;

export interface NewJob {
  task: string;
  payload: unknown;
  runAt: Date | null;
  priority: number;
  key: string | null;
  queueName: string | null;
  maxAttempts: number;
  visible: boolean;
  /** The slots it runs in (the task's lane). */
  lane: string;
}

/** A job with the key of a pending job of its collection replaces that job's definition (attempts reset). */
const REPLACE_PENDING = sql`
    ON CONFLICT (collection_id, key) WHERE key IS NOT NULL AND status IN ('queued', 'errored')
    DO UPDATE SET task = excluded.task, payload = excluded.payload, run_at = excluded.run_at,
      priority = excluded.priority, queue_name = excluded.queue_name, max_attempts = excluded.max_attempts,
      visible = excluded.visible, lane = excluded.lane, status = 'queued', attempts = 0, last_error = NULL, progress = NULL,
      updated_at = now()`;

/** The engine's wake-up for the inserted job ("<due epoch ms>[:q]"), sent when its statement commits. */
const notifyOf = (channel: string) => sql`pg_notify(${channel},
      (floor(extract(epoch FROM run_at) * 1000))::bigint::text || CASE WHEN queue_name IS NULL THEN '' ELSE ':q' END)
      AS notified`;

/**
 * Inserts a job, or, when a pending (queued or errored) job of the collection has the same
 * key, replaces that job's definition and makes it fresh again (attempts reset). Without a
 * key it is a plain INSERT: the ON CONFLICT arbiter costs the server about a sixth of the
 * insert (pgbench, 16 clients, two runs: 9,600–10,200 against 11,600–12,600 inserts a second).
 * With `notifyChannel`, the statement also sends the engine's wake-up for the job.
 */
export async function upsertJob(
  q: Queryable,
  collectionId: string,
  j: NewJob,
  notifyChannel?: string,
): Promise<{ id: number; task: string; run_at: Date; key: string | null; queue_name: string | null }> {
  const { rows } = await q.query<{
    id: number;
    task: string;
    run_at: Date;
    key: string | null;
    queue_name: string | null;
  }>(
    prepared(
      `${j.key === null ? 'jobs.insert' : 'jobs.upsert'}${notifyChannel ? '.notify' : ''}`,
      sql`
    INSERT INTO jobs (collection_id, task, payload, run_at, priority, key, queue_name, max_attempts, visible, lane)
    VALUES (${collectionId}, ${j.task}, ${json(j.payload)}::jsonb, coalesce(${j.runAt}::timestamptz, now()),
      ${j.priority}, ${j.key}, ${j.queueName}, ${j.maxAttempts}, ${j.visible}, ${j.lane})
    ${j.key === null ? sql`` : REPLACE_PENDING}
    RETURNING id, task, run_at, key, queue_name${notifyChannel ? sql`, ${notifyOf(notifyChannel)}` : sql``}`,
    ),
  );
  return rows[0];
}

/**
 * Inserts several jobs in one statement (the same rule per job as `upsertJob`). Keys must be
 * unique within the batch (the engine folds repeated keys first). Answers one row per input
 * row, in input order: ids are drawn from the sequence up front, so each row is found again
 * by its id, or by its key when it replaced a pending job.
 */
export async function insertJobs(
  q: Queryable,
  collectionId: string,
  jobs: NewJob[],
): Promise<{ id: number; task: string; run_at: Date; key: string | null; queue_name: string | null }[]> {
  if (jobs.length === 0) return [];
  const input = jobs.map((j, i) => ({
    i,
    task: j.task,
    payload: j.payload ?? null,
    run_at: j.runAt?.toISOString() ?? null,
    priority: j.priority,
    key: j.key,
    queue_name: j.queueName,
    max_attempts: j.maxAttempts,
    visible: j.visible,
    lane: j.lane,
  }));
  const { rows } = await q.query<{
    i: number;
    id: number;
    task: string;
    run_at: Date;
    key: string | null;
    queue_name: string | null;
  }>(sql`
    WITH input AS MATERIALIZED (
      SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id, x.*
      FROM jsonb_to_recordset(${JSON.stringify(input)}::jsonb) AS x(i int, task text, payload jsonb,
        run_at timestamptz, priority int, key text, queue_name text, max_attempts int, visible boolean, lane text)
    ), ins AS (
      INSERT INTO jobs (collection_id, id, task, payload, run_at, priority, key, queue_name, max_attempts, visible, lane)
      SELECT ${collectionId}, id, task, payload, coalesce(run_at, now()), priority, key, queue_name, max_attempts,
        visible, lane
      FROM input ORDER BY i
      ${REPLACE_PENDING}
      RETURNING id, task, run_at, key, queue_name
    )
    SELECT input.i, ins.id, ins.task, ins.run_at, ins.key, ins.queue_name
    FROM ins JOIN input ON ins.id = input.id OR ins.key = input.key
    ORDER BY input.i`);
  return rows;
}

/**
 * Jobs whose worker stopped heart-beating (it died or lost the database) until their claim
 * expired: the attempt counts as failed; the job is retried at once, or failed if attempts
 * are spent. `lockTimeoutMs` only applies to claims that carry no expiry of their own.
 */
export async function reclaimExpired(q: Queryable, lockTimeoutMs: number): Promise<ReclaimedJob[]> {
  // Every worker sweeps: SKIP LOCKED lets concurrent sweeps share the expired rows instead of
  // queueing on (or deadlocking over) the same ones, and leaves alone a claim whose owner is
  // writing its outcome right now. Locked in id order as updateInIdOrder does; the rows are
  // answered for the job.failed events of those whose attempts are spent.
  const { rows } = await q.query<ReclaimedJob>(sql`
    WITH picked AS MATERIALIZED (
      SELECT collection_id, id FROM jobs
      WHERE status = 'running' AND coalesce(lock_expires_at, locked_at + ${interval(lockTimeoutMs)}) < now()
      ORDER BY id
      FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs j SET status = CASE WHEN j.attempts >= j.max_attempts THEN 'failed' ELSE 'errored' END,
      finished_at = CASE WHEN j.attempts >= j.max_attempts THEN now() END,
      last_error = 'The worker running this job stopped responding (lock timeout)',
      run_at = now(), locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()
    FROM picked WHERE j.collection_id = picked.collection_id AND j.id = picked.id
    RETURNING j.collection_id, j.id, j.task, j.lane, j.queue_name, j.attempts, j.max_attempts, j.status, j.last_error,
      j.finished_at, j.visible`);
  return rows;
}

/** A job the reclaim handed back, with its engine lane (`app`: an app's task, leased over HTTP). */
export type ReclaimedJob = { lane: string } & Pick<
  JobRow,
  | 'collection_id'
  | 'id'
  | 'task'
  | 'queue_name'
  | 'attempts'
  | 'max_attempts'
  | 'status'
  | 'last_error'
  | 'finished_at'
  | 'visible'
>;

/** Retention: finished jobs older than the period are removed (reads then answer 404). */
export async function deleteFinished(q: Queryable, retentionMs: number, batch = 1000): Promise<number> {
  // Every worker's retention sweep meets the same old rows: SKIP LOCKED splits them between
  // sweeps, and a statement that never waits cannot be part of a deadlock (so no ORDER BY,
  // which would sort every expired row instead of stopping after `batch` of them).
  const { rowCount } = await q.query(sql`
    WITH old AS MATERIALIZED (
      SELECT collection_id, id FROM jobs
      WHERE finished_at IS NOT NULL
        AND finished_at < now() - make_interval(secs => ${retentionMs / 1000}::double precision)
      LIMIT ${batch}
      FOR UPDATE SKIP LOCKED)
    DELETE FROM jobs j USING old WHERE j.collection_id = old.collection_id AND j.id = old.id`);
  return rowCount;
}
