/**
 * The SQL of named queues: their claim (with flow control) and their settings (`job_queues`,
 * migration 0503). A queue exists while it has jobs; a row in `job_queues` only changes its
 * defaults (one at a time, no rate, running).
 *
 * The claim (engine/claimer.ts, "Named queues"): a queue's claimable jobs are its first
 * `concurrency` pending jobs in enqueue order, less those running, and of those the ones due;
 * a paused queue has none; a rate-limited queue no more than its pace allows now (a GCRA on
 * `next_start_at`: the theoretical time of its next start; `burst` starts, a tenth of a
 * second's worth and at least one, may go together; a claim late by less than one interval
 * keeps the grid, so the lag of wake-ups does not slow the pace). The statement advances the pace of the
 * queues it took jobs from. Callers hold QUEUE_CLAIM_LOCK for the transaction: with the lock
 * taken first, the statement's snapshot sees every earlier queue claim as committed, so no
 * two workers start more of one queue than its concurrency allows, or faster than its rate.
 */
import sql, { raw } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import { CLAIMED_OF, type ClaimedJob, interval } from './jobs.repository.ts';

export const QUEUE_CLAIM_LOCK = 727_011_300;

export async function lockQueueClaims(q: Queryable): Promise<void> {
  await q.query(sql`SELECT pg_advisory_xact_lock(${QUEUE_CLAIM_LOCK})`);
}

/** Starts a rate-limited queue may make at once: a tenth of a second's worth, at least one. */
const BURST = (s: string) => raw(`greatest(1, ceil(${s}.rate_per_second / 10))`);

/**
 * How many jobs of each queue with due work may start now: its concurrency less those
 * running, and for a rate-limited queue no more than its pace allows (tokens: `burst` less
 * the starts its pace is ahead of now by).
 */
const roomOfQueues = (only: { tasks: string[]; collectionId?: string }) => sql`
    queues AS (
      SELECT DISTINCT j.collection_id, j.queue_name FROM jobs j
      WHERE j.queue_name IS NOT NULL AND j.status IN ('queued', 'errored') AND j.run_at <= now()
        AND j.task = ANY(${only.tasks}::text[])
        ${only.collectionId === undefined ? sql`` : sql`AND j.collection_id = ${only.collectionId}`}
    ),
    room AS (
      SELECT q.collection_id, q.queue_name, greatest(0, least(
        coalesce(s.concurrency, 1) - (
          SELECT count(*) FROM jobs r
          WHERE r.collection_id = q.collection_id AND r.queue_name = q.queue_name AND r.status = 'running'),
        CASE WHEN s.rate_per_second IS NULL THEN 1000
          ELSE floor(${BURST('s')} - extract(epoch FROM greatest(coalesce(s.next_start_at, now()), now()) - now())
            * s.rate_per_second) END
      ))::integer AS room
      FROM queues q LEFT JOIN job_queues s ON s.collection_id = q.collection_id AND s.name = q.queue_name
      WHERE s.paused IS NOT TRUE
    )`;

/**
 * Claims up to `limit` due jobs of named queues (see the top of the file) for `workerId`,
 * locked for `lockMs`: of the given tasks, and of one collection when `collectionId` is given
 * (an app's workers leasing over HTTP). Heads of different queues go by due time: a priority
 * orders its own collection's work only.
 */
export async function claimQueued(
  q: Queryable,
  workerId: string,
  lockMs: number,
  only: { tasks: string[]; collectionId?: string },
  limit: number,
): Promise<ClaimedJob[]> {
  const { rows } = await q.query<ClaimedJob>(sql`
    WITH ${roomOfQueues(only)},
    next AS (
      SELECT j.collection_id, j.id, j.queue_name FROM room
      CROSS JOIN LATERAL (
        SELECT w.id, w.run_at, w.task FROM jobs w
        WHERE w.collection_id = room.collection_id AND w.queue_name = room.queue_name
          AND w.status IN ('queued', 'errored')
        ORDER BY w.id LIMIT room.room
      ) head
      JOIN jobs j ON j.collection_id = room.collection_id AND j.id = head.id
      WHERE head.run_at <= now() AND head.task = ANY(${only.tasks}::text[])
      ORDER BY head.run_at, head.id
      LIMIT ${limit}
      FOR UPDATE OF j SKIP LOCKED
    ),
    -- The end of a claim: what "running" writes. Its twin for free jobs is jobs_claim_fair
    -- (migration 0305): a change here goes in both.
    claimed AS (
      UPDATE jobs j SET status = 'running', attempts = j.attempts + 1, locked_at = now(), locked_by = ${workerId},
        lock_expires_at = now() + ${interval(lockMs)}, updated_at = now()
      FROM next WHERE j.collection_id = next.collection_id AND j.id = next.id
      RETURNING ${CLAIMED_OF('j')}
    ),
    paced AS (
      UPDATE job_queues s
      -- From the planned time when this claim is late by less than one interval (the pace keeps
      -- its grid: a wake-up's lag is not added to every start), else from now (an idle queue
      -- does not bank starts).
      SET next_start_at = CASE
          WHEN s.next_start_at >= now() - make_interval(secs => 1 / s.rate_per_second) THEN s.next_start_at
          ELSE now() END
        + make_interval(secs => c.started / s.rate_per_second)
      FROM (SELECT collection_id, queue_name, count(*)::float8 AS started FROM claimed GROUP BY 1, 2) c
      WHERE s.collection_id = c.collection_id AND s.name = c.queue_name AND s.rate_per_second IS NOT NULL
    )
    SELECT * FROM claimed`);
  return rows;
}

/**
 * Any due pending job in a named queue at all (of one lane and collection, when given: an app's
 * lease)? Lets a claim skip the queue claim and its lock when there is none.
 */
export async function hasQueuedInQueues(
  q: Queryable,
  only: { lane: string; collectionId: string } | undefined = undefined,
): Promise<boolean> {
  const { rows } = await q.query<{ one: number }>(sql`
    SELECT 1 AS one FROM jobs WHERE queue_name IS NOT NULL AND status IN ('queued', 'errored') AND run_at <= now()
      ${only === undefined ? sql`` : sql`AND collection_id = ${only.collectionId} AND lane = ${only.lane}`}
    LIMIT 1`);
  return rows.length > 0;
}

/**
 * When the earliest rate-limited queue with pending jobs may start one again (epoch ms), if
 * its pace holds it back now: the claimer's timer wakes for it.
 */
export async function nextPacedStart(q: Queryable): Promise<number | undefined> {
  const { rows } = await q.query<{ due: number | null }>(sql`
    SELECT (extract(epoch FROM min(s.next_start_at
      - make_interval(secs => (${BURST('s')} - 1) / s.rate_per_second))) * 1000)::float8 AS due
    FROM job_queues s
    WHERE s.rate_per_second IS NOT NULL AND NOT s.paused AND s.next_start_at > now()
      AND EXISTS (SELECT 1 FROM jobs j WHERE j.collection_id = s.collection_id AND j.queue_name = s.name
        AND j.status IN ('queued', 'errored'))`);
  return rows[0]?.due ?? undefined;
}

export interface QueueRow {
  name: string;
  concurrency: number;
  rate_per_second: number | null;
  paused: boolean;
  /** Pending: queued, or errored and waiting for a retry. */
  pending: number;
  /** Due now among the pending. */
  due: number;
  running: number;
  /** Jobs of the queue that finished in the last minute (completed or failed). */
  finished_last_minute: number;
  failed_last_minute: number;
  oldest_pending_at: Date | null;
}

/**
 * The collection's queues: those with unfinished jobs or settings of their own, by name,
 * with their depth. `name` narrows to one.
 */
export async function listQueues(
  q: Queryable,
  collectionId: string,
  o: { name?: string; limit: number; offset: number },
): Promise<QueueRow[]> {
  const { rows } = await q.query<QueueRow>(sql`
    WITH live AS (
      SELECT queue_name AS name,
        count(*) FILTER (WHERE status IN ('queued', 'errored'))::int AS pending,
        count(*) FILTER (WHERE status IN ('queued', 'errored') AND run_at <= now())::int AS due,
        count(*) FILTER (WHERE status = 'running')::int AS running,
        min(created_at) FILTER (WHERE status IN ('queued', 'errored')) AS oldest_pending_at
      FROM jobs
      -- Visible jobs only: the service's own queues (\`<task>:<id>\`) are not the tenant's to see.
      WHERE collection_id = ${collectionId} AND queue_name IS NOT NULL AND status IN ('queued', 'errored', 'running')
        AND visible
        ${o.name === undefined ? sql`` : sql`AND queue_name = ${o.name}`}
      GROUP BY queue_name
    ),
    names AS (
      SELECT name FROM live
      UNION
      SELECT name FROM job_queues WHERE collection_id = ${collectionId}
        ${o.name === undefined ? sql`` : sql`AND name = ${o.name}`}
    ),
    page AS (SELECT name FROM names ORDER BY name LIMIT ${o.limit} OFFSET ${o.offset})
    SELECT page.name, coalesce(s.concurrency, 1) AS concurrency, s.rate_per_second, coalesce(s.paused, false) AS paused,
      coalesce(live.pending, 0) AS pending, coalesce(live.due, 0) AS due, coalesce(live.running, 0) AS running,
      live.oldest_pending_at,
      coalesce(done.finished, 0) AS finished_last_minute, coalesce(done.failed, 0) AS failed_last_minute
    FROM page
    LEFT JOIN live ON live.name = page.name
    LEFT JOIN job_queues s ON s.collection_id = ${collectionId} AND s.name = page.name
    LEFT JOIN LATERAL (
      SELECT count(*)::int AS finished, count(*) FILTER (WHERE j.status = 'failed')::int AS failed FROM jobs j
      WHERE j.collection_id = ${collectionId} AND j.queue_name = page.name AND j.visible
        AND j.finished_at >= now() - interval '1 minute'
    ) done ON true
    ORDER BY page.name`);
  return rows;
}

export interface QueueSettings {
  concurrency?: number;
  /** null clears the rate limit. */
  ratePerSecond?: number | null;
  paused?: boolean;
}

/** Creates or changes a queue's settings; the fields not given keep their value (or default). */
export async function upsertQueue(q: Queryable, collectionId: string, name: string, s: QueueSettings): Promise<void> {
  const rate = s.ratePerSecond === undefined ? sql`job_queues.rate_per_second` : sql`${s.ratePerSecond}::float8`;
  await q.query(sql`
    INSERT INTO job_queues (collection_id, name, concurrency, rate_per_second, paused)
    VALUES (${collectionId}, ${name}, coalesce(${s.concurrency ?? null}::int, 1),
      ${s.ratePerSecond ?? null}::float8, coalesce(${s.paused ?? null}::boolean, false))
    ON CONFLICT (collection_id, name) DO UPDATE SET
      concurrency = coalesce(${s.concurrency ?? null}::int, job_queues.concurrency),
      rate_per_second = ${rate},
      paused = coalesce(${s.paused ?? null}::boolean, job_queues.paused),
      updated_at = now()`);
}
