/**
 * SQL of a delivery attempt (delivery.ts): loading the work of many attempts at once, the
 * registration's backoff turn, attempts put off, and recording how attempts ended (successes in
 * one statement, a failure, a delivery failed for good). The lock order is the module's
 * (webhooks.repository.ts, at the top): a registration's row before any of its deliveries, and
 * deliveries in id order.
 */
import sql, { type Sql } from 'sql-template-tag';
import { prepared, type Queryable } from '../../db/index.ts';
import { DELIVERY_COLUMNS, type DeliveryRow, type WebhookRow } from './webhooks.repository.ts';

/** Locks the registration a delivery belongs to (first, as the lock order wants). */
export async function lockWebhookOfDelivery(db: Queryable, collectionId: string, deliveryId: string): Promise<void> {
  await db.query(sql`
    SELECT w.id FROM webhooks w
    JOIN webhook_deliveries d ON d.collection_id = w.collection_id AND d.webhook_id = w.id
    WHERE d.collection_id = ${collectionId} AND d.id = ${deliveryId}
    FOR NO KEY UPDATE OF w`);
}

/** What one attempt needs: the delivery, its event's body, its registration. */
export interface DeliveryWork {
  delivery: DeliveryRow;
  body: string;
  webhook: Pick<WebhookRow, 'url' | 'secret' | 'active'> & {
    /** The rotated-out secret while its grace period lasts, else null. */
    previousSecret: string | null;
    /** Failed attempts counted for the backoff: above 0, attempts go through it (delivery.ts). */
    failures: number;
    /** Attempts a second at most (per worker process), or null. */
    maxPerSecond: number | null;
  };
}

/**
 * The work of many attempts in one query (the deliveries lane loads what one event-loop turn
 * of its handlers asked for together, delivery.ts); answers those found, by delivery id.
 */
export async function loadDeliveryWorks(
  db: Queryable,
  collectionId: string,
  deliveryIds: string[],
): Promise<Map<string, DeliveryWork>> {
  const found = new Map<string, DeliveryWork>();
  if (deliveryIds.length === 0) return found;
  const { rows } = await db.query<
    DeliveryRow & {
      body: string;
      w_url: string;
      w_secret: string;
      w_previous: string | null;
      w_active: boolean;
      w_failures: number;
      w_max_per_second: number | null;
    }
  >(
    // Prepared: it runs for every turn's attempts, and with a `link.clicked` subscriber each
    // click is one. Under redirect load it and the successes' record below were half of
    // PostgreSQL's time a click, a third of it planning (pg_stat_statements). Its generic plan
    // keeps a primary-key lookup per table however small the tables were when it was made.
    prepared(
      'webhooks.loadDeliveryWorks',
      sql`
    SELECT ${DELIVERY_COLUMNS}, e.body, w.url AS w_url, w.secret AS w_secret, w.active AS w_active,
      w.attempt_failures AS w_failures, w.max_per_second AS w_max_per_second,
      CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS w_previous
    FROM unnest(${deliveryIds}::text[]) AS k (id)
    -- One primary-key lookup per id (LATERAL runs it per row): with \`d.id = ANY(...)\` the planner
    -- read the whole backlog (a sequential scan of 20,000 deliveries to find 200), a cost that
    -- grew with the backlog the batch was draining.
    CROSS JOIN LATERAL (
      -- OFFSET 0 keeps the planner from flattening it back into a join.
      SELECT * FROM webhook_deliveries d0 WHERE d0.collection_id = ${collectionId} AND d0.id = k.id OFFSET 0
    ) d
    JOIN webhook_events e ON e.collection_id = d.collection_id AND e.id = d.event_id
    JOIN webhooks w ON w.collection_id = d.collection_id AND w.id = d.webhook_id`,
    ),
  );
  for (const r of rows) {
    const { body, w_url, w_secret, w_previous, w_active, w_failures, w_max_per_second, ...delivery } = r;
    found.set(delivery.id, {
      delivery,
      body,
      webhook: {
        url: w_url,
        secret: w_secret,
        previousSecret: w_previous,
        active: w_active,
        failures: w_failures,
        maxPerSecond: w_max_per_second,
      },
    });
  }
  return found;
}

/**
 * The rest of this transaction commits without waiting for its WAL to reach the disk (a crash
 * may lose it, never corrupt anything): for records whose loss only repeats work.
 */
export async function commitWithoutFlush(tx: Queryable): Promise<void> {
  await tx.query('SET LOCAL synchronous_commit = off');
}

/** A failing registration's backoff settings (delivery.ts): the first period and the cap, ms. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/** The backoff period after `failures` counted failures: base × 2^(failures − 1), capped. */
const backoffPeriod = (b: Backoff, failures: Sql) =>
  sql`make_interval(secs => least(${b.baseMs}::float8 * power(2, least(greatest(${failures}, 1) - 1, 40)), ${b.maxMs}::float8) / 1000)`;

/**
 * A failing registration's next attempt: taken (true) when its backoff has passed, which holds
 * every other attempt back for one more period; otherwise answers when the backoff ends. One
 * statement, so two workers never both take it.
 */
export async function takeBackoffTurn(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  backoff: Backoff,
): Promise<{ taken: true } | { taken: false; until: Date }> {
  const { rows } = await db.query<{ taken: boolean; until: Date | null }>(sql`
    WITH turn AS (
      UPDATE webhooks SET backoff_until = now() + ${backoffPeriod(backoff, sql`attempt_failures`)}
      WHERE collection_id = ${collectionId} AND id = ${webhookId} AND (backoff_until IS NULL OR backoff_until <= now())
      RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM turn) AS taken,
      (SELECT backoff_until FROM webhooks WHERE collection_id = ${collectionId} AND id = ${webhookId}) AS until`);
  const r = rows[0];
  return r.taken || r.until === null ? { taken: true } : { taken: false, until: r.until };
}

/**
 * Attempts put off, each to its `runAt` (its registration backing off, at its in-flight limit or
 * at its rate): each delivery shows when its attempt will be made. Answers the deliveries that
 * still wait for that attempt (the others were made or ended meanwhile: nothing to queue).
 * Deliveries are locked in id order (the module's lock order).
 */
export async function deferAttempts(
  db: Queryable,
  collectionId: string,
  items: { deliveryId: string; attempt: number; runAt: Date }[],
): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(sql`
    WITH a AS (
      SELECT * FROM unnest(${items.map((i) => i.deliveryId)}::text[], ${items.map((i) => i.attempt)}::int[],
        ${items.map((i) => i.runAt.toISOString())}::timestamptz[]) AS a (delivery_id, attempt, run_at)
    ), locked AS MATERIALIZED (
      SELECT d.id, a.run_at FROM webhook_deliveries d JOIN a ON a.delivery_id = d.id
      WHERE d.collection_id = ${collectionId} AND d.status = 'pending' AND d.attempt_count = a.attempt - 1
      ORDER BY d.id
      FOR UPDATE OF d
    )
    UPDATE webhook_deliveries d SET next_attempt_at = locked.run_at, updated_at = now()
    FROM locked WHERE d.collection_id = ${collectionId} AND d.id = locked.id
    RETURNING d.id`);
  return new Set(rows.map((r) => r.id));
}

/** A successful attempt to record (recordSuccessfulAttempts). */
export interface SuccessfulAttempt {
  deliveryId: string;
  attempt: number;
  trigger: string;
  startedAt: Date;
  durationMs: number;
  statusCode: number;
  responseExcerpt: string | null;
}

/**
 * Records successful attempts in one statement (the hot path; delivery.ts gathers those that
 * end in one event-loop turn): each attempt row, each delivery's final state, and the failure
 * count reset of their registrations. Nothing is written for a delivery no longer waiting for
 * that attempt (a duplicate or stale job). Answers the deliveries recorded. One attempt per
 * delivery in a call (the caller keeps the first).
 *
 * Lock order: registrations whose count needs a reset are locked (`w0`, in id order) before
 * any delivery; the deliveries are then locked in id order (`locked`). `w0` is read by an
 * uncorrelated condition of `locked`, which the planner runs once, before `locked` reads its
 * first row. With the counts at 0 (the usual case) no registration lock is taken at all.
 */
export async function recordSuccessfulAttempts(
  db: Queryable,
  collectionId: string,
  attempts: SuccessfulAttempt[],
): Promise<Set<string>> {
  if (attempts.length === 0) return new Set();
  const col = <K extends keyof SuccessfulAttempt>(k: K) => attempts.map((a) => a[k]);
  // Not prepared (unlike loadDeliveryWorks): a generic plan made while the deliveries were few
  // updates them by scanning the collection's deliveries instead of by the locked rows'
  // addresses, and keeps doing so as they grow (measured: 648 µs of PostgreSQL a click against
  // 38 with a plan per call).
  const { rows } = await db.query<{ id: string }>(sql`
    WITH a AS (
      SELECT * FROM unnest(${col('deliveryId')}::text[], ${col('attempt')}::int[], ${col('trigger')}::text[],
        ${attempts.map((a) => a.startedAt.toISOString())}::timestamptz[], ${col('durationMs')}::int[],
        ${col('statusCode')}::int[], ${col('responseExcerpt')}::text[])
        AS a (delivery_id, attempt, trigger, started_at, duration_ms, status_code, response_excerpt)
    ), w0 AS MATERIALIZED (
      SELECT w.id FROM webhooks w
      WHERE w.collection_id = ${collectionId} AND (w.consecutive_failures <> 0 OR w.attempt_failures <> 0)
        AND w.id IN (
          SELECT d.webhook_id FROM webhook_deliveries d JOIN a ON a.delivery_id = d.id
          WHERE d.collection_id = ${collectionId})
      ORDER BY w.id
      FOR NO KEY UPDATE
    ), locked AS MATERIALIZED (
      -- Driven by the batch, one primary-key lookup each (LATERAL), in id order (the lock order):
      -- a join let the planner hash the whole backlog for every batch (6 ms for 200 of 20,000).
      SELECT l.id, l.ctid AS tid FROM (SELECT * FROM a WHERE (SELECT count(*) FROM w0) >= 0 ORDER BY delivery_id) a
      CROSS JOIN LATERAL (
        SELECT d.id, d.ctid FROM webhook_deliveries d
        WHERE d.collection_id = ${collectionId} AND d.id = a.delivery_id
          AND d.status = 'pending' AND d.attempt_count = a.attempt - 1
        FOR UPDATE
      ) l
    ), d AS (
      UPDATE webhook_deliveries d SET status = 'succeeded', attempt_count = a.attempt, next_attempt_at = NULL,
        last_status_code = a.status_code, last_error = NULL, updated_at = now()
      FROM a
      -- The rows just locked, by their physical address (a TID scan; they cannot move while locked).
      WHERE d.ctid = ANY (ARRAY(SELECT tid FROM locked))
        AND d.collection_id = ${collectionId} AND a.delivery_id = d.id
        AND d.status = 'pending' AND d.attempt_count = a.attempt - 1
      RETURNING d.id, d.webhook_id
    ), ins AS (
      INSERT INTO webhook_attempts (collection_id, delivery_id, attempt, webhook_id, trigger, started_at, duration_ms,
        status_code, outcome, response_excerpt)
      SELECT ${collectionId}, d.id, a.attempt, d.webhook_id, a.trigger, a.started_at, a.duration_ms,
        a.status_code, 'succeeded', a.response_excerpt
      FROM d JOIN a ON a.delivery_id = d.id
      ON CONFLICT DO NOTHING
    ), w AS (
      UPDATE webhooks SET consecutive_failures = 0, attempt_failures = 0, backoff_until = NULL
      WHERE collection_id = ${collectionId} AND id IN (SELECT id FROM w0) AND id IN (SELECT webhook_id FROM d)
    )
    SELECT id FROM d`);
  return new Set(rows.map((r) => r.id));
}

export async function insertAttempt(
  db: Queryable,
  collectionId: string,
  a: {
    deliveryId: string;
    webhookId: string;
    attempt: number;
    trigger: string;
    startedAt: Date;
    durationMs: number;
    statusCode: number | null;
    outcome: string;
    error: string | null;
    responseExcerpt: string | null;
  },
): Promise<void> {
  await db.query(sql`
    INSERT INTO webhook_attempts (collection_id, delivery_id, attempt, webhook_id, trigger, started_at, duration_ms,
      status_code, outcome, error, response_excerpt)
    VALUES (${collectionId}, ${a.deliveryId}, ${a.attempt}, ${a.webhookId}, ${a.trigger}, ${a.startedAt}, ${a.durationMs},
      ${a.statusCode}, ${a.outcome}, ${a.error}, ${a.responseExcerpt})
    ON CONFLICT DO NOTHING`);
}

/**
 * Counts a failed attempt for the backoff (`attempt_failures`). With the backoff on
 * (`baseMs` > 0), a failure counts once per round: the first failure, or the attempt that
 * took the turn after a backoff (`turn`); it then holds the next attempts back for
 * `baseMs` × 2^(count − 1), at most `maxMs`. Attempts that failed alongside it, while a backoff
 * already runs, are logged but not counted again. Disabling counts deliveries, not attempts
 * (`recordFailedDelivery`). The caller holds the registration's row.
 */
export async function recordFailedAttempt(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  backoff: Backoff & { turn: boolean },
): Promise<{ active: boolean } | undefined> {
  const { rows } = await db.query<{ active: boolean }>(sql`
    WITH c AS (
      SELECT id, attempt_failures + CASE WHEN counted THEN 1 ELSE 0 END AS n, counted
      FROM (
        SELECT id, attempt_failures,
          (${backoff.turn} OR ${backoff.baseMs}::float8 <= 0 OR backoff_until IS NULL OR backoff_until <= now()) AS counted
        FROM webhooks WHERE collection_id = ${collectionId} AND id = ${webhookId}
      ) s
    )
    UPDATE webhooks w SET
      attempt_failures = c.n,
      backoff_until = CASE
        WHEN NOT c.counted THEN w.backoff_until
        WHEN ${backoff.baseMs}::float8 > 0 THEN now() + ${backoffPeriod(backoff, sql`c.n`)}
        END
    FROM c
    WHERE w.collection_id = ${collectionId} AND w.id = c.id
    RETURNING w.active`);
  return rows[0];
}

/** A registration after a failed delivery was counted: enough for `webhook.disabled`. */
export type AfterFailedDelivery = Pick<
  WebhookRow,
  'active' | 'consecutive_failures' | 'url' | 'disabled_at' | 'disabled_reason'
>;

/**
 * Counts one more failed delivery (its last automatic retry failed), and disables the
 * registration when the count reaches `limit`. The caller holds the registration's row.
 */
export async function recordFailedDelivery(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  limit: number,
  reason: string,
): Promise<AfterFailedDelivery | undefined> {
  const { rows } = await db.query<AfterFailedDelivery>(sql`
    UPDATE webhooks SET
      consecutive_failures = consecutive_failures + 1,
      active = CASE WHEN consecutive_failures + 1 >= ${limit} THEN false ELSE active END,
      disabled_at = CASE WHEN consecutive_failures + 1 >= ${limit} AND active THEN now() ELSE disabled_at END,
      disabled_reason = CASE WHEN consecutive_failures + 1 >= ${limit} AND active THEN ${reason} ELSE disabled_reason END,
      updated_at = CASE WHEN consecutive_failures + 1 >= ${limit} AND active THEN now() ELSE updated_at END
    WHERE collection_id = ${collectionId} AND id = ${webhookId}
    RETURNING active, consecutive_failures, url, disabled_at, disabled_reason`);
  return rows[0];
}
