/** All SQL of the interactions module: types, events, counts, aggregates, exports. */
import sql, { empty, join, raw, type Sql } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import type { AggregateOp, IdField, InteractionPermissions } from './interactions.schema.ts';

export interface TypeRow {
  collection_id: string;
  id: string;
  app_id: string;
  permissions: InteractionPermissions;
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const TYPE_COLUMNS = raw('collection_id, id, app_id, permissions, data, created_at, updated_at');

export async function insertType(
  db: Queryable,
  collectionId: string,
  t: { id: string; appId: string; permissions: InteractionPermissions; data: Record<string, unknown> },
): Promise<TypeRow | undefined> {
  const { rows } = await db.query<TypeRow>(sql`
    INSERT INTO interaction_types (collection_id, id, app_id, permissions, data)
    VALUES (${collectionId}, ${t.id}, ${t.appId}, ${JSON.stringify(t.permissions)}::jsonb, ${JSON.stringify(t.data)}::jsonb)
    ON CONFLICT DO NOTHING
    RETURNING ${TYPE_COLUMNS}`);
  return rows[0];
}

/** `forUpdate` locks the row until the transaction ends (read-modify-write of permissions). */
export async function findType(
  db: Queryable,
  collectionId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<TypeRow | undefined> {
  const { rows } = await db.query<TypeRow>(sql`
    SELECT ${TYPE_COLUMNS} FROM interaction_types WHERE collection_id = ${collectionId} AND id = ${id}
    ${opts.forUpdate ? sql`FOR UPDATE` : empty}`);
  return rows[0];
}

export async function findTypes(db: Queryable, collectionId: string, ids: string[]): Promise<TypeRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<TypeRow>(
    sql`SELECT ${TYPE_COLUMNS} FROM interaction_types WHERE collection_id = ${collectionId} AND id = ANY(${ids}::text[])`,
  );
  return rows;
}

/** "Enabled" means permissions.enabled is not false. */
const ENABLED = raw(`coalesce((permissions->>'enabled')::boolean, true)`);

export async function listTypes(
  db: Queryable,
  collectionId: string,
  q: { appId?: string; limit: number; offset: number; enabledOnly: boolean },
): Promise<TypeRow[]> {
  const where = [sql`collection_id = ${collectionId}`];
  if (q.appId) where.push(sql`app_id = ${q.appId}`);
  if (q.enabledOnly) where.push(sql`${ENABLED}`);
  const { rows } = await db.query<TypeRow>(sql`
    SELECT ${TYPE_COLUMNS} FROM interaction_types WHERE ${join(where, ' AND ')}
    ORDER BY created_at, id LIMIT ${q.limit} OFFSET ${q.offset}`);
  return rows;
}

export async function updateType(
  db: Queryable,
  collectionId: string,
  id: string,
  p: { appId?: string; permissions?: InteractionPermissions; data?: Record<string, unknown> },
): Promise<TypeRow | undefined> {
  const sets = [sql`updated_at = now()`];
  if (p.appId !== undefined) sets.push(sql`app_id = ${p.appId}`);
  if (p.permissions !== undefined) sets.push(sql`permissions = ${JSON.stringify(p.permissions)}::jsonb`);
  if (p.data !== undefined) sets.push(sql`data = ${JSON.stringify(p.data)}::jsonb`);
  const { rows } = await db.query<TypeRow>(sql`
    UPDATE interaction_types SET ${join(sets, ', ')}
    WHERE collection_id = ${collectionId} AND id = ${id}
    RETURNING ${TYPE_COLUMNS}`);
  return rows[0];
}

export async function deleteType(db: Queryable, collectionId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    sql`DELETE FROM interaction_types WHERE collection_id = ${collectionId} AND id = ${id}`,
  );
  return rowCount > 0;
}

// ---------------------------------------------------------------------------------------------
// Events

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
];
export const EVENT_COLUMNS = raw(EVENT_COLUMN_NAMES.join(', '));
const EVENT_COLUMNS_OF_E = raw(EVENT_COLUMN_NAMES.map((c) => `e.${c}`).join(', '));

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
}

const jsonb = (v: Record<string, unknown> | null) => (v === null ? null : JSON.stringify(v));

/** Stores one event; answers the stored row (its id and time are the database's). */
export async function insertEvent(db: Queryable, collectionId: string, e: NewEvent): Promise<EventRow> {
  const { rows } = await db.query<EventRow>(sql`
    INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, occurred_at, user_id, contact_id,
      anon_id, outcome, scope, broadcast_id, journey_id, metadata, source,
      org_id, product_id, proof_id, variant_id, batch_id, event_type, source_tag, extra)
    VALUES (${collectionId}, ${e.eventId}, ${e.interactionId}, ${e.appId}, coalesce(${e.occurredAt}::timestamptz, now()),
      ${e.userId}, ${e.contactId}, ${e.anonId}, ${e.outcome}, ${e.scope}, ${e.broadcastId}, ${e.journeyId},
      ${jsonb(e.metadata)}::jsonb, ${e.channel},
      ${e.orgId}, ${e.productId}, ${e.proofId}, ${e.variantId}, ${e.batchId}, ${e.eventType}, ${e.sourceTag},
      ${jsonb(e.extra)}::jsonb)
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
 * Adds `k` recorded events to an interaction's count and answers the count after: the row
 * stays locked until the transaction ends, so concurrent writers of one interaction each see
 * their own before and after (milestones, migration 0205). Called last in a transaction that
 * stores events, so that the lock is held only for the commit that follows.
 */
export async function addToTotal(
  db: Queryable,
  collectionId: string,
  interactionId: string,
  k: number,
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql`
    INSERT INTO interaction_totals AS t (collection_id, interaction_id, n) VALUES (${collectionId}, ${interactionId}, ${k})
    ON CONFLICT (collection_id, interaction_id) DO UPDATE SET n = t.n + excluded.n
    RETURNING n`);
  return Number(rows[0].n);
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

export interface EventFilter {
  userId?: string;
  contactId?: string;
  appId?: string;
  interactionId?: string;
  interactionIds?: string[];
  scope?: string;
  broadcastId?: string;
  journeyId?: string;
  /** null: events without an outcome. */
  outcome?: string | null;
  from?: string;
  to?: string;
  includeDeleted?: boolean;
}

export function eventWhere(collectionId: string, f: EventFilter, alias = ''): Sql {
  const c = (name: string) => raw(alias ? `${alias}.${name}` : name);
  const where = [sql`${c('collection_id')} = ${collectionId}`];
  if (f.interactionId !== undefined) where.push(sql`${c('interaction_id')} = ${f.interactionId}`);
  if (f.interactionIds && f.interactionIds.length > 0)
    where.push(sql`${c('interaction_id')} = ANY(${f.interactionIds}::text[])`);
  if (f.userId !== undefined) where.push(sql`${c('user_id')} = ${f.userId}`);
  if (f.contactId !== undefined) where.push(sql`${c('contact_id')} = ${f.contactId}`);
  if (f.appId !== undefined) where.push(sql`${c('app_id')} = ${f.appId}`);
  if (f.scope !== undefined) where.push(sql`${c('scope')} = ${f.scope}`);
  if (f.broadcastId !== undefined) where.push(sql`${c('broadcast_id')} = ${f.broadcastId}`);
  if (f.journeyId !== undefined) where.push(sql`${c('journey_id')} = ${f.journeyId}`);
  if (f.outcome === null) where.push(sql`${c('outcome')} IS NULL`);
  else if (f.outcome !== undefined) where.push(sql`${c('outcome')} = ${f.outcome}`);
  if (f.from !== undefined) where.push(sql`${c('occurred_at')} >= ${f.from}::timestamptz`);
  if (f.to !== undefined) where.push(sql`${c('occurred_at')} < ${f.to}::timestamptz`);
  if (!f.includeDeleted) where.push(sql`${c('deleted_at')} IS NULL`);
  return join(where, ' AND ');
}

export async function queryEvents(
  db: Queryable,
  collectionId: string,
  f: EventFilter & { limit: number; order: 'ASC' | 'DESC'; latestPerEventId: boolean },
): Promise<EventRow[]> {
  const dir = raw(f.order === 'ASC' ? 'ASC' : 'DESC');
  const where = eventWhere(collectionId, f);
  const text = f.latestPerEventId
    ? sql`
      SELECT ${EVENT_COLUMNS} FROM (
        SELECT DISTINCT ON (event_id) ${EVENT_COLUMNS} FROM interaction_events WHERE ${where}
        ORDER BY event_id, occurred_at DESC, id DESC
      ) latest
      ORDER BY occurred_at ${dir}, id ${dir} LIMIT ${f.limit}`
    : sql`
      SELECT ${EVENT_COLUMNS} FROM interaction_events WHERE ${where}
      ORDER BY occurred_at ${dir}, id ${dir} LIMIT ${f.limit}`;
  const { rows } = await db.query<EventRow>(text);
  return rows;
}

/** Events readable by their own user: only of enabled types that allow own reads. */
export async function queryOwnEvents(
  db: Queryable,
  collectionId: string,
  userId: string,
  f: EventFilter & { limit: number },
): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>(sql`
    SELECT ${EVENT_COLUMNS_OF_E}
    FROM interaction_events e
    JOIN interaction_types t ON t.collection_id = e.collection_id AND t.id = e.interaction_id
    WHERE ${eventWhere(collectionId, { ...f, userId }, 'e')}
      AND coalesce((t.permissions->>'allowOwnRead')::boolean, false)
      AND coalesce((t.permissions->>'enabled')::boolean, true)
    ORDER BY e.occurred_at DESC, e.id DESC LIMIT ${f.limit}`);
  return rows;
}

/** A comparison, not a lookup in an object: idField comes from the request. */
const idColumn = (idField: IdField): Sql => (idField === 'contactId' ? raw('contact_id') : raw('user_id'));

const HOUR_MS = 3600_000;

/**
 * Counts by outcome. Plain counts filtered only by interaction, app and window are read from
 * the hourly rollup (interaction_counts_hourly, kept exact by triggers): whole hours from the
 * rollup, the partial hours at the window's edges from the events. Everything else (scope,
 * dedupeLatest) counts events.
 */
export async function countsByOutcome(
  db: Queryable,
  collectionId: string,
  f: EventFilter & { limit: number; dedupeLatest: boolean; idField: IdField },
): Promise<{ outcome: string | null; count: number }[]> {
  const where = eventWhere(collectionId, f);
  const id = idColumn(f.idField);
  let source: Sql | null = null;
  if (f.dedupeLatest) {
    source = sql`
      SELECT outcome, count(*) AS n FROM (
        SELECT DISTINCT ON (interaction_id, ${id}) outcome FROM interaction_events
        WHERE ${where} AND ${id} IS NOT NULL
        ORDER BY interaction_id, ${id}, occurred_at DESC, id DESC
      ) latest GROUP BY outcome`;
  } else if (hourlyRollupAnswers(f)) {
    source = rollupSource(collectionId, f);
  }
  source ??= sql`SELECT outcome, count(*) AS n FROM interaction_events WHERE ${where} GROUP BY outcome`;
  const { rows } = await db.query<{ outcome: string | null; count: number }>(sql`
    SELECT outcome, sum(n)::bigint AS count FROM (${source}) x
    GROUP BY outcome HAVING sum(n) > 0
    ORDER BY count DESC, outcome NULLS LAST LIMIT ${f.limit}`);
  return rows;
}

/**
 * The rollup knows interaction, app, hour and outcome: any other filter needs the events, and
 * so does a window without one whole hour in it (nothing for the rollup to answer).
 */
export function hourlyRollupAnswers(f: EventFilter): boolean {
  return (
    rollupHours(f) !== null &&
    f.userId === undefined &&
    f.contactId === undefined &&
    f.scope === undefined &&
    f.broadcastId === undefined &&
    f.journeyId === undefined &&
    f.outcome === undefined &&
    !f.includeDeleted &&
    !f.interactionIds?.length
  );
}

/** The window's whole hours (first hour, end hour; open ends undefined); null when it has none. */
function rollupHours(f: EventFilter) {
  const from = f.from === undefined ? undefined : Date.parse(f.from);
  const to = f.to === undefined ? undefined : Date.parse(f.to);
  const firstHour = from === undefined ? undefined : Math.ceil(from / HOUR_MS) * HOUR_MS;
  const endHour = to === undefined ? undefined : Math.floor(to / HOUR_MS) * HOUR_MS;
  if (firstHour !== undefined && endHour !== undefined && firstHour >= endHour) return null;
  return { from, to, firstHour, endHour };
}

/** Rollup hours inside the window plus raw events of its partial edge hours; null when the window is inside one hour. */
function rollupSource(collectionId: string, f: EventFilter): Sql | null {
  const hours = rollupHours(f);
  if (hours === null) return null;
  const { from, to, firstHour, endHour } = hours;
  const where = [sql`collection_id = ${collectionId}`];
  if (f.interactionId !== undefined) where.push(sql`interaction_id = ${f.interactionId}`);
  if (f.appId !== undefined) where.push(sql`app_id = ${f.appId}`);
  if (firstHour !== undefined) where.push(sql`hour >= ${new Date(firstHour).toISOString()}::timestamptz`);
  if (endHour !== undefined) where.push(sql`hour < ${new Date(endHour).toISOString()}::timestamptz`);
  const parts = [
    sql`SELECT nullif(outcome, '') AS outcome, n FROM interaction_counts_hourly WHERE ${join(where, ' AND ')}`,
  ];
  const edge = (edgeFrom: string | undefined, edgeTo: string | undefined) =>
    sql`SELECT outcome, count(*) AS n FROM interaction_events
        WHERE ${eventWhere(collectionId, { ...f, from: edgeFrom, to: edgeTo })} GROUP BY outcome`;
  if (from !== undefined && firstHour !== undefined && from < firstHour) {
    parts.push(edge(f.from, new Date(firstHour).toISOString()));
  }
  if (to !== undefined && endHour !== undefined && endHour < to)
    parts.push(edge(new Date(endHour).toISOString(), f.to));
  return join(parts, ' UNION ALL ');
}

/**
 * Counts by outcome of each identity's latest event per interaction, from interaction_latest
 * (migration 0203): whole hours from its counters, the part-hour at `from` from its rows.
 * Answers only what that table knows: a filter on interaction and a window whose end lies
 * after every identity's latest event (else an identity's latest in the window may be an
 * earlier event); `undefined` when it cannot answer and the events must be read.
 */
export async function latestCountsByOutcome(
  db: Queryable,
  collectionId: string,
  f: { interactionId?: string; from?: string; to?: string; idField: IdField; limit: number },
): Promise<{ outcome: string | null; count: number }[] | undefined> {
  const idField = f.idField === 'contactId' ? 'contactId' : 'userId';
  const interactions = f.interactionId
    ? sql`ARRAY[${f.interactionId}]::text[]`
    : sql`ARRAY(SELECT DISTINCT interaction_id FROM interaction_latest_counts
                WHERE collection_id = ${collectionId} AND id_field = ${idField})`;
  const latest = sql`interaction_latest WHERE collection_id = ${collectionId} AND id_field = ${idField}
    AND interaction_id = ANY(${interactions})`;
  // The check and the counts in one statement, so one snapshot: between two statements a
  // latest event at or after `to` could be written and counted.
  const after =
    f.to === undefined ? sql`false` : sql`EXISTS (SELECT 1 FROM ${latest} AND occurred_at >= ${f.to}::timestamptz)`;
  const from = f.from === undefined ? undefined : Date.parse(f.from);
  const firstHour = from === undefined ? undefined : Math.ceil(from / HOUR_MS) * HOUR_MS;
  const where = [sql`collection_id = ${collectionId}`, sql`id_field = ${idField}`];
  if (f.interactionId !== undefined) where.push(sql`interaction_id = ${f.interactionId}`);
  if (firstHour !== undefined) where.push(sql`hour >= ${new Date(firstHour).toISOString()}::timestamptz`);
  const parts = [
    sql`SELECT nullif(outcome, '') AS outcome, n FROM interaction_latest_counts WHERE ${join(where, ' AND ')}`,
  ];
  if (from !== undefined && firstHour !== undefined && from < firstHour) {
    parts.push(sql`SELECT outcome, count(*) AS n FROM ${latest}
      AND occurred_at >= ${f.from}::timestamptz AND occurred_at < ${new Date(firstHour).toISOString()}::timestamptz
      GROUP BY outcome`);
  }
  const { rows } = await db.query<{ after: boolean; outcome: string | null; count: number | null }>(sql`
    WITH guard AS (SELECT ${after} AS after),
    counts AS (
      SELECT outcome, sum(n)::bigint AS count FROM (${join(parts, ' UNION ALL ')}) x
      GROUP BY outcome HAVING sum(n) > 0
      ORDER BY count DESC, outcome NULLS LAST LIMIT ${f.limit}
    )
    SELECT g.after, c.outcome, c.count FROM guard g LEFT JOIN counts c ON NOT g.after
    ORDER BY c.count DESC, c.outcome NULLS LAST`);
  if (rows[0].after) return undefined;
  return rows.filter((r) => r.count !== null).map((r) => ({ outcome: r.outcome, count: r.count as number }));
}

/** A Map, not an object: groupBy is the caller's text, and `constructor` must not be found. */
const GROUP_EXPR = new Map<string, Sql>([
  ['outcome', raw('outcome')],
  ['interactionId', raw('interaction_id')],
  ['appId', raw('app_id')],
  ['scope', raw('scope')],
  ['userId', raw('user_id')],
  ['contactId', raw('contact_id')],
  ['broadcastId', raw('broadcast_id')],
  ['journeyId', raw('journey_id')],
  ['day', raw(`to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`)],
]);

/** A metadata key, passed as a parameter (never spliced into the SQL text). */
const metadataText = (key: string) => sql`(metadata->>${key})`;
const NUMBER = '^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$';
const metadataNumber = (key: string) =>
  sql`(CASE WHEN metadata->>${key} ~ ${NUMBER} THEN (metadata->>${key})::float8 END)`;

export async function aggregate(
  db: Queryable,
  collectionId: string,
  f: EventFilter & {
    limit: number;
    dedupeLatest: boolean;
    idField: IdField;
    groupBy: string;
    field: string;
    ops: AggregateOp[];
  },
): Promise<Record<string, number | string | null>[]> {
  const where = eventWhere(collectionId, f);
  const group = f.groupBy.startsWith('metadata.') ? metadataText(f.groupBy.slice(9)) : GROUP_EXPR.get(f.groupBy);
  // The request schema allows only GROUPABLE names and metadata paths; this is the backstop.
  if (!group) throw new TypeError(`groupBy "${f.groupBy}" passed validation but is not groupable`);
  const value = f.field.startsWith('metadata.') ? metadataNumber(f.field.slice(9)) : sql`NULL::float8`;
  const id = idColumn(f.idField);
  const source = f.dedupeLatest
    ? sql`(SELECT DISTINCT ON (interaction_id, ${id}) * FROM interaction_events WHERE ${where} AND ${id} IS NOT NULL
           ORDER BY interaction_id, ${id}, occurred_at DESC, id DESC)`
    : sql`(SELECT * FROM interaction_events WHERE ${where})`;
  const { rows } = await db.query<Record<string, number | string | null>>(sql`
    SELECT g AS "groupValue", count(*)::int AS "eventCount", count(v)::int AS count,
      sum(v) AS sum, avg(v) AS avg, min(v) AS min, max(v) AS max
    FROM (SELECT ${group}::text AS g, ${value} AS v FROM ${source} src) x
    GROUP BY g ORDER BY count(*) DESC, g NULLS LAST LIMIT ${f.limit}`);
  return rows;
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

// ---------------------------------------------------------------------------------------------
// Exports

/** One page of events in (occurred_at, id) order after a cursor: keyset pagination for exports. */
export async function exportPage(
  db: Queryable,
  collectionId: string,
  f: EventFilter,
  after: { at: Date; id: number } | null,
  limit: number,
): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>(sql`
    SELECT ${EVENT_COLUMNS} FROM interaction_events
    WHERE ${eventWhere(collectionId, f)}
      ${after ? sql`AND (occurred_at, id) > (${after.at}::timestamptz, ${after.id})` : empty}
    ORDER BY occurred_at, id LIMIT ${limit}`);
  return rows;
}

export async function countForExport(db: Queryable, collectionId: string, f: EventFilter): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    sql`SELECT count(*)::bigint AS n FROM interaction_events WHERE ${eventWhere(collectionId, f)}`,
  );
  return rows[0].n;
}

export async function startExport(db: Queryable, collectionId: string, jobId: number, format: string): Promise<void> {
  // A retried attempt starts over: its partial chunks are dropped with the old row.
  await db.query(sql`DELETE FROM interaction_exports WHERE collection_id = ${collectionId} AND job_id = ${jobId}`);
  await db.query(
    sql`INSERT INTO interaction_exports (collection_id, job_id, format) VALUES (${collectionId}, ${jobId}, ${format})`,
  );
}

export async function appendExportChunk(
  db: Queryable,
  collectionId: string,
  jobId: number,
  seq: number,
  data: Buffer,
  rows: number,
): Promise<void> {
  await db.query(
    sql`INSERT INTO interaction_export_chunks (collection_id, job_id, seq, data) VALUES (${collectionId}, ${jobId}, ${seq}, ${data})`,
  );
  await db.query(sql`
    UPDATE interaction_exports SET row_count = row_count + ${rows}, byte_count = byte_count + ${data.length}
    WHERE collection_id = ${collectionId} AND job_id = ${jobId}`);
}

export async function finishExport(db: Queryable, collectionId: string, jobId: number): Promise<void> {
  await db.query(
    sql`UPDATE interaction_exports SET complete = true WHERE collection_id = ${collectionId} AND job_id = ${jobId}`,
  );
}

export interface ExportRow {
  format: string;
  row_count: number;
  byte_count: number;
  complete: boolean;
  chunks: number;
}

export async function findExport(db: Queryable, collectionId: string, jobId: number): Promise<ExportRow | undefined> {
  const { rows } = await db.query<ExportRow>(sql`
    SELECT format, row_count, byte_count, complete,
      (SELECT count(*)::int FROM interaction_export_chunks c WHERE c.collection_id = x.collection_id AND c.job_id = x.job_id) AS chunks
    FROM interaction_exports x WHERE collection_id = ${collectionId} AND job_id = ${jobId}`);
  return rows[0];
}

export async function readExportChunk(
  db: Queryable,
  collectionId: string,
  jobId: number,
  seq: number,
): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ data: Uint8Array }>(sql`
    SELECT data FROM interaction_export_chunks WHERE collection_id = ${collectionId} AND job_id = ${jobId} AND seq = ${seq}`);
  return rows[0] ? Buffer.from(rows[0].data) : undefined;
}

/**
 * The striped counter tables (migrations 0201, 0203) and their keys without the slot, in
 * primary-key order: the order their triggers lock rows in, which compaction keeps.
 */
const STRIPED = [
  { table: 'interaction_counts_hourly', key: ['collection_id', 'interaction_id', 'hour', 'app_id', 'outcome'] },
  { table: 'interaction_latest_counts', key: ['collection_id', 'id_field', 'interaction_id', 'hour', 'outcome'] },
] as const;

/**
 * Folds the slots of counter rows for hours before `before` into slot 0, and removes slot-0
 * rows that count nothing, at most `batch` rows a statement; returns the rows removed. Writers
 * spread a counter over 16 slots (by backend) so they do not queue on one row; over time every
 * hour of a busy installation holds up to 16 rows per counter, and a latest event moving on
 * leaves a -1 in its old hour's slot: the reads then sum far more rows than counters. The rows
 * are locked in key order, as the triggers lock them, and a slot's value moves in the
 * statement that deletes it, so every sum stays exact while writers go on. Spans every
 * collection: housekeeping of the server's tables, not of one tenant's data.
 */
export async function compactCounters(db: Queryable, before: Date, batch: number): Promise<number> {
  const until = before.toISOString();
  let removed = 0;
  for (const { table, key } of STRIPED) {
    const cols = raw(key.join(', '));
    const match = raw(key.map((k) => `c.${k} = v.${k}`).join(' AND '));
    for (;;) {
      const { rows } = await db.query<{ gone: number }>(sql`
        WITH victims AS (
          SELECT ${cols}, slot FROM ${raw(table)}
          WHERE hour < ${until}::timestamptz AND slot <> 0
          ORDER BY ${cols}, slot LIMIT ${batch} FOR UPDATE
        ), gone AS (
          DELETE FROM ${raw(table)} c USING victims v WHERE ${match} AND c.slot = v.slot
          RETURNING ${raw(key.map((k) => `c.${k}`).join(', '))}, c.n
        ), folded AS (
          INSERT INTO ${raw(table)} AS t (${cols}, slot, n)
          SELECT ${cols}, 0, sum(n) FROM gone GROUP BY ${cols} HAVING sum(n) <> 0 ORDER BY ${cols}
          ON CONFLICT (${cols}, slot) DO UPDATE SET n = t.n + excluded.n
        )
        SELECT count(*)::int AS gone FROM gone`);
      removed += rows[0].gone;
      if (rows[0].gone < batch) break;
    }
    const zero = await db.query(
      sql`DELETE FROM ${raw(table)} WHERE hour < ${until}::timestamptz AND slot = 0 AND n = 0`,
    );
    removed += zero.rowCount;
  }
  return removed;
}
