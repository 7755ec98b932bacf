/**
 * SQL of click analytics: the visitors' daily salts, the visitors seen per day, the
 * collection-wide rollup (written by the click batch, read by the collection's analytics), a
 * link's analytics from its clicks, and the pages of a CSV export. Migration 0620 has the tables.
 */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import type { AnyGroupBy } from './analytics.dimensions.ts';
import { RANKED_DIMS, REFERER_HOST, VALUE_MAX } from './analytics.dimensions.ts';
import type { ClickRow } from './links.repository.ts';

export type Interval = 'hour' | 'day' | 'week' | 'month';

// --- the writer's side ------------------------------------------------------------------------

/** The salt of a UTC day (`YYYY-MM-DD`): the one stored, or `fresh`, stored now if there was none. */
export async function daySalt(db: Queryable, day: string, fresh: Buffer): Promise<Buffer> {
  // The no-op update makes RETURNING answer the salt another process stored first.
  const { rows } = await db.query<{ salt: Uint8Array }>(sql`
    INSERT INTO link_visitor_salts (day, salt) VALUES (${day}::date, ${fresh})
    ON CONFLICT (day) DO UPDATE SET day = EXCLUDED.day
    RETURNING salt`);
  return Buffer.from(rows[0].salt);
}

export interface VisitorDay {
  collectionId: string;
  day: string;
  visitor: string;
}

/**
 * Notes the visitors of a batch; answers those not seen before that day in that collection
 * (`collection \0 day \0 visitor`). Inserted in key order, so batches of several processes
 * meeting on the same keys wait for each other rather than deadlock.
 */
export async function newVisitorDays(tx: Queryable, keys: VisitorDay[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const { rows } = await tx.query<{ collection_id: string; day: string; visitor: string }>(sql`
    INSERT INTO link_visitor_days (collection_id, day, visitor)
    SELECT * FROM unnest(${keys.map((k) => k.collectionId)}::text[], ${keys.map((k) => k.day)}::date[],
      ${keys.map((k) => k.visitor)}::text[]) AS k (collection_id, day, visitor)
    ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING
    RETURNING collection_id, to_char(day, 'YYYY-MM-DD') AS day, visitor`);
  return new Set(rows.map((r) => `${r.collection_id}\u0000${r.day}\u0000${r.visitor}`));
}

export interface RollupRow {
  collectionId: string;
  dim: number;
  /** Counts of a UTC day (`hour` its midnight) rather than of an hour. */
  daily: boolean;
  hour: Date;
  value: string;
  bot: boolean;
  clicks: number;
  uniques: number;
}

/** A ranked dim's clicks of a value in a UTC month (migration 0650), bots included. */
export interface MonthRow {
  collectionId: string;
  dim: number;
  /** `YYYY-MM-01` */
  month: string;
  value: string;
  clicks: number;
}

/**
 * Adds a batch's counts to the rollup and its ranked dims' months, in key order (see
 * newVisitorDays), in one statement: one round trip a batch, as before the months. (PostgreSQL
 * runs the months' insert, which the statement does not read, after the rollup's: every batch
 * takes its locks in the same order.)
 */
export async function addToRollup(tx: Queryable, rows: RollupRow[], months: MonthRow[] = []): Promise<void> {
  if (rows.length === 0) return;
  const col = <K extends keyof RollupRow>(k: K) => rows.map((r) => r[k]);
  const mcol = <K extends keyof MonthRow>(k: K) => months.map((r) => r[k]);
  await tx.query(sql`
    WITH months AS (
      INSERT INTO link_click_value_months AS m (collection_id, dim, month, value, clicks)
      SELECT * FROM unnest(${mcol('collectionId')}::text[], ${mcol('dim')}::smallint[], ${mcol('month')}::date[],
        ${mcol('value')}::text[], ${mcol('clicks')}::bigint[])
      ORDER BY 1, 2, 3, 4
      ON CONFLICT (collection_id, dim, month, value) DO UPDATE SET clicks = m.clicks + EXCLUDED.clicks
    )
    INSERT INTO link_click_rollup AS r (collection_id, dim, daily, hour, value, bot, clicks, uniques)
    SELECT * FROM unnest(${col('collectionId')}::text[], ${col('dim')}::smallint[], ${col('daily')}::boolean[],
      ${rows.map((r) => r.hour.toISOString())}::timestamptz[], ${col('value')}::text[], ${col('bot')}::boolean[],
      ${col('clicks')}::bigint[], ${col('uniques')}::bigint[])
    ORDER BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (collection_id, dim, daily, hour, value, bot)
    DO UPDATE SET clicks = r.clicks + EXCLUDED.clicks, uniques = r.uniques + EXCLUDED.uniques`);
}

/** Housekeeping: the salts of days before `before` (their hashes can no longer be recomputed). */
export async function forgetSalts(db: Queryable, before: string): Promise<number> {
  const { rows } = await db.query(sql`DELETE FROM link_visitor_salts WHERE day < ${before}::date RETURNING day`);
  return rows.length;
}

/** Housekeeping: the visitors of days before `before`, of every collection. */
export async function forgetVisitorDays(db: Queryable, before: string): Promise<number> {
  const { rows } = await db.query(sql`DELETE FROM link_visitor_days WHERE day < ${before}::date RETURNING day`);
  return rows.length;
}

// --- reads ------------------------------------------------------------------------------------

/** A groupBy's value in a click row, for the reads of a link's clicks. Whitelisted SQL, from a Map. */
const VALUE_SQL: ReadonlyMap<AnyGroupBy, string> = new Map<AnyGroupBy, string>([
  ['country', 'country'],
  ['region', 'region'],
  ['city', 'city'],
  ['device', 'device_type'],
  ['browser', 'browser'],
  ['os', 'os'],
  [
    'referer',
    `CASE WHEN referer = '' THEN '' ELSE coalesce(lower(substring(referer FROM '${REFERER_HOST}')), left(referer, 100)) END`,
  ],
  ['referer_url', 'referer'],
  ['utm_source', 'utm_source'],
  ['utm_medium', 'utm_medium'],
  ['utm_campaign', 'utm_campaign'],
  ['utm_term', 'utm_term'],
  ['utm_content', 'utm_content'],
  ['trigger', 'trigger'],
  ['link', 'link_id'],
  ['route', 'route'],
]);

/** A dimension's value in a click row, cut as the rollup and every answer cut it. */
const valueSql = (g: AnyGroupBy) => raw(`left(${VALUE_SQL.get(g)}, ${VALUE_MAX})`);

export interface SeriesRow {
  start: Date;
  clicks: number;
  uniques: number;
}

export interface BreakdownRow {
  value: string | null;
  clicks: number;
  uniques: number;
  /** The sum of the values beyond the top ones. */
  other: boolean;
}

export interface AnalyticsRows {
  series: SeriesRow[];
  breakdown: BreakdownRow[];
}

export interface AnalyticsWindow {
  from: Date;
  to: Date;
  interval: Interval;
  includeBots: boolean;
  groupBy?: AnyGroupBy;
  /** A link's only: the clicks whose value in each dimension is the one given. */
  filters?: [AnyGroupBy, string][];
  limit: number;
}

const bucket = (interval: Interval, column: Sql) =>
  sql`date_trunc(${interval}, ${column} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`;

/**
 * The top `limit` values of the grouped CTE `g` (value, clicks, uniques) and the sum of the
 * rest, as the CTE `b` (always one `other` row, zeros when none). The rest is what `all` (one
 * row: clicks, uniques of every value together) holds beyond the top: a top-N sort of `g`, not
 * a rank over every value and a second pass to sum the tail (by `referer_url`, 170,000 values
 * over 30 days: 850 -> 480 ms).
 */
const topAndOther = (limit: number, all: Sql) => sql`
  top AS (SELECT value, clicks, uniques FROM g ORDER BY clicks DESC, value COLLATE "C" LIMIT ${limit}),
  b AS (
    SELECT value, clicks, uniques, false AS other FROM top
    UNION ALL
    SELECT NULL, a.clicks - coalesce((SELECT sum(clicks) FROM top), 0),
      a.uniques - coalesce((SELECT sum(uniques) FROM top), 0), true
    FROM (${all}) a
  )`;

const DAY_MS = 86_400_000;

/**
 * How many values of each month the threshold algorithm reads, round by round, for a top of
 * `limit`: one round decides most windows (the top values of a window are mostly those of its
 * months); a window that two rounds cannot decide is grouped whole.
 */
const rankedRounds = (limit: number) => [Math.max(128, 4 * limit), Math.max(2048, 32 * limit)];

/**
 * The window's whole UTC days [firstDay, lastDay) and its partial days' hours, as conditions on
 * rollup rows (`daily`, `hour`); no whole day when the window holds none.
 */
function windowDays(w: { from: Date; to: Date }) {
  let firstDay = Math.ceil(w.from.getTime() / DAY_MS) * DAY_MS;
  let lastDay = Math.floor(w.to.getTime() / DAY_MS) * DAY_MS;
  if (firstDay >= lastDay) firstDay = lastDay = w.to.getTime();
  return { firstDay: new Date(firstDay), lastDay: new Date(lastDay) };
}

/**
 * The collection's analytics from the rollup: whole hours only (the caller rounds the window),
 * whatever the clicks. Two statements: the series (hourly rows of dim 0), and the breakdown when
 * one is asked: the window's whole UTC days from the daily rows, its partial days' hours (at
 * most 23 at each end) from the hourly ones, each an index range. Every click counts once in
 * every dim (click-rollup.ts; migration 0620 counted the older clicks the same way), so the
 * values of a dim sum to dim 0's rows of the same hours: what the top values leave is read
 * from those, in the same statement (one snapshot), not summed over every other value.
 *
 * A ranked dim (RANKED_DIMS: the referer URL) first tries `rankedTop`, which reads a few
 * thousand values where the grouping reads every value of the window.
 */
export async function collectionAnalytics(
  db: Queryable,
  collectionId: string,
  w: AnalyticsWindow & { dim?: number },
): Promise<AnalyticsRows> {
  const bots = w.includeBots ? sql`` : sql`AND NOT bot`;
  const { rows: series } = await db.query<SeriesRow>(sql`
    SELECT ${bucket(w.interval, raw('hour'))} AS start, sum(clicks) AS clicks, sum(uniques) AS uniques
    FROM link_click_rollup
    WHERE collection_id = ${collectionId} AND dim = 0 AND NOT daily AND hour >= ${w.from} AND hour < ${w.to} ${bots}
    GROUP BY 1 ORDER BY 1`);
  if (w.dim === undefined) return { series, breakdown: [] };
  if (RANKED_DIMS.has(w.dim)) {
    for (const k of rankedRounds(w.limit)) {
      const breakdown = await rankedTop(db, collectionId, { ...w, dim: w.dim }, k);
      if (breakdown) return { series, breakdown };
    }
  }
  const { firstDay, lastDay } = windowDays(w);
  const range = (daily: boolean, from: Date, to: Date) => sql`
    SELECT value, clicks, uniques FROM link_click_rollup
    WHERE collection_id = ${collectionId} AND dim = ${w.dim} AND daily = ${daily}
      AND hour >= ${from} AND hour < ${to} ${bots}`;
  const { rows: breakdown } = await db.query<BreakdownRow>(sql`
    WITH counted AS (
      ${range(true, firstDay, lastDay)}
      UNION ALL ${range(false, w.from, firstDay)}
      UNION ALL ${range(false, lastDay, w.to)}
    ), g AS (
      SELECT value, sum(clicks) AS clicks, sum(uniques) AS uniques FROM counted GROUP BY value
    ), ${topAndOther(w.limit, everyClick(collectionId, w))}
    SELECT * FROM b ORDER BY other, clicks DESC, value COLLATE "C"`);
  return { series, breakdown };
}

/** Every click of the window (dim 0's hourly rows), as one row of clicks and uniques. */
const everyClick = (collectionId: string, w: AnalyticsWindow) => sql`
  SELECT coalesce(sum(clicks), 0) AS clicks, coalesce(sum(uniques), 0) AS uniques
  FROM link_click_rollup
  WHERE collection_id = ${collectionId} AND dim = 0 AND NOT daily AND hour >= ${w.from} AND hour < ${w.to}
    ${w.includeBots ? sql`` : sql`AND NOT bot`}`;

/**
 * The top `limit` values of a ranked dim over the window and the sum of the rest, by the
 * threshold algorithm (Fagin, Lotem and Naor) over its months (migration 0650), or undefined
 * when `k` values a month do not decide it. In one statement (one snapshot):
 * - the `k` values with the most clicks in each UTC month the window touches (sorted reads);
 * - each of those candidates counted exactly over the window, from the rollup by value (the
 *   same rows and bots rule as the grouping: whole days daily, the partial days hourly);
 * - the bound `tau`: the sum over the months of each one's k-th count (0 for a month with
 *   fewer than k values: all of them were read). A value not read has at most that many
 *   clicks in each month, so at most `tau` in the window, bots included.
 * The answer is decided when no month was cut short, or when the limit-th candidate has more
 * clicks than `tau` (strictly: a value not read cannot even tie, and win the tie by its name).
 */
export async function rankedTop(
  db: Queryable,
  collectionId: string,
  w: AnalyticsWindow & { dim: number },
  k: number,
): Promise<BreakdownRow[] | undefined> {
  // Written into the statement, so the planner sees the partial index's predicate (dim = 8).
  if (!RANKED_DIMS.has(w.dim)) throw new Error(`dim ${w.dim} is not ranked`);
  const dim = raw(String(w.dim));
  const { firstDay, lastDay } = windowDays(w);
  const month = (d: Date) => `${d.toISOString().slice(0, 7)}-01`;
  const { rows } = await db.query<BreakdownRow & { tau: number }>(sql`
    WITH lists AS (
      SELECT m.month, l.value, l.clicks
      FROM generate_series(${month(w.from)}::date, ${month(new Date(w.to.getTime() - 1))}::date, interval '1 month') AS m (month)
      CROSS JOIN LATERAL (
        SELECT value, clicks FROM link_click_value_months
        WHERE collection_id = ${collectionId} AND dim = ${dim} AND month = m.month::date
        ORDER BY clicks DESC LIMIT ${k}
      ) l
    ), bound AS (
      SELECT coalesce(sum(b), 0) AS tau
      FROM (SELECT CASE WHEN count(*) = ${k} THEN min(clicks) ELSE 0 END AS b FROM lists GROUP BY month) x
    ), g AS (
      SELECT c.value, x.clicks, x.uniques
      FROM (SELECT DISTINCT value FROM lists) c
      CROSS JOIN LATERAL (
        SELECT coalesce(sum(r.clicks), 0) AS clicks, coalesce(sum(r.uniques), 0) AS uniques
        FROM link_click_rollup r
        WHERE r.collection_id = ${collectionId} AND r.dim = ${dim} AND r.value = c.value
          AND CASE WHEN r.daily THEN r.hour >= ${firstDay} AND r.hour < ${lastDay}
            ELSE (r.hour >= ${w.from} AND r.hour < ${firstDay}) OR (r.hour >= ${lastDay} AND r.hour < ${w.to}) END
          ${w.includeBots ? sql`` : sql`AND NOT r.bot`}
      ) x
      WHERE x.clicks > 0
    ), ${topAndOther(w.limit, everyClick(collectionId, w))}
    SELECT b.*, (SELECT tau FROM bound) AS tau FROM b ORDER BY other, clicks DESC, value COLLATE "C"`);
  const tau = Number(rows[0]?.tau ?? 0);
  const top = rows.filter((r) => !r.other);
  if (tau > 0 && !(top.length === w.limit && top[w.limit - 1].clicks > tau)) return undefined;
  return rows.map(({ value, clicks, uniques, other }) => ({ value, clicks, uniques, other }));
}

/**
 * A link's analytics from its clicks (the primary key leads with collection, link and time):
 * exact over any window. A click is unique when it is its visitor's first of the UTC day on
 * this link, so the scan starts at the first window day's midnight to know who came earlier.
 */
export async function linkAnalytics(
  db: Queryable,
  collectionId: string,
  linkId: string,
  w: AnalyticsWindow,
): Promise<AnalyticsRows> {
  const dayStart = new Date(Math.floor(w.from.getTime() / 86_400_000) * 86_400_000);
  const value = w.groupBy ? valueSql(w.groupBy) : raw(`''`);
  const bots = w.includeBots ? sql`` : sql`AND device_type <> 'bot'`;
  const narrowed = (w.filters ?? []).map(([g, v]) => sql`AND ${valueSql(g)} = ${v}`);
  const { rows } = await db.query<BreakdownRow & { start: Date | null; part: number }>(sql`
    WITH c AS (
      SELECT clicked_at, ${value} AS value,
        (visitor <> '' AND row_number() OVER (
          PARTITION BY (clicked_at AT TIME ZONE 'UTC')::date, visitor ORDER BY clicked_at, id) = 1)::int AS u
      FROM link_clicks
      WHERE collection_id = ${collectionId} AND link_id = ${linkId}
        AND clicked_at >= ${dayStart} AND clicked_at < ${w.to} ${bots} ${narrowed.length ? join(narrowed, ' ') : sql``}
    ), w AS (
      SELECT * FROM c WHERE clicked_at >= ${w.from}
    ), g AS (
      SELECT value, count(*) AS clicks, sum(u) AS uniques FROM w GROUP BY value
    ), s AS (
      SELECT ${bucket(w.interval, raw('clicked_at'))} AS start, count(*) AS clicks, sum(u) AS uniques FROM w GROUP BY 1
    ), ${topAndOther(w.limit, sql`SELECT count(*) AS clicks, coalesce(sum(u), 0) AS uniques FROM w`)}
    SELECT * FROM (
      SELECT 0 AS part, start, NULL AS value, clicks, uniques, false AS other FROM s
      UNION ALL
      SELECT 1, NULL, value, clicks, uniques, other FROM b
    ) x
    ORDER BY part, start, other, clicks DESC, value COLLATE "C"`);
  return {
    series: rows
      .filter((r) => r.part === 0)
      .map((r) => ({ start: r.start as Date, clicks: r.clicks, uniques: r.uniques })),
    breakdown: w.groupBy
      ? rows.filter((r) => r.part === 1).map(({ value, clicks, uniques, other }) => ({ value, clicks, uniques, other }))
      : [],
  };
}

// --- export -----------------------------------------------------------------------------------

/** A click as the CSV export writes it: the click list's row, with its link. */
export type ExportClickRow = Omit<ClickRow, 'click_id' | 'total'> & { link_id: string };

/** A page of a link's clicks in time order after `after` (keyset on the primary key's tail). */
export async function exportPage(
  db: Queryable,
  collectionId: string,
  linkId: string,
  q: { from?: Date; to?: Date; includeBots: boolean; after?: { at: Date; id: number }; limit: number },
): Promise<ExportClickRow[]> {
  const { rows } = await db.query<ExportClickRow>(sql`
    SELECT id, link_id, clicked_at, ip_address, user_agent, referer, country, region, city, device_type, browser, os,
      trigger, utm_source, utm_medium, utm_campaign, utm_term, utm_content, route
    FROM link_clicks
    WHERE collection_id = ${collectionId} AND link_id = ${linkId}
      ${q.from ? sql`AND clicked_at >= ${q.from}` : sql``}
      ${q.to ? sql`AND clicked_at < ${q.to}` : sql``}
      ${q.includeBots ? sql`` : sql`AND device_type <> 'bot'`}
      ${q.after ? sql`AND (clicked_at, id) > (${q.after.at}, ${q.after.id})` : sql``}
    ORDER BY clicked_at, id
    LIMIT ${q.limit}`);
  return rows;
}

/** Every link of the collection that may have clicks, deleted ones included, in id order. */
export async function linkIdsOf(db: Queryable, collectionId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    sql`SELECT id FROM links WHERE collection_id = ${collectionId} ORDER BY id COLLATE "C"`,
  );
  return rows.map((r) => r.id);
}
