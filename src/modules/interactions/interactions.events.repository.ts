/**
 * SQL of event writes (interaction_events): the row every read answers, storing an event,
 * the uniqueness checks of submits, and the changes of an event update. The triggers of
 * migrations 0201, 0203, 0204 and 0207 keep the derived tables in the same statements.
 */
import sql, { empty, join, raw } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';

export interface EventRow {
  collection_id: string;
  id: number;
  event_id: string;
  interaction_id: string;
  app_id: string | null;
  occurred_at: Date;
  user_id: string | null;
  contact_id: string | null;
  anon_id: string | null;
  outcome: string | null;
  scope: string | null;
  broadcast_id: string | null;
  journey_id: string | null;
  metadata: Record<string, unknown> | null;
  /** The channel: admin (append) or public (submit). */
  source: 'admin' | 'public';
  deleted_at: Date | null;
  org_id: string | null;
  product_id: string | null;
  proof_id: string | null;
  variant_id: string | null;
  batch_id: string | null;
  event_type: string | null;
  /** The client's free-text source tag. */
  source_tag: string | null;
  /** Fields of the body that have no column, returned with the event. */
  extra: Record<string, unknown> | null;
  /** The short-link click it follows (links' attribution, migration 0600). */
  click_id: string | null;
}

const EVENT_COLUMN_NAMES = [
  'collection_id',
  'id',
  'event_id',
  'interaction_id',
  'app_id',
  'occurred_at',
  'user_id',
  'contact_id',
  'anon_id',
  'outcome',
  'scope',
  'broadcast_id',
  'journey_id',
  'metadata',
  'source',
  'deleted_at',
  'org_id',
  'product_id',
  'proof_id',
  'variant_id',
  'batch_id',
  'event_type',
  'source_tag',
  'extra',
  'click_id',
];
export const EVENT_COLUMNS = raw(EVENT_COLUMN_NAMES.join(', '));
/** The same columns of `interaction_events e` (reads that join it). */
export const EVENT_COLUMNS_OF_E = raw(EVENT_COLUMN_NAMES.map((c) => `e.${c}`).join(', '));

export interface NewEvent {
  eventId: string;
  interactionId: string;
  appId: string | null;
  occurredAt: Date | null;
  userId: string | null;
  contactId: string | null;
  anonId: string | null;
  outcome: string | null;
  scope: string | null;
  broadcastId: string | null;
  journeyId: string | null;
  metadata: Record<string, unknown> | null;
  channel: 'admin' | 'public';
  orgId: string | null;
  productId: string | null;
  proofId: string | null;
  variantId: string | null;
  batchId: string | null;
  eventType: string | null;
  sourceTag: string | null;
  extra: Record<string, unknown> | null;
  clickId?: string | null;
}

const jsonb = (v: Record<string, unknown> | null) => (v === null ? null : JSON.stringify(v));

/** Stores one event; answers the stored row (its id and time are the database's). */
export async function insertEvent(db: Queryable, collectionId: string, e: NewEvent): Promise<EventRow> {
  const { rows } = await db.query<EventRow>(sql`
    INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, occurred_at, user_id, contact_id,
      anon_id, outcome, scope, broadcast_id, journey_id, metadata, source,
      org_id, product_id, proof_id, variant_id, batch_id, event_type, source_tag, extra, click_id)
    VALUES (${collectionId}, ${e.eventId}, ${e.interactionId}, ${e.appId}, coalesce(${e.occurredAt}::timestamptz, now()),
      ${e.userId}, ${e.contactId}, ${e.anonId}, ${e.outcome}, ${e.scope}, ${e.broadcastId}, ${e.journeyId},
      ${jsonb(e.metadata)}::jsonb, ${e.channel},
      ${e.orgId}, ${e.productId}, ${e.proofId}, ${e.variantId}, ${e.batchId}, ${e.eventType}, ${e.sourceTag},
      ${jsonb(e.extra)}::jsonb, ${e.clickId ?? null})
    RETURNING ${EVENT_COLUMNS}`);
  return rows[0];
}

/** One stored version of an event by its row id (an effect's job reads its event so). */
export async function findEventRow(db: Queryable, collectionId: string, rowId: number): Promise<EventRow | undefined> {
  const { rows } = await db.query<EventRow>(
    sql`SELECT ${EVENT_COLUMNS} FROM interaction_events WHERE collection_id = ${collectionId} AND id = ${rowId}`,
  );
  return rows[0];
}

/**
 * Serialises submits that compete for one uniqueness slot (type + user, or type + anon id)
 * until the transaction ends: the check that follows and the insert are then atomic, on any
 * number of connections. Unrelated keys that hash alike merely wait for each other.
 */
export async function lockUniqueness(tx: Queryable, collectionId: string, key: string): Promise<void> {
  await tx.query(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`ie:${collectionId}:${key}`}, 0))`);
}

export async function existsForIdentity(
  db: Queryable,
  collectionId: string,
  q: {
    interactionId: string;
    column: 'user_id' | 'anon_id';
    value: string;
    since: Date | null;
    outcome: string | null;
  },
): Promise<boolean> {
  const col = raw(q.column === 'user_id' ? 'user_id' : 'anon_id');
  const { rows } = await db.query(sql`
    SELECT 1 FROM interaction_events
    WHERE collection_id = ${collectionId} AND ${col} = ${q.value} AND interaction_id = ${q.interactionId}
      AND deleted_at IS NULL
      ${q.since ? sql`AND occurred_at >= ${q.since}` : empty}
      ${q.outcome !== null ? sql`AND outcome = ${q.outcome}` : empty}
    LIMIT 1`);
  return rows.length > 0;
}

export async function findLatestVersion(
  db: Queryable,
  collectionId: string,
  eventId: string,
): Promise<EventRow | undefined> {
  const { rows } = await db.query<EventRow>(sql`
    SELECT ${EVENT_COLUMNS} FROM interaction_events WHERE collection_id = ${collectionId} AND event_id = ${eventId}
    ORDER BY occurred_at DESC, id DESC LIMIT 1`);
  return rows[0];
}

/** The columns an event update may change, by the field that names them; raw() takes only these. */
const CHANGEABLE_COLUMNS = {
  outcome: 'outcome',
  scope: 'scope',
  broadcastId: 'broadcast_id',
  journeyId: 'journey_id',
  orgId: 'org_id',
  productId: 'product_id',
  proofId: 'proof_id',
  variantId: 'variant_id',
  batchId: 'batch_id',
  source: 'source_tag',
  eventType: 'event_type',
} as const;

export type EventChanges = { [K in keyof typeof CHANGEABLE_COLUMNS]?: string | null } & {
  metadata?: Record<string, unknown> | null;
};

export async function updateEventVersion(
  db: Queryable,
  collectionId: string,
  rowId: number,
  p: EventChanges,
): Promise<void> {
  const sets = [sql`updated_at = now()`];
  for (const [field, column] of Object.entries(CHANGEABLE_COLUMNS)) {
    const value = p[field as keyof typeof CHANGEABLE_COLUMNS];
    if (value !== undefined) sets.push(sql`${raw(column)} = ${value}`);
  }
  if (p.metadata !== undefined)
    sets.push(sql`metadata = ${p.metadata === null ? null : JSON.stringify(p.metadata)}::jsonb`);
  await db.query(
    sql`UPDATE interaction_events SET ${join(sets, ', ')} WHERE collection_id = ${collectionId} AND id = ${rowId}`,
  );
}

export async function setEventDeleted(db: Queryable, collectionId: string, eventId: string, deleted: boolean) {
  await db.query(sql`
    UPDATE interaction_events SET deleted_at = ${deleted ? sql`coalesce(deleted_at, now())` : sql`NULL`}, updated_at = now()
    WHERE collection_id = ${collectionId} AND event_id = ${eventId}`);
}
