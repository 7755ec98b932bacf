/**
 * SQL of maintained progress over a period (migration 0209): the funnel counts, the trends'
 * buckets and the chains the funnel options take as walked recipients (funnels.kept.ts), of
 * the recipients whose journey entry lies in the period, from their progress rows.
 *
 * Why a row answers for its recipient: the row holds the journey entry E (the first live event
 * carrying the journey id, ever) and the chain of completions from it (each step's first
 * matching event at or after the step before, journeys.repository.ts `funnelCtes`). When E is
 * in the period, E is also the recipient's entry in the period, and the chain cut at the
 * period's end is the period's chain: a step's first matching event after the step before,
 * if it lies beyond the end, leaves none before it.
 *
 * Who is left to the events: the "straddlers", recipients who entered the journey before the
 * period and came back in it (an event carrying the journey id inside it, which is then their
 * entry in the period). Only a period with a start has any, and only when some row entered
 * before that start; finding them reads the period's journey events (journeys.repository.ts
 * `entryCte`) and keeps the entrants without a row.
 */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import type { IdField } from '../interactions/index.ts';
import { eachBatch } from './journeys.funnels.repository.ts';
import { stillReady } from './journeys.progress.repository.ts';
import { entryCte, type FunnelInput, type StepCounts, stepCountsOf, stepCtes } from './journeys.repository.ts';

interface PeriodInput {
  journeyId: string;
  idField: IdField;
  /** The ready version whose rows answer. */
  version: number;
  /** Inclusive. */
  start?: string;
  /** Exclusive. */
  end?: string;
}

const endOf = (f: PeriodInput): Sql => (f.end ? sql`${f.end}::timestamptz` : sql`'infinity'::timestamptz`);
/** journey_progress.id_field's value: a comparison, since idField comes from the request. */
const idFieldOf = (f: PeriodInput) => (f.idField === 'contactId' ? 'contactId' : 'userId');

/** The rows of the recipients whose journey entry lies in the period (`kept` as a subquery). */
function keptRows(collectionId: string, f: PeriodInput, columns: Sql): Sql {
  return sql`SELECT ${columns} FROM journey_progress
      WHERE collection_id = ${collectionId} AND journey_id = ${f.journeyId}
        AND id_field = ${idFieldOf(f)} AND version = ${f.version}
        AND entered_at < ${endOf(f)} ${f.start ? sql`AND entered_at >= ${f.start}::timestamptz` : sql``}`;
}

/** `kept`: keptRows as a CTE, for statements that read them more than once. */
const keptCte = (collectionId: string, f: PeriodInput): Sql =>
  sql`kept AS (${keptRows(collectionId, f, sql`rid, entered_at, completed_at`)})`;

/**
 * With a start: `entry` (the period's entrants, from its journey events) and `straddle` (those
 * without a row among the period's). The conditions are a one-time filter whose subqueries run
 * when reached: no row entered before the start, and the period's journey events are not read;
 * as many entrants as rows, and there is no anti-join. The rows are the `kept` CTE when the
 * statement has one (`fromCte`: it is materialized anyway), else subqueries of their own, so
 * that a statement reading them once need not materialize them.
 */
function straddleCtes(collectionId: string, f: PeriodInput & { start: string }, fromCte = false): Sql {
  const before = sql`EXISTS (
      SELECT 1 FROM journey_progress
      WHERE collection_id = ${collectionId} AND journey_id = ${f.journeyId}
        AND id_field = ${idFieldOf(f)} AND version = ${f.version}
        AND entered_at < ${f.start}::timestamptz)`;
  const rowCount = fromCte ? sql`SELECT count(*) FROM kept` : keptRows(collectionId, f, sql`count(*)`);
  const hasRow = fromCte
    ? sql`SELECT 1 FROM kept k WHERE k.rid = e.rid`
    : sql`${keptRows(collectionId, f, sql`1`)} AND rid = e.rid`;
  return sql`${entryCte(collectionId, f)},
    straddle AS (
      SELECT e.rid, e.t FROM entry e
      WHERE ${before} AND (SELECT count(*) FROM entry) > (${rowCount}) AND NOT EXISTS (${hasRow})
    )`;
}

/**
 * funnelCounts of a period (journeys.repository.ts); undefined when the version is no longer
 * the ready one. The straddlers are counted by the funnel's own chain over their events.
 */
export async function keptPeriodFunnelCounts(
  db: Queryable,
  collectionId: string,
  f: FunnelInput & { version: number },
): Promise<{ totalEntered: number; steps: StepCounts[] } | undefined> {
  const end = endOf(f);
  // Per step k (0-based), as stepCountsOf but with the seconds' sum: entered on entry or on
  // completing step k-1 before the end, completed at completed_at[k+1] before the end.
  let parts = f.steps.map((_, k) => {
    const done = raw(`completed_at[${k + 1}]`);
    const from = raw(k === 0 ? 'entered_at' : `completed_at[${k}]`);
    const entered = k === 0 ? sql`count(*)` : sql`count(*) FILTER (WHERE ${from} < ${end})`;
    return sql`SELECT ${k}::int AS idx, ${entered} AS entered, count(*) FILTER (WHERE ${done} < ${end}) AS completed,
      sum(extract(epoch FROM ${done} - ${from})) FILTER (WHERE ${done} < ${end}) AS seconds FROM kept`;
  });
  let ctes = sql`WITH ${keptCte(collectionId, f)}`;
  let total = sql`(SELECT count(*) FROM kept)`;
  if (f.start) {
    ctes = sql`${ctes}, ${straddleCtes(collectionId, { ...f, start: f.start }, true)}, ${stepCtes(collectionId, f, 'straddle')}`;
    parts = [...parts, ...stepCountsOf(f.steps.length, 'sum')];
    total = sql`(SELECT count(*) FROM kept) + (SELECT count(*) FROM straddle)`;
  }
  const { rows } = await db.query<StepCounts & { total: number }>(sql`
    ${ctes}
    SELECT idx, sum(entered)::bigint AS entered, sum(completed)::bigint AS completed,
      (sum(seconds) / nullif(sum(completed), 0))::float8 AS avg_seconds, ${total}::bigint AS total
    FROM (${join(parts, ' UNION ALL ')}) p
    WHERE ${stillReady(collectionId, f.journeyId, f.version)}
    GROUP BY idx ORDER BY idx`);
  if (rows.length === 0) return undefined;
  return { totalEntered: rows[0].total, steps: rows.map(({ total: _, ...step }) => step) };
}

export interface TrendBuckets {
  /** Recipients the rows answer for, per trends bucket of their entry (its start, epoch ms, shifted). */
  buckets: { start: number; entered: number; completed: number }[];
  /** Recipients the rows cannot answer for: to be walked from their events. */
  walk: string[];
}

/**
 * The trends' counts of an ordered funnel of `stepCount` steps (the kept steps' first ones)
 * with an optional whole-funnel window, per bucket (UTC day, or week from Monday) of the entry
 * moved by `shiftMs` (the previous period's entries land in the current period's buckets);
 * undefined when the version is no longer the ready one. A row whose chain reaches the last
 * step before the end within the window of its first step-1 event completed the funnel (that
 * anchor is a best attempt); a row whose chain stops short did not (a later anchor's chain is
 * nowhere earlier, so it reaches no further). A row whose chain reaches the last step only
 * beyond the window might through a later anchor: it is walked, with the straddlers.
 */
export async function keptTrendBuckets(
  db: Queryable,
  collectionId: string,
  f: PeriodInput & { stepCount: number; windowMs?: number; interval: 'day' | 'week'; shiftMs: number },
): Promise<TrendBuckets | undefined> {
  const n = f.stepCount;
  const last = raw(`completed_at[${n}]`);
  const reached = sql`(cardinality(completed_at) >= ${n} AND ${last} < ${endOf(f)})`;
  const late =
    f.windowMs === undefined
      ? sql`false`
      : sql`(${last} > completed_at[1] + ${f.windowMs}::float8 * interval '1 millisecond')`;
  // funnels.engine.ts bucketStart of the shifted entry (date_trunc's weeks begin on Mondays).
  const bucket = sql`date_trunc(${f.interval}, (entered_at + ${f.shiftMs}::bigint * interval '1 millisecond') AT TIME ZONE 'UTC')`;
  // One pass over the rows, grouped by bucket: nothing materialized.
  const straddlers = f.start ? sql`UNION ALL SELECT 2, NULL, NULL, NULL, array_agg(rid) FROM straddle` : sql``;
  const { rows } = await db.query<{
    o: number;
    start: number | null;
    entered: number | null;
    completed: number | null;
    walk: string[] | null;
  }>(sql`
    ${f.start ? sql`WITH ${straddleCtes(collectionId, { ...f, start: f.start })}` : sql``}
    SELECT 0 AS o, NULL::float8 AS start, NULL::bigint AS entered, NULL::bigint AS completed, NULL::text[] AS walk
    WHERE ${stillReady(collectionId, f.journeyId, f.version)}
    UNION ALL
    SELECT 1, (extract(epoch FROM b) * 1000)::float8, count(*) FILTER (WHERE NOT (reached AND late)),
      count(*) FILTER (WHERE reached AND NOT late), array_agg(rid) FILTER (WHERE reached AND late)
    FROM (SELECT ${bucket} AS b, rid, reached, late
      FROM (${keptRows(collectionId, f, sql`rid, entered_at, ${reached} AS reached, ${late} AS late`)}) k) r
    GROUP BY b
    ${straddlers}
    ORDER BY o`);
  if (rows[0]?.o !== 0) return undefined;
  return {
    buckets: rows
      .filter((r) => r.o === 1)
      .map((r) => ({ start: Number(r.start), entered: Number(r.entered), completed: Number(r.completed) })),
    walk: rows.flatMap((r) => r.walk ?? []),
  };
}

/** A progress row's chain as the walk takes it: epoch ms, the completions before the period's end. */
export interface KeptChain {
  rid: string;
  entered: number;
  /** completed_at of the first `stepCount` steps before the end, in order. */
  completed: number[];
}

/**
 * The chains of the period's rows (a batch at a time, through a cursor), and the straddlers'
 * ids; ready false (and nothing read) when the version is no longer the ready one. Runs in a
 * transaction (the cursor).
 */
export async function keptChains(
  db: Queryable,
  collectionId: string,
  f: PeriodInput & { stepCount: number },
  each: (batch: KeptChain[]) => void,
): Promise<{ ready: boolean; straddlers: string[] }> {
  const { rows } = await db.query<{ o: number; rid: string | null }>(sql`
    ${f.start ? sql`WITH ${straddleCtes(collectionId, { ...f, start: f.start })}` : sql``}
    SELECT 0 AS o, NULL::text AS rid WHERE ${stillReady(collectionId, f.journeyId, f.version)}
    ${f.start ? sql`UNION ALL SELECT 1, rid FROM straddle` : sql``}
    ORDER BY o`);
  if (rows[0]?.o !== 0) return { ready: false, straddlers: [] };
  // Times as the walk's events carry them (journeys.funnels.repository.ts): exact epoch ms.
  const end = endOf(f);
  // Each step's column, named once: the rows are read by these names.
  const names = Array.from({ length: f.stepCount }, (_, k) => `c${k}`);
  const done = names.map((name, k) => {
    const c = raw(`completed_at[${k + 1}]`);
    return sql`CASE WHEN ${c} < ${end} THEN (extract(epoch FROM ${c}) * 1000)::float8 END AS ${raw(name)}`;
  });
  const columns = sql`rid, (extract(epoch FROM entered_at) * 1000)::float8 AS e, ${join(done, ', ')}`;
  await eachBatch<Record<string, string | number | null>>(db, sql`${keptRows(collectionId, f, columns)}`, (batch) =>
    each(
      batch.map((r) => {
        const completed: number[] = [];
        for (let k = 0; k < names.length && r[names[k]] !== null; k++) completed.push(Number(r[names[k]]));
        return { rid: r.rid as string, entered: Number(r.e), completed };
      }),
    ),
  );
  return { ready: true, straddlers: rows.slice(1).map((r) => r.rid as string) };
}
