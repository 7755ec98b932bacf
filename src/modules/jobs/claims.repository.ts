/**
 * The SQL of a worker's side of the engine: claim (free jobs, taking turns between
 * collections), heartbeat, progress, finish (a completion batch, with the next claim in the
 * same statement), and release. The lock order of jobs.repository.ts holds here: several rows
 * are locked in id order, or with SKIP LOCKED.
 */
import sql, { raw, type Sql } from 'sql-template-tag';
import { type Db, prepared, type Queryable } from '../../db/index.ts';
import {
  CLAIMED_NULLS,
  CLAIMED_OF,
  type ClaimedJob,
  interval,
  type JobProgress,
  type JobStatus,
  json,
} from './jobs.repository.ts';

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
