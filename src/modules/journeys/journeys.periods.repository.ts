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
  // funnels.figures.ts bucketStart of the shifted entry (date_trunc's weeks begin on Mondays).
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
  /** The row's breakdown values (migration 0920), when asked for. */
  touch?: (string | null)[] | null;
}

/** 2000-01-01 (PostgreSQL's own epoch for timestamps) in µs since 1970. */
const PG_EPOCH_US = 946_684_800_000_000;

/**
 * A timestamptz in its binary form (µs since 2000-01-01, big-endian int8) at `offset`, as µs
 * since 1970: exact below 2^53 µs (the year 2255; 'infinity' comes out larger than any). Read
 * as two halves: through a BigInt, turning a million rows into chains took 350 against 135 ms.
 */
const microsAt = (b: DataView, offset: number) =>
  b.getInt32(offset) * 4_294_967_296 + b.getUint32(offset + 4) + PG_EPOCH_US;

/**
 * `timestamptz_send(entered_at) || array_send(completed_at)` of one row, as the walk takes it:
 * epoch ms (µs / 1000 rounds as `(extract(epoch FROM t) * 1000)::float8` does, the walk's own
 * events' times: both are the double nearest the exact value), the completions before `endUs`.
 */
function chainOf(rid: string, bytes: Uint8Array, stepCount: number, endUs: number): KeptChain {
  const b = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // array_send: ndim, has-nulls flag, element type, (length, lower bound) per dimension, then
  // (byte length, value) per element.
  const ndim = b.getInt32(8);
  const n = ndim === 0 ? 0 : b.getInt32(8 + 12);
  const completed: number[] = [];
  for (let k = 0, at = 8 + 12 + 8 * ndim + 4; k < Math.min(n, stepCount); k++, at += 12) {
    const us = microsAt(b, at);
    if (us >= endUs) break;
    completed.push(us / 1000);
  }
  return { rid, entered: microsAt(b, 0) / 1000, completed };
}

/**
 * The chains of the period's rows (a batch at a time, through a cursor), and the straddlers'
 * ids; ready false (and nothing read) when the version is no longer the ready one. Runs in a
 * transaction (the cursor). The times travel in their binary form and the period's end is
 * applied here: converted to epoch milliseconds in the statement (numeric arithmetic) and
 * parsed as text, a million rows took 1.8–2.0 s to read, against 1.4–1.5 s so
 * (docs/benchmarks.md, the fifteenth session).
 */
export async function keptChains(
  db: Queryable,
  collectionId: string,
  f: PeriodInput & { stepCount: number; touch?: boolean },
  each: (batch: KeptChain[]) => void,
): Promise<{ ready: boolean; straddlers: string[] }> {
  const { rows } = await db.query<{ o: number; rid: string | null; end_us: Uint8Array | null }>(sql`
    ${f.start ? sql`WITH ${straddleCtes(collectionId, { ...f, start: f.start })}` : sql``}
    SELECT 0 AS o, NULL::text AS rid, timestamptz_send(${endOf(f)}) AS end_us
    WHERE ${stillReady(collectionId, f.journeyId, f.version)}
    ${f.start ? sql`UNION ALL SELECT 1, rid, NULL FROM straddle` : sql``}
    ORDER BY o`);
  if (rows[0]?.o !== 0) return { ready: false, straddlers: [] };
  // The end in µs, exact: 'infinity' is the largest int8, after every completion.
  const endBytes = rows[0].end_us as Uint8Array;
  const endUs = microsAt(new DataView(endBytes.buffer, endBytes.byteOffset, endBytes.byteLength), 0);
  const columns = sql`rid, timestamptz_send(entered_at) || array_send(completed_at) AS b
    ${f.touch ? sql`, touch` : sql``}`;
  type Row = { rid: string; b: Uint8Array; touch?: (string | null)[] | null };
  await eachBatch<Row>(db, keptRows(collectionId, f, columns), (batch) =>
    each(
      batch.map((r) => {
        const chain = chainOf(r.rid, r.b, f.stepCount, endUs);
        if (f.touch) chain.touch = r.touch;
        return chain;
      }),
    ),
  );
  return { ready: true, straddlers: rows.slice(1).map((r) => r.rid as string) };
}

/** One group of the period's rows, by breakdown value and part. */
export interface PackedGroup {
  /** The breakdown value the rows are counted under (null also without a breakdown). */
  value: string | null;
  /**
   * `timestamptz_send(entered_at) || array_send(completed_at)` of each row that completed a
   * step before the end and answers (not beyond the window), concatenated.
   */
  chains: Uint8Array;
  /** Rows that completed no step before the end: entrants only, counted, not sent. */
  unreached: number;
}

/** The row's value of a kept breakdown property: its position among the state's properties. */
export interface TouchValue {
  /** 0-based position of the property among the state's props. */
  index: number;
  /** How many properties the state keeps (values per chain position). */
  of: number;
  attribution: 'first' | 'last';
}

/** Parts a group's chains are split into: no one value of the answer grows past tens of MB. */
const PACK_PARTS = 16;

/**
 * The period's rows for a funnel report, grouped by breakdown value with their chains packed
 * into one bytea per group and part: a million rows arrive as a few dozen values instead of a
 * million (node-postgres spends about a microsecond on each row it receives, more than the
 * statement on it). A row whose chain, cut at the period's end to `stepCount` steps, ends
 * beyond the window of its first step is not packed: its id is returned to be walked, with
 * the straddlers'. A row that completed no step is only counted (four in ten at 10,000,000
 * events). Undefined when the version is no longer the ready one.
 */
export async function keptPacked(
  db: Queryable,
  collectionId: string,
  f: PeriodInput & { stepCount: number; windowMs?: number; touch?: TouchValue },
): Promise<{ groups: PackedGroup[]; endUs: number; walk: string[] } | undefined> {
  // Completions before the end among the first stepCount (the chain as the walk cuts it).
  const cut = f.end
    ? sql`least(${f.stepCount}, width_bucket(${f.end}::timestamptz - interval '1 microsecond', completed_at))`
    : sql`least(${f.stepCount}, cardinality(completed_at))`;
  const late =
    f.windowMs === undefined
      ? sql`false`
      : sql`(m > 1 AND completed_at[m] > completed_at[1] + ${f.windowMs}::float8 * interval '1 millisecond')`;
  const t = f.touch;
  const value = !t
    ? sql`NULL::text`
    : t.attribution === 'first'
      ? sql`touch[${t.index + 1}]`
      : sql`touch[least(m, cardinality(touch) / ${t.of} - 1) * ${t.of} + ${t.index + 1}]`;
  const straddlers = f.start ? sql`UNION ALL SELECT 2, NULL, NULL, array_agg(rid), NULL FROM straddle` : sql``;
  // The planner cannot know the groups are few (a value of a few, times PACK_PARTS): it guesses
  // one per row, and sorts a million rows for a group aggregate (1.3 s at 1,000,000 rows)
  // rather than hashing them (0.93 s), and keeps the scan serial. Hashed, with the rows read
  // and packed by parallel workers (the aggregate itself cannot run in them: string_agg has no
  // partial mode before PostgreSQL 16), it took 0.68 s. For this statement only: the settings
  // are put back after it, for the walk that may follow in the same transaction.
  const planner = ['enable_sort', 'parallel_setup_cost', 'parallel_tuple_cost'];
  const { rows: before } = await db.query<{ v: string }>(
    sql`SELECT current_setting(name) AS v FROM unnest(${planner}::text[]) WITH ORDINALITY AS s(name, n) ORDER BY n`,
  );
  await db.query(
    sql`SELECT set_config(name, v, true) FROM unnest(${planner}::text[], ${['off', '0', '0']}::text[]) AS s(name, v)`,
  );
  type Row = { o: number; v: string | null; b: Uint8Array | null; walk: string[] | null; unreached: number | null };
  const { rows } = await db.query<Row>(
    sql`
    ${f.start ? sql`WITH ${straddleCtes(collectionId, { ...f, start: f.start })}` : sql``}
    SELECT 0 AS o, NULL::text AS v, timestamptz_send(${endOf(f)}) AS b, NULL::text[] AS walk, NULL::bigint AS unreached
    WHERE ${stillReady(collectionId, f.journeyId, f.version)}
    UNION ALL
    SELECT 1, v, string_agg(b, ''::bytea), array_agg(late) FILTER (WHERE late IS NOT NULL), count(*) FILTER (WHERE m = 0)
    FROM (
      -- The chain (packed), the id (to walk) or neither (no step completed), never both: only a
      -- late row's id is carried from the workers. string_agg skips the nulls.
      SELECT ${value} AS v, abs(hashtext(rid) % ${PACK_PARTS}) AS part, m,
        CASE WHEN m = 0 OR ${late} THEN NULL ELSE timestamptz_send(entered_at) || array_send(completed_at) END AS b,
        CASE WHEN ${late} THEN rid END AS late
      FROM (${keptRows(collectionId, f, sql`rid, entered_at, completed_at, touch, ${cut} AS m`)}) k
    ) r
    GROUP BY v, part
    ${straddlers}
    ORDER BY o`,
  );
  await db.query(
    sql`SELECT set_config(name, v, true) FROM unnest(${planner}::text[], ${before.map((r) => r.v)}::text[]) AS s(name, v)`,
  );
  if (rows[0]?.o !== 0) return undefined;
  const endBytes = rows[0].b as Uint8Array;
  const endUs = microsAt(new DataView(endBytes.buffer, endBytes.byteOffset, endBytes.byteLength), 0);
  const groups: PackedGroup[] = [];
  for (const r of rows) {
    if (r.o === 1) groups.push({ value: r.v, chains: r.b ?? new Uint8Array(0), unreached: Number(r.unreached) });
  }
  return { groups, endUs, walk: rows.flatMap((r) => r.walk ?? []) };
}

/**
 * Each chain of a packed group (keptPacked) in turn, as `fn(enteredMs, times, reached)`: epoch
 * ms as chainOf gives them, `times` (reused between calls) the completions before `endUs`,
 * at most `stepCount`.
 */
export function eachPackedChain(
  chains: Uint8Array,
  stepCount: number,
  endUs: number,
  fn: (enteredMs: number, times: Float64Array, reached: number) => void,
): void {
  const b = new DataView(chains.buffer, chains.byteOffset, chains.byteLength);
  const times = new Float64Array(stepCount);
  let at = 0;
  while (at < chains.byteLength) {
    const entered = microsAt(b, at) / 1000;
    // array_send, as chainOf reads it: 12 bytes of header, (length, lower bound) per dimension.
    const ndim = b.getInt32(at + 8);
    const n = ndim === 0 ? 0 : b.getInt32(at + 20);
    let reached = 0;
    for (let k = 0, el = at + 20 + 8 * ndim + 4; k < Math.min(n, stepCount); k++, el += 12) {
      const us = microsAt(b, el);
      if (us >= endUs) break;
      times[reached++] = us / 1000;
    }
    fn(entered, times, reached);
    at += 20 + 8 * ndim + 12 * n;
  }
}
