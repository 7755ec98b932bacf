/**
 * SQL of the event outbox (outbox.ts): the active registrations an event goes to (held until
 * the publishing transaction ends), the events with their deliveries, and pruning old events
 * whose deliveries are all final. The lock order is the module's (webhooks.repository.ts).
 */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import type { WebhookFilters } from './webhooks.repository.ts';

/**
 * Active registrations of a collection with the event types each subscribes to, held (KEY
 * SHARE) until the caller's transaction ends. Without the lock, a registration deleted by a
 * transaction committing between this read and the insert of its deliveries failed that
 * insert's foreign key, and with it the change that published the event (a link created
 * while another process deleted a registration answered 400); without the key (migration
 * 0410), it would leave those deliveries behind. With it, a DELETE that came first is waited
 * for and its row skipped, and one that comes later waits for this transaction and removes
 * the deliveries it wrote (its statement trigger). KEY SHARE does not conflict with the
 * FOR NO KEY UPDATE of a PATCH or an attempt being recorded.
 */
export async function activeSubscriptions(
  db: Queryable,
  collectionId: string,
): Promise<{ id: string; events: string[]; filters: WebhookFilters | null }[]> {
  // In id order: the lock order of registrations (webhooks.repository.ts, at the top).
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

/**
 * Deletes events older than `before` whose deliveries are all final, with their deliveries
 * and attempts (the tables' delete triggers, migration 0410), at most `limit` at a time. Returns how many events went.
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
