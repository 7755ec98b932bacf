/**
 * All SQL of the webhooks module: registrations, the event outbox, deliveries, attempts.
 *
 * Lock order: a registration's row before any of its deliveries, and deliveries in id order.
 * Every transaction that writes both keeps to it: a disable (the row, then its pending
 * deliveries), an attempt being recorded (the row, then its delivery: `lockWebhookOfDelivery`
 * first) and the success statement. The other way round, an attempt holding its delivery
 * and waiting for the registration meets a disable holding the registration and waiting for
 * that delivery: a deadlock. Registration rows are locked FOR NO KEY UPDATE (or FOR SHARE),
 * never FOR UPDATE, so that writing deliveries (whose foreign key takes KEY SHARE on the
 * registration) is never held up by a PATCH. A DELETE takes FOR UPDATE by itself; it too
 * starts with the registration, and its cascade follows. Publishing an event holds KEY SHARE
 * on the active registrations it reads (`activeSubscriptions`), so a DELETE never removes a
 * registration between that read and the deliveries written for it.
 */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import { allOf, pageWithTotal, type Queryable, setList } from '../../db/index.ts';

export interface WebhookRow {
  collection_id: string;
  id: string;
  url: string;
  events: string[];
  /** What the registration narrows its events to (subscription filters), or null. */
  filters: WebhookFilters | null;
  active: boolean;
  description: string | null;
  /** Attempts a second at most, per worker process (delivery.ts); null: no limit. */
  max_per_second: number | null;
  secret: string;
  consecutive_failures: number;
  disabled_at: Date | null;
  disabled_reason: string | null;
  /**
   * When the secret replaced by the last rotation stops signing. That secret itself is never
   * read back through the API, and housekeeping erases it once this time has passed.
   */
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface DeliveryRow {
  collection_id: string;
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempt_count: number;
  retries_left: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  total?: number;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  trigger: string;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  outcome: string;
  error: string | null;
  response_excerpt: string | null;
}

/** Subscription filters: each list narrows to events about one of its ids. */
export interface WebhookFilters {
  appIds?: string[];
  linkIds?: string[];
  interactionIds?: string[];
  journeyIds?: string[];
}

const WEBHOOK_COLUMNS = raw(
  'collection_id, id, url, events, filters, active, description, max_per_second, secret, consecutive_failures, disabled_at, disabled_reason, previous_secret_expires_at, created_at, updated_at',
);
const DELIVERY_COLUMNS = raw(
  'd.collection_id, d.id, d.webhook_id, d.event_id, e.type AS event_type, d.status, d.attempt_count, d.retries_left, d.next_attempt_at, d.last_status_code, d.last_error, d.created_at, d.updated_at',
);

/** What a new registration's row is given; the rest are the table's defaults. */
export type NewWebhook = Pick<
  WebhookRow,
  'id' | 'url' | 'events' | 'filters' | 'active' | 'description' | 'max_per_second' | 'secret'
>;

export async function insertWebhook(db: Queryable, collectionId: string, w: NewWebhook): Promise<WebhookRow> {
  const filters = w.filters ? JSON.stringify(w.filters) : null;
  const { rows } = await db.query<WebhookRow>(sql`
    INSERT INTO webhooks (collection_id, id, url, events, filters, active, description, max_per_second, secret)
    VALUES (${collectionId}, ${w.id}, ${w.url}, ${JSON.stringify(w.events)}::jsonb, ${filters}::jsonb, ${w.active}, ${w.description}, ${w.max_per_second}, ${w.secret})
    RETURNING ${WEBHOOK_COLUMNS}`);
  return rows[0];
}

/** Two-int advisory lock space of the registration cap (the second key: the collection). */
const REGISTRATIONS_LOCK = 727_040_001;

/**
 * Serialises creations of one collection's registrations until the transaction ends, so that
 * counting them and inserting one is atomic (two creates cannot both see room for one more).
 * Keyed on a hash of the collection id: a collision only makes two collections wait for each
 * other for a moment.
 */
export async function lockRegistrations(db: Queryable, collectionId: string): Promise<void> {
  await db.query(sql`SELECT pg_advisory_xact_lock(${REGISTRATIONS_LOCK}, hashtext(${collectionId}))`);
}

export async function countWebhooks(db: Queryable, collectionId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    sql`SELECT count(*) AS n FROM webhooks WHERE collection_id = ${collectionId}`,
  );
  return rows[0].n;
}

export async function listWebhooks(db: Queryable, collectionId: string): Promise<WebhookRow[]> {
  const { rows } = await db.query<WebhookRow>(
    sql`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE collection_id = ${collectionId} ORDER BY created_at, id`,
  );
  return rows;
}

const ROW_LOCKS = { none: '', share: 'FOR SHARE', update: 'FOR NO KEY UPDATE' } as const;

/**
 * A registration; `lock` 'update' before changing it, 'share' to keep it as read until the
 * transaction ends (see the lock order at the top).
 */
export async function findWebhook(
  db: Queryable,
  collectionId: string,
  id: string,
  lock: keyof typeof ROW_LOCKS = 'none',
): Promise<WebhookRow | undefined> {
  const { rows } = await db.query<WebhookRow>(
    sql`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE collection_id = ${collectionId} AND id = ${id} ${raw(ROW_LOCKS[lock])}`,
  );
  return rows[0];
}

/** Locks the registration a delivery belongs to (first, as the lock order wants). */
export async function lockWebhookOfDelivery(db: Queryable, collectionId: string, deliveryId: string): Promise<void> {
  await db.query(sql`
    SELECT w.id FROM webhooks w
    JOIN webhook_deliveries d ON d.collection_id = w.collection_id AND d.webhook_id = w.id
    WHERE d.collection_id = ${collectionId} AND d.id = ${deliveryId}
    FOR NO KEY UPDATE OF w`);
}

export async function updateWebhook(
  db: Queryable,
  collectionId: string,
  id: string,
  patch: {
    url?: string;
    events?: string[];
    /** null removes the filters. */
    filters?: WebhookFilters | null;
    description?: string | null;
    /** null removes the limit. */
    maxPerSecond?: number | null;
    active?: boolean;
    /** Re-enabling: clears the failure count and the disabled marks. */
    reenable?: boolean;
    /** A new secret; the replaced one keeps signing for `graceSeconds` (0: not at all). */
    rotate?: { secret: string; graceSeconds: number };
  },
): Promise<WebhookRow | undefined> {
  const sets = [sql`updated_at = now()`];
  if (patch.url !== undefined) sets.push(sql`url = ${patch.url}`);
  if (patch.events !== undefined) sets.push(sql`events = ${JSON.stringify(patch.events)}::jsonb`);
  if (patch.filters !== undefined)
    sets.push(sql`filters = ${patch.filters ? JSON.stringify(patch.filters) : null}::jsonb`);
  if (patch.description !== undefined) sets.push(sql`description = ${patch.description}`);
  if (patch.maxPerSecond !== undefined) sets.push(sql`max_per_second = ${patch.maxPerSecond}`);
  if (patch.active !== undefined) sets.push(sql`active = ${patch.active}`);
  if (patch.reenable)
    sets.push(
      sql`consecutive_failures = 0, attempt_failures = 0, backoff_until = NULL, disabled_at = NULL, disabled_reason = NULL`,
    );
  if (patch.rotate) {
    // Right-hand sides see the row as it was: previous_secret takes the secret being replaced.
    const { secret, graceSeconds } = patch.rotate;
    sets.push(
      graceSeconds > 0
        ? sql`previous_secret = secret, previous_secret_expires_at = now() + ${graceSeconds} * interval '1 second'`
        : sql`previous_secret = NULL, previous_secret_expires_at = NULL`,
      sql`secret = ${secret}`,
    );
  }
  const { rows } = await db.query<WebhookRow>(sql`
    UPDATE webhooks SET ${join(sets, ', ')}
    WHERE collection_id = ${collectionId} AND id = ${id}
    RETURNING ${WEBHOOK_COLUMNS}`);
  return rows[0];
}

export async function forgetRetiredSecrets(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(sql`
    UPDATE webhooks SET previous_secret = NULL, previous_secret_expires_at = NULL
    WHERE previous_secret_expires_at <= now()`);
  return rowCount;
}

export async function deleteWebhook(db: Queryable, collectionId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(sql`DELETE FROM webhooks WHERE collection_id = ${collectionId} AND id = ${id}`);
  return rowCount > 0;
}

/**
 * Active registrations of a collection with the event types each subscribes to, held (KEY
 * SHARE) until the caller's transaction ends. Without the lock, a registration deleted by a
 * transaction committing between this read and the insert of its deliveries failed that
 * insert's foreign key, and with it the change that published the event (a link created
 * while another process deleted a registration answered 400). With it, a DELETE that came
 * first is waited for and its row skipped, and one that comes later waits for this
 * transaction and removes the deliveries it wrote. KEY SHARE does not conflict with the
 * FOR NO KEY UPDATE of a PATCH or an attempt being recorded.
 */
export async function activeSubscriptions(
  db: Queryable,
  collectionId: string,
): Promise<{ id: string; events: string[]; filters: WebhookFilters | null }[]> {
  // In id order: the lock order of registrations (see the top of this file).
  const { rows } = await db.query<{ id: string; events: string[]; filters: WebhookFilters | null }>(
    sql`SELECT id, events, filters FROM webhooks WHERE collection_id = ${collectionId} AND active ORDER BY id FOR KEY SHARE`,
  );
  return rows;
}

/** Writes events and their deliveries, one statement each. */
export async function insertEvents(
  db: Queryable,
  collectionId: string,
  events: { id: string; type: string; body: string; createdAt: Date }[],
  deliveries: { id: string; webhookId: string; eventId: string; retries: number }[],
): Promise<void> {
  if (events.length === 0) return;
  // One array parameter per column, whatever the count: a VALUES list of thousands of events
  // (a click batch with ten registrations) passed PostgreSQL's 65,535 parameters.
  await db.query(sql`
    INSERT INTO webhook_events (collection_id, id, type, body, created_at)
    SELECT ${collectionId}, * FROM unnest(${events.map((e) => e.id)}::text[], ${events.map((e) => e.type)}::text[],
      ${events.map((e) => e.body)}::text[], ${events.map((e) => e.createdAt.toISOString())}::timestamptz[])`);
  if (deliveries.length === 0) return;
  await db.query(sql`
    INSERT INTO webhook_deliveries (collection_id, id, webhook_id, event_id, retries_left, next_attempt_at)
    SELECT ${collectionId}, *, now() FROM unnest(${deliveries.map((d) => d.id)}::text[],
      ${deliveries.map((d) => d.webhookId)}::text[], ${deliveries.map((d) => d.eventId)}::text[],
      ${deliveries.map((d) => d.retries)}::int[])`);
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
  >(sql`
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
    JOIN webhooks w ON w.collection_id = d.collection_id AND w.id = d.webhook_id`);
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

export async function lockDelivery(
  db: Queryable,
  collectionId: string,
  deliveryId: string,
): Promise<DeliveryRow | undefined> {
  const { rows } = await db.query<DeliveryRow>(sql`
    SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
    JOIN webhook_events e ON e.collection_id = d.collection_id AND e.id = d.event_id
    WHERE d.collection_id = ${collectionId} AND d.id = ${deliveryId}
    FOR UPDATE OF d`);
  return rows[0];
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

export async function updateDelivery(
  db: Queryable,
  collectionId: string,
  id: string,
  d: {
    status: DeliveryRow['status'];
    attemptCount?: number;
    retriesLeft?: number;
    nextAttemptAt: Date | null;
    lastStatusCode?: number | null;
    lastError?: string | null;
  },
): Promise<void> {
  const sets = setList(
    sql`updated_at = now()`,
    sql`status = ${d.status}`,
    sql`next_attempt_at = ${d.nextAttemptAt}`,
    d.attemptCount !== undefined && sql`attempt_count = ${d.attemptCount}`,
    d.retriesLeft !== undefined && sql`retries_left = ${d.retriesLeft}`,
    d.lastStatusCode !== undefined && sql`last_status_code = ${d.lastStatusCode}`,
    d.lastError !== undefined && sql`last_error = ${d.lastError}`,
  );
  await db.query(sql`UPDATE webhook_deliveries SET ${sets} WHERE collection_id = ${collectionId} AND id = ${id}`);
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

/** A registration's failed and cancelled deliveries created at or after `since` (what recover sends). */
const failedSince = (collectionId: string, webhookId: string, since: Date) => sql`
  collection_id = ${collectionId} AND webhook_id = ${webhookId} AND status IN ('failed', 'cancelled')
    AND created_at >= ${since}`;

/**
 * Makes the failed and cancelled deliveries of a registration created since `since` wait
 * again, with a fresh set of automatic retries, at most `limit` of them (oldest first).
 * Answers them with the attempt each makes next. The caller holds the registration's row.
 */
export async function reopenDeliveries(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  since: Date,
  retries: number,
  limit: number,
): Promise<{ id: string; attempt_count: number }[]> {
  const { rows } = await db.query<{ id: string; attempt_count: number }>(sql`
    WITH picked AS (
      SELECT id FROM webhook_deliveries WHERE ${failedSince(collectionId, webhookId, since)}
      ORDER BY created_at, id
      LIMIT ${limit}
      FOR UPDATE
    )
    UPDATE webhook_deliveries d SET status = 'pending', retries_left = ${retries}, next_attempt_at = now(),
      updated_at = now()
    FROM picked WHERE d.collection_id = ${collectionId} AND d.id = picked.id
    RETURNING d.id, d.attempt_count`);
  return rows;
}

export async function listDeliveries(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  q: { status?: string; eventType?: string; limit: number; offset: number },
): Promise<{ rows: DeliveryRow[]; total: number }> {
  const where = allOf(
    sql`d.collection_id = ${collectionId}`,
    sql`d.webhook_id = ${webhookId}`,
    q.status && sql`d.status = ${q.status}`,
    q.eventType && sql`e.type = ${q.eventType}`,
  );
  return pageWithTotal<DeliveryRow>(db, {
    columns: DELIVERY_COLUMNS,
    from: sql`FROM webhook_deliveries d
    JOIN webhook_events e ON e.collection_id = d.collection_id AND e.id = d.event_id
    WHERE ${where}`,
    orderBy: sql`d.created_at DESC, d.id DESC`,
    limit: q.limit,
    offset: q.offset,
  });
}

/** One delivery, with its event's body (the payload every attempt sent). */
export async function findDelivery(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  deliveryId: string,
): Promise<(DeliveryRow & { body: string }) | undefined> {
  const { rows } = await db.query<DeliveryRow & { body: string }>(sql`
    SELECT ${DELIVERY_COLUMNS}, e.body FROM webhook_deliveries d
    JOIN webhook_events e ON e.collection_id = d.collection_id AND e.id = d.event_id
    WHERE d.collection_id = ${collectionId} AND d.webhook_id = ${webhookId} AND d.id = ${deliveryId}`);
  return rows[0];
}

export async function attemptsOf(db: Queryable, collectionId: string, deliveryIds: string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  const { rows } = await db.query<AttemptRow>(sql`
    SELECT delivery_id, attempt, trigger, started_at, duration_ms, status_code, outcome, error, response_excerpt
    FROM webhook_attempts
    WHERE collection_id = ${collectionId} AND delivery_id IN (${join(deliveryIds)})
    ORDER BY delivery_id, attempt`);
  return rows;
}

/**
 * Pending deliveries of a registration that is being disabled. The caller holds the
 * registration's row; the deliveries are locked in id order.
 */
export async function cancelPending(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  reason: string,
): Promise<void> {
  await db.query(sql`
    WITH p AS MATERIALIZED (
      SELECT collection_id, id FROM webhook_deliveries
      WHERE collection_id = ${collectionId} AND webhook_id = ${webhookId} AND status = 'pending'
      ORDER BY id
      FOR UPDATE
    )
    UPDATE webhook_deliveries d
    SET status = 'cancelled', next_attempt_at = NULL, last_error = ${reason}, updated_at = now()
    FROM p WHERE d.collection_id = p.collection_id AND d.id = p.id`);
}

/**
 * Deletes events older than `before` whose deliveries are all final, with their deliveries
 * and attempts (cascade), at most `limit` at a time. Returns how many events went.
 */
export async function pruneEvents(db: Queryable, before: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(sql`
    DELETE FROM webhook_events e
    WHERE (e.collection_id, e.id) IN (
      SELECT ev.collection_id, ev.id FROM webhook_events ev
      WHERE ev.created_at < ${before}
        AND NOT EXISTS (
          SELECT 1 FROM webhook_deliveries d
          WHERE d.collection_id = ev.collection_id AND d.event_id = ev.id AND d.status = 'pending')
      LIMIT ${limit})`);
  return rowCount;
}

/** Any failed or cancelled delivery of the registration created since `since`? */
export async function hasFailedSince(
  db: Queryable,
  collectionId: string,
  webhookId: string,
  since: Date,
): Promise<boolean> {
  const { rows } = await db.query(sql`
    SELECT 1 FROM webhook_deliveries WHERE ${failedSince(collectionId, webhookId, since)} LIMIT 1`);
  return rows.length > 0;
}
