/**
 * SQL of registrations and of reading and changing their deliveries. The event outbox's is in
 * outbox.repository.ts, a delivery attempt's in attempts.repository.ts.
 *
 * Lock order: a registration's row before any of its deliveries, and deliveries in id order.
 * Every transaction that writes both keeps to it: a disable (the row, then its pending
 * deliveries), an attempt being recorded (the row, then its delivery: `lockWebhookOfDelivery`
 * first) and the success statement. The other way round, an attempt holding its delivery
 * and waiting for the registration meets a disable holding the registration and waiting for
 * that delivery: a deadlock. Registration rows are locked FOR NO KEY UPDATE (or FOR SHARE),
 * never FOR UPDATE, so that publishing (which holds KEY SHARE on the registrations it writes
 * deliveries for) is never held up by a PATCH. A DELETE takes FOR UPDATE by itself; it too
 * starts with the registration, and its trigger then removes the deliveries and their attempts
 * (migration 0410). Publishing an event holds KEY SHARE
 * on the active registrations it reads (`activeSubscriptions`), so a DELETE never removes a
 * registration between that read and the deliveries written for it.
 */
import sql, { join, raw } from 'sql-template-tag';
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

/** A delivery row's columns, with its event's type (`d` the delivery, `e` its event). */
export const DELIVERY_COLUMNS = raw(
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
