/**
 * The SQL of the engine: enqueue, claim, heartbeat, finish, release, the lock-timeout sweep
 * and retention (the API's reads and changes of single jobs are in job-admin.repository.ts,
 * named queues in queues.repository.ts, leases in leases.repository.ts).
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
import sql, { raw, type Sql } from 'sql-template-tag';
import { type Db, prepared, type Queryable } from '../../db/index.ts';

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
const CLAIMED_NULLS = raw(CLAIMED_NAMES.map((c) => `NULL AS ${c}`).join(', '));
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
 * What a claim of free jobs asks for: its lane and tasks, how many, and what fairness needs
 * (engine/fairness.ts): the collection served last, what this worker holds of each
 * collection, the most one collection may hold, and how many collections one claim looks at.
 */
export interface FairClaim {
  lane: string;
  tasks: string[];
  limit: number;
  /** The collection this worker served last ('' for none): the walk starts after it. */
  after: string;
  held: { collections: string[]; counts: number[] };
  budget: number;
  maxVisits: number;
}

/**
 * Claims up to `limit` due jobs outside named queues, taking turns between collections, that
 * no one else holds right now: `jobs_claim_fair` on the pick `jobs_pick_fair` (migration 0305).
 * Functions, not statements of this file, so that their plans do not depend on the table's
 * statistics (a sort of the whole backlog, or a sequential scan of the table for each claim,
 * otherwise; see migrations 0303 and 0304). Answers the claimed jobs.
 */
const claimFreeJobs = (workerId: string, lockTimeoutMs: number, c: FairClaim) => sql`
    SELECT * FROM jobs_claim_fair(${workerId}, ${lockTimeoutMs}::float8, ${c.lane}, ${c.tasks}::text[],
      ${c.limit}::integer, ${c.after}, ${c.held.collections}::text[], ${c.held.counts}::integer[],
      ${c.budget}::integer, ${c.maxVisits}::integer)`;

/**
 * May a worker's claim on `db` commit without waiting for the WAL flush? On a PostgreSQL
 * server, yes: a claim is not an acknowledged write, and one lost in a crash of the server only
 * queues its job again (at least once, its attempt uncounted), while the flush was about half
 * of an idle worker's pickup (a probe: 1.1–2.0 ms before, 0.8–0.9 ms after;
 * docs/benchmarks.md). On embedded PGlite, no: the database dies with the worker's process, so
 * every crash of a worker would lose its claims, and a job that kills its worker would never
 * run out of attempts.
 */
export const claimsCommitAsync = (db: Db): boolean => db.kind === 'postgres';

/**
 * Claims due jobs outside named queues (see FairClaim). Safe under any number of concurrent
 * workers. With `asyncCommit` (see claimsCommitAsync) its commit does not wait for the WAL
 * flush (`synchronous_commit` off for its transaction); on the db only: inside a caller's
 * transaction it would make that whole transaction's commit asynchronous. The completion
 * batch's claim (`completeAndClaim`) always waits: it commits outcomes.
 */
export async function claimFree(
  q: Queryable,
  workerId: string,
  lockTimeoutMs: number,
  claim: FairClaim,
  o: { asyncCommit: boolean },
): Promise<ClaimedJob[]> {
  const statement = claimFreeJobs(workerId, lockTimeoutMs, claim);
  const { rows } = await q.query<ClaimedJob>(
    o.asyncCommit
      ? prepared(
          'jobs.claimFree.async',
          sql`WITH async_commit AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true))
            SELECT claimed.* FROM async_commit, (${statement}) AS claimed`,
        )
      : prepared('jobs.claimFree', statement),
  );
  return rows;
}

/**
 * When the earliest pending job due after `after` falls due (epoch ms), if there is one. Only
 * jobs due after they were made (`run_at > created_at`, the predicate of `jobs_due`, 0504):
 * a job due when it was made and made after `after` is announced by its insert's NOTIFY.
 */
export async function nextDue(q: Queryable, after: Date): Promise<number | undefined> {
  const { rows } = await q.query<{ due: number | null }>(sql`
    SELECT (extract(epoch FROM min(run_at)) * 1000)::float8 AS due FROM jobs
    WHERE status IN ('queued', 'errored') AND run_at > created_at AND run_at > ${after}::timestamptz`);
  return rows[0]?.due ?? undefined;
}

/**
 * `UPDATE jobs … SET <set>` on the rows `pick` selects (a `SELECT collection_id, id FROM
 * jobs …` without ordering), locked in id order first; returns the ids updated. With
 * `skipLocked` a row another transaction holds is left out instead of waited for.
 */
async function updateInIdOrder(q: Queryable, pick: Sql, set: Sql, o: { skipLocked?: boolean } = {}): Promise<number[]> {
  const { rows } = await q.query<{ id: number }>(sql`
    WITH picked AS MATERIALIZED (
      ${pick}
      ORDER BY id
      FOR UPDATE ${raw(o.skipLocked ? 'SKIP LOCKED' : '')}
    )
    UPDATE jobs j SET ${set}
    FROM picked WHERE j.collection_id = picked.collection_id AND j.id = picked.id
    RETURNING j.id`);
  return rows.map((r) => r.id);
}

/**
 * Heartbeat: the worker is alive; the claims it is working on stay its own for another lock
 * timeout. Only the ids it names: a claim this worker holds without knowing it (the claim
 * committed but its answer was lost with the connection) must expire, not live forever. A
 * claim locked right now (its completion being written) is skipped: it is ending, or the next
 * beat extends it.
 */
export async function touchLocks(q: Queryable, workerId: string, ids: number[], lockTimeoutMs: number): Promise<void> {
  if (ids.length === 0) return;
  await updateInIdOrder(
    q,
    sql`SELECT collection_id, id FROM jobs WHERE locked_by = ${workerId} AND status = 'running' AND id = ANY(${ids}::bigint[])`,
    sql`locked_at = now(), lock_expires_at = now() + ${interval(lockTimeoutMs)}`,
    { skipLocked: true },
  );
}

export async function setProgress(
  q: Queryable,
  collectionId: string,
  id: number,
  workerId: string,
  progress: JobProgress,
): Promise<void> {
  await q.query(sql`
    UPDATE jobs SET progress = ${json(progress)}::jsonb, updated_at = now()
    WHERE collection_id = ${collectionId} AND id = ${id} AND locked_by = ${workerId} AND status = 'running'`);
}

export interface Completion {
  collectionId: string;
  id: number;
  result: unknown;
  progress: JobProgress | null;
}

/**
 * Records a batch of successes (`jobs_complete`, migration 0304, for the same reason as the
 * claim): the rows this worker still holds are locked in id order, then completed; answers
 * the ids recorded.
 */
const completeJobs = (workerId: string, done: Completion[]) => sql`
    SELECT id FROM jobs_complete(${workerId}, ${JSON.stringify(done)}::jsonb)`;

/**
 * Records successes, several in one statement. Returns the ids recorded; a missing one had
 * lost its claim (lock timed out and another worker took it), and its outcome is dropped.
 */
export async function completeMany(q: Queryable, workerId: string, done: Completion[]): Promise<Set<number>> {
  // The batch's rows are locked in id order before any is changed (see the top of the file):
  // the completions arrive in the order the jobs finished, the heartbeat takes them by id.
  const { rows } = await q.query<{ id: number }>(prepared('jobs.completeMany', completeJobs(workerId, done)));
  return new Set(rows.map((r) => r.id));
}

/**
 * Records successes and claims up to `limit` due jobs outside named queues, in one statement
 * and one commit: a worker whose jobs finish together frees their slots and fills them again
 * in one round trip. The two halves touch different rows (running ones of this worker;
 * queued or errored ones), and only the first waits for locks (in id order, as
 * `completeMany`); the claim skips what is locked, so the statement adds no lock cycle.
 * Atomic: if it fails, neither the completions nor the claims happened.
 */
export async function completeAndClaim(
  q: Queryable,
  workerId: string,
  done: Completion[],
  lockTimeoutMs: number,
  claim: FairClaim,
): Promise<{ completed: Set<number>; claimed: ClaimedJob[] }> {
  const { rows } = await q.query<ClaimedJob & { completed_id: number | null }>(
    prepared(
      'jobs.completeAndClaim',
      sql`
    WITH completed AS MATERIALIZED (${completeJobs(workerId, done)}),
    claimed AS MATERIALIZED (${claimFreeJobs(workerId, lockTimeoutMs, claim)})
    SELECT completed.id AS completed_id, ${CLAIMED_NULLS} FROM completed
    UNION ALL
    SELECT NULL::bigint, ${CLAIMED_OF('claimed')} FROM claimed`,
    ),
  );
  const completed = new Set<number>();
  const claimed: ClaimedJob[] = [];
  for (const { completed_id, ...row } of rows) {
    if (completed_id !== null) completed.add(completed_id);
    else claimed.push(row);
  }
  return { completed, claimed };
}

/** Records a failed attempt: errored (retry after `delayMs`) or failed (attempts exhausted). */
export async function fail(
  q: Queryable,
  collectionId: string,
  id: number,
  workerId: string,
  error: string,
  delayMs: number,
  progress: JobProgress | null,
): Promise<{ status: JobStatus; run_at: Date } | undefined> {
  const { rows } = await q.query<{ status: JobStatus; run_at: Date }>(sql`
    UPDATE jobs SET
      status = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'errored' END,
      run_at = CASE WHEN attempts >= max_attempts THEN run_at
                    ELSE now() + make_interval(secs => ${delayMs / 1000}::double precision) END,
      finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
      last_error = ${error}, progress = coalesce(${json(progress)}::jsonb, progress),
      locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()
    WHERE collection_id = ${collectionId} AND id = ${id} AND locked_by = ${workerId} AND status = 'running'
    RETURNING status, run_at`);
  return rows[0];
}

/**
 * Gives back claims a stopping worker could not finish: queued again at once, and the
 * interrupted attempt is not counted against the job. `ids` limits it to some jobs.
 */
export async function release(q: Queryable, workerId: string, ids?: number[]): Promise<number> {
  const only = ids ? sql`AND id = ANY(${ids}::bigint[])` : sql``;
  return releaseWhere(q, workerId, only);
}

/**
 * Claims of this worker that it is not working on: a claim whose statement committed while the
 * connection carrying its answer died. Queued again at once, attempt not counted (it never ran).
 */
export async function releaseAllBut(q: Queryable, workerId: string, keep: number[]): Promise<number> {
  return releaseWhere(q, workerId, sql`AND NOT (id = ANY(${keep}::bigint[]))`);
}

async function releaseWhere(q: Queryable, workerId: string, only: Sql): Promise<number> {
  const released = await updateInIdOrder(
    q,
    sql`SELECT collection_id, id FROM jobs WHERE locked_by = ${workerId} AND status = 'running' ${only}`,
    sql`status = 'queued', attempts = greatest(j.attempts - 1, 0), run_at = now(),
      locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()`,
  );
  return released.length;
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
