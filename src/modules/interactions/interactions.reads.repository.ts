/**
 * SQL of event reads: queries, a user's own events, counts by outcome (from the maintained
 * hourly and latest counters where they answer), aggregates, and the pages an export reads.
 */
import sql, { empty, join, raw, type Sql } from 'sql-template-tag';
import { allOf, type Queryable } from '../../db/index.ts';
import { EVENT_COLUMNS, EVENT_COLUMNS_OF_E, type EventRow } from './interactions.events.repository.ts';
import type { AggregateOp, IdField } from './interactions.schema.ts';

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
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    f.interactionId !== undefined && sql`interaction_id = ${f.interactionId}`,
    f.appId !== undefined && sql`app_id = ${f.appId}`,
    firstHour !== undefined && sql`hour >= ${new Date(firstHour).toISOString()}::timestamptz`,
    endHour !== undefined && sql`hour < ${new Date(endHour).toISOString()}::timestamptz`,
  );
  const parts = [sql`SELECT nullif(outcome, '') AS outcome, n FROM interaction_counts_hourly WHERE ${where}`];
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
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    sql`id_field = ${idField}`,
    f.interactionId !== undefined && sql`interaction_id = ${f.interactionId}`,
    firstHour !== undefined && sql`hour >= ${new Date(firstHour).toISOString()}::timestamptz`,
  );
  const parts = [sql`SELECT nullif(outcome, '') AS outcome, n FROM interaction_latest_counts WHERE ${where}`];
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

// ---------------------------------------------------------------------------------------------
// The export's reads (its file is kept by src/db/chunked-files.ts)

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
