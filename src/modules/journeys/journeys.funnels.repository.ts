/**
 * The SQL of the funnel options (issue 29): one statement gathers, per recipient, the events
 * the walk of funnels.engine.ts needs — the journey entry (journey funnels) and the live events
 * of the funnel's and exclusions' interactions in the period, at or after the entry, each
 * reduced to its time, which steps and exclusions it matches (bit masks) and the breakdown
 * property's value, in (time, storage id) order. Reads interaction_events by its
 * `(collection_id, journey_id, occurred_at)` and `(collection_id, interaction_id, occurred_at)`
 * indexes: the cost grows with the funnel's events, not with the collection.
 */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import type { IdField } from '../interactions/index.ts';
import type { WalkRecipient } from './funnels.engine.ts';

/** An event matcher: an interaction and an outcome (null: any outcome). */
export interface Matcher {
  interactionId: string;
  outcome: string | null;
}

/** A breakdown property: one of the event's columns, a top-level metadata key, or the click's. */
export type PropertyRef =
  | { column: 'app_id' | 'outcome' | 'source' | 'interaction_id' }
  | { metadataKey: string }
  | { click: 'country' | 'device_type' };

/**
 * An event's own breakdown property by its name (appId, outcome, source, interactionId,
 * metadata.<key>), or undefined for any other name: the names a funnel may break down by
 * besides a click's, and those a journey may declare for its progress rows to keep
 * (journeys.steps.ts keptProperties; migration 0920's journey_touch_of reads the same).
 */
export function eventProperty(name: string): PropertyRef | undefined {
  const columns = { appId: 'app_id', outcome: 'outcome', source: 'source', interactionId: 'interaction_id' } as const;
  if (Object.hasOwn(columns, name)) return { column: columns[name as keyof typeof columns] };
  if (name.startsWith('metadata.') && name.length > 'metadata.'.length) {
    return { metadataKey: name.slice('metadata.'.length) };
  }
  return undefined;
}

export interface FunnelEventsInput {
  idField: IdField;
  /** A journey funnel (recipients enter at their first event carrying it), or ad-hoc. */
  journeyId?: string;
  steps: Matcher[];
  exclusions: Matcher[];
  property?: PropertyRef;
  /**
   * Whether the walk reads the property on the step events (last touch, or an ad-hoc funnel's
   * anchor); a journey's first touch reads only the entry's, so the step events stay index-only.
   */
  eventValues?: boolean;
  /** Inclusive. */
  start?: string;
  /** Exclusive. */
  end?: string;
  /** Only these recipients (those maintained progress cannot answer for: funnels.service.ts). */
  rids?: string[];
}

const matches = (m: Matcher): Sql =>
  m.outcome === null
    ? sql`x.interaction_id = ${m.interactionId}`
    : sql`(x.interaction_id = ${m.interactionId} AND x.outcome = ${m.outcome})`;

/** `sum of 2^k for each matcher k the event matches` (matchers ≤ 20: an int). */
const mask = (ms: Matcher[]): Sql =>
  ms.length === 0
    ? sql`0`
    : join(
        ms.map((m, k) => sql`(CASE WHEN ${matches(m)} THEN ${1 << k} ELSE 0 END)`),
        ' + ',
      );

const propertyOf = (p: PropertyRef | undefined): Sql => {
  if (!p) return sql`NULL::text`;
  // The column name is one of four literals (validated by the service), never client text.
  if ('column' in p) return raw(`x.${p.column}`);
  if ('click' in p) return sql`NULL::text`;
  return sql`x.metadata ->> ${p.metadataKey}`;
};

/** Rows fetched at a time: the service holds one batch of gathered events, not all of them. */
const BATCH_ROWS = 5000;

/**
 * Runs `query` as a cursor in the caller's transaction (the analytics one) and hands its rows
 * over a batch at a time: a funnel of a million entrants is never held whole as rows.
 */
export async function eachBatch<R>(db: Queryable, query: Sql, fn: (rows: R[]) => void): Promise<void> {
  // Every row is read: plan for all of them (hash joins), not for a fast first batch, which
  // is what a cursor's default (cursor_tuple_fraction 0.1) would pick.
  await db.query('SET LOCAL cursor_tuple_fraction = 1.0');
  await db.query(sql`DECLARE funnel_rows NO SCROLL CURSOR FOR ${query}`);
  for (;;) {
    const { rows } = await db.query<R & Record<string, unknown>>(`FETCH ${BATCH_ROWS} FROM funnel_rows`);
    fn(rows);
    if (rows.length < BATCH_ROWS) break;
  }
  await db.query('CLOSE funnel_rows');
}

interface Row {
  rid: string;
  et: number | null;
  ev: string | null;
  events: [number, number, number, string | null][] | null;
}

/**
 * Each recipient's events for the walk (journey funnels: every entrant, with or without
 * events), handed to `each` a batch at a time. Runs in a transaction (a cursor).
 */
export async function funnelEvents(
  db: Queryable,
  collectionId: string,
  f: FunnelEventsInput,
  each: (batch: WalkRecipient[]) => void,
): Promise<void> {
  const rid = raw(f.idField === 'contactId' ? 'contact_id' : 'user_id');
  const period = (col: Sql) =>
    sql`${f.start ? sql`AND ${col} >= ${f.start}::timestamptz` : sql``} ${f.end ? sql`AND ${col} < ${f.end}::timestamptz` : sql``}`;
  const only = f.rids ? sql`AND x.${rid} = ANY(${f.rids}::text[])` : sql``;
  const interactions = [...new Set([...f.steps, ...f.exclusions].map((m) => m.interactionId))];
  const prop = propertyOf(f.property);
  const eventProp = f.eventValues === false ? sql`NULL::text` : prop;
  const m = sql`m AS (
      SELECT x.${rid} AS rid, x.occurred_at, x.id, ${mask(f.steps)} AS sm, ${mask(f.exclusions)} AS xm, ${eventProp} AS v
      FROM interaction_events x
      WHERE x.collection_id = ${collectionId} AND x.interaction_id = ANY(${interactions}::text[])
        AND x.deleted_at IS NULL AND x.${rid} IS NOT NULL ${period(sql`x.occurred_at`)} ${only}
    )`;
  const agg = sql`json_agg(json_build_array((extract(epoch FROM m.occurred_at) * 1000)::float8, m.sm, m.xm, m.v)
      ORDER BY m.occurred_at, m.id)`;
  let query: Sql;
  if (f.journeyId !== undefined) {
    const journey = sql`x.collection_id = ${collectionId} AND x.journey_id = ${f.journeyId} AND x.deleted_at IS NULL
      AND x.${rid} IS NOT NULL ${period(sql`x.occurred_at`)} ${only}`;
    // The entry event's own value is needed only for a breakdown; without one, the first time
    // per recipient is an index-only aggregate over the journey index (no heap, no sort).
    const entry = f.property
      ? sql`SELECT DISTINCT ON (x.${rid}) x.${rid} AS rid, x.occurred_at AS t, ${prop} AS v
        FROM interaction_events x WHERE ${journey}
        ORDER BY x.${rid}, x.occurred_at, x.id`
      : sql`SELECT x.${rid} AS rid, min(x.occurred_at) AS t, NULL::text AS v
        FROM interaction_events x WHERE ${journey} GROUP BY x.${rid}`;
    query = sql`
      WITH entry AS (${entry}), ${m}
      SELECT e.rid, (extract(epoch FROM e.t) * 1000)::float8 AS et, e.v AS ev,
        ${agg} FILTER (WHERE m.rid IS NOT NULL) AS events
      FROM entry e LEFT JOIN m ON m.rid = e.rid AND m.occurred_at >= e.t AND (m.sm <> 0 OR m.xm <> 0)
      GROUP BY e.rid, e.t, e.v`;
  } else {
    query = sql`
      WITH ${m}
      SELECT m.rid, NULL::float8 AS et, NULL::text AS ev, ${agg} AS events
      FROM m WHERE m.sm <> 0 OR m.xm <> 0
      GROUP BY m.rid`;
  }
  await eachBatch<Row>(db, query, (rows) =>
    each(
      rows.map((r) => ({
        rid: r.rid,
        entry: r.et === null ? undefined : { t: Number(r.et), v: r.ev },
        events: (r.events ?? []).map(([t, s, x, v]) => ({ t: Number(t), steps: s, excl: x, v })),
      })),
    ),
  );
}

/**
 * Each click's events for the walk of a funnel from a link's clicks (journeys.link-steps.ts has
 * the rules): the clicks of the link in the period, each with a synthetic first event (the
 * click, step 1) and then the live events of the later steps' and exclusions' interactions at
 * or after the click, before the period's end, that carry the click id or come from the
 * click's identity (its first event carrying the click id). `steps[0]` is the link step and
 * matches no event. The recipient id is the click's row id.
 */
export async function linkFunnelEvents(
  db: Queryable,
  collectionId: string,
  linkId: string,
  f: FunnelEventsInput,
  each: (batch: WalkRecipient[]) => void,
): Promise<void> {
  const rid = raw(f.idField === 'contactId' ? 'contact_id' : 'user_id');
  const xEnd = f.end ? sql`AND x.occurred_at < ${f.end}::timestamptz` : sql``;
  const interactions = [...new Set([...f.steps.slice(1), ...f.exclusions].map((m) => m.interactionId))];
  const p = f.property;
  const clickProp = p && 'click' in p ? raw(`nullif(c.${p.click}, '')`) : sql`NULL::text`;
  // A click's own property (country, device) is the click's on every one of its events.
  const prop = p && 'click' in p ? sql`e.v` : f.eventValues === false ? sql`NULL::text` : propertyOf(p);
  const cols = sql`e.cid, x.occurred_at, x.id, ${mask(f.steps)} AS sm, ${mask(f.exclusions)} AS xm, ${prop} AS v`;
  const mapped = sql`x.collection_id = ${collectionId} AND x.interaction_id = ANY(${interactions}::text[])
    AND x.deleted_at IS NULL AND x.occurred_at >= e.t ${xEnd}`;
  const query = sql`
    WITH entry AS (
      SELECT c.id AS cid, c.click_id, c.clicked_at AS t, ${clickProp} AS v FROM link_clicks c
      WHERE c.collection_id = ${collectionId} AND c.link_id = ${linkId}
        ${f.start ? sql`AND c.clicked_at >= ${f.start}::timestamptz` : sql``}
        ${f.end ? sql`AND c.clicked_at < ${f.end}::timestamptz` : sql``}
    ), ident AS (
      SELECT e.cid, (SELECT x.${rid} FROM interaction_events x
        WHERE x.collection_id = ${collectionId} AND x.click_id = e.click_id AND x.occurred_at >= e.t
          AND x.deleted_at IS NULL AND x.${rid} IS NOT NULL ${xEnd}
        ORDER BY x.occurred_at, x.id LIMIT 1) AS rid
      FROM entry e WHERE e.click_id IS NOT NULL
    ), m AS (
      -- By the click id, and by the identity; UNION drops an event found both ways.
      SELECT ${cols} FROM entry e JOIN interaction_events x ON x.click_id = e.click_id AND ${mapped}
      UNION
      SELECT ${cols} FROM entry e JOIN ident i ON i.cid = e.cid
        JOIN interaction_events x ON x.${rid} = i.rid AND ${mapped}
    )
    SELECT e.cid, e.click_id IS NULL AS untracked, (extract(epoch FROM e.t) * 1000)::float8 AS et, e.v AS ev,
      json_agg(json_build_array((extract(epoch FROM m.occurred_at) * 1000)::float8, m.sm, m.xm, m.v)
        ORDER BY m.occurred_at, m.id) FILTER (WHERE m.cid IS NOT NULL AND (m.sm <> 0 OR m.xm <> 0)) AS events
    FROM entry e LEFT JOIN m ON m.cid = e.cid
    GROUP BY e.cid, e.click_id, e.t, e.v`;
  type ClickRow = { cid: string; untracked: boolean; et: number; ev: string | null; events: Row['events'] };
  await eachBatch<ClickRow>(db, query, (rows) =>
    each(
      rows.map((r) => ({
        rid: String(r.cid),
        untracked: r.untracked,
        events: [
          { t: Number(r.et), steps: 1, excl: 0, v: r.ev },
          ...(r.events ?? []).map(([t, s, x, v]) => ({ t: Number(t), steps: s & ~1, excl: x, v })),
        ],
      })),
    ),
  );
}
