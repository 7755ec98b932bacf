/**
 * Tables that age out (issue 30 part 4): removing one month of interaction events by dropping
 * its partition, against deleting the same rows one by one, on two identical copies of the data
 * in the same run, on PostgreSQL.
 *
 *   npm run bench -- partitions
 *
 * Each copy is a schema of its own, migrated and seeded by `seedEvents` (bench/seed-events.ts:
 * COPY, the months' partitions made first) with the same arguments: BENCH_EVENTS (default
 * 10,000,000) events over the 365 days before 2026-01-01 (twelve whole months, about one
 * twelfth each). Then, for one month (March 2025):
 * - copy A: `DROP TABLE interaction_events_y2025m03` (what the upkeep does past the retention);
 * - copy B: `DELETE FROM interaction_events WHERE occurred_at` in that month, with the table's
 *   user triggers disabled for the statement's transaction, so that it does what the drop does
 *   (the rows gone, the maintained counters left as counted): the least a row-by-row retention
 *   would cost. With the triggers on it would also recompute every touched recipient's latest
 *   event and journey progress (BENCH_DELETE_TRIGGERS=on measures that too, far slower).
 *   Not counted: the vacuum its dead rows need afterwards (the drop leaves none).
 * Each is timed from BEGIN to COMMIT. Before and after, both copies answer the same questions
 * about the months kept (raw events by month, interaction and outcome; the hourly counters;
 * the latest-event counters; journey progress counters): every answer must stay as it was.
 *
 * The issue's target: the drop under 1 s at 10,000,000 events. BENCH_EVENTS=200000 runs it small.
 */
import pg from 'pg';
import { type Db, migrate, openPostgres } from '../src/db/index.ts';
import { type BenchDatabase, benchDatabase, printTable, type Row } from './lib.ts';
import { seedEvents } from './seed-events.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const DELETE_TRIGGERS = process.env.BENCH_DELETE_TRIGGERS === 'on';
const COLLECTION = 'bench';
const END = new Date('2026-01-01T00:00:00Z');
const MONTH = { name: 'interaction_events_y2025m03', from: '2025-03-01T00:00:00Z', to: '2025-04-01T00:00:00Z' };

/** What must not change for the months kept: one sorted text per question. */
async function keptAnswers(db: Db): Promise<Record<string, string>> {
  const outside = `NOT (occurred_at >= '${MONTH.from}' AND occurred_at < '${MONTH.to}')`;
  const hours = `NOT (hour >= '${MONTH.from}' AND hour < '${MONTH.to}')`;
  const q = async (text: string) => JSON.stringify((await db.query(text, [COLLECTION])).rows);
  return {
    events: await q(`
      SELECT date_trunc('month', occurred_at, 'UTC') AS month, interaction_id, outcome, count(*)::int AS n
      FROM interaction_events WHERE collection_id = $1 AND ${outside} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`),
    counters: await q(`
      SELECT date_trunc('month', hour, 'UTC') AS month, interaction_id, outcome, sum(n)::int AS n
      FROM interaction_counts_hourly WHERE collection_id = $1 AND ${hours} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`),
    latest: await q(`
      SELECT id_field, interaction_id, outcome, sum(n)::int AS n
      FROM interaction_latest_counts WHERE collection_id = $1 AND ${hours} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`),
    progress: await q(`
      SELECT journey_id, id_field, step, sum(entered)::int AS entered, sum(completed)::int AS completed
      FROM journey_progress_counts WHERE collection_id = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`),
  };
}

/** Milliseconds from BEGIN to COMMIT of `statements` on one connection of the copy's schema. */
async function timed(url: string, statements: string[]): Promise<{ ms: number; rows: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const started = process.hrtime.bigint();
    let rows = 0;
    await client.query('BEGIN');
    for (const s of statements) rows += (await client.query(s)).rowCount ?? 0;
    await client.query('COMMIT');
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, rows };
  } finally {
    await client.end();
  }
}

const copies: BenchDatabase[] = [];
const rows: Row[] = [];
try {
  const dbs: Db[] = [];
  for (let k = 0; k < 2; k++) {
    const copy = await benchDatabase('postgres');
    copies.push(copy);
    const db = await openPostgres({ connectionString: copy.url as string });
    dbs.push(db);
    await migrate(db);
    const seeded = await seedEvents(
      db,
      { events: EVENTS, collection: COLLECTION, interactions: 10, days: 365, batch: 100_000, run: 'bench', end: END },
      (m) => console.log(`seed ${k ? 'B' : 'A'}: ${m}`),
    );
    rows.push({
      scenario: `seed copy ${k ? 'B' : 'A'}: ${seeded.events} events (${seeded.path} path)`,
      note: `${(seeded.ms / 1000).toFixed(1)} s`,
    });
  }
  const [a, b] = dbs;
  const { rows: inMonth } = await a.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${MONTH.name}`);
  const before = [await keptAnswers(a), await keptAnswers(b)];
  if (JSON.stringify(before[0]) !== JSON.stringify(before[1])) throw new Error('the two copies differ before the run');

  const drop = await timed(copies[0].url as string, [`DROP TABLE ${MONTH.name}`]);
  const del = await timed(copies[1].url as string, [
    ...(DELETE_TRIGGERS ? [] : ['ALTER TABLE interaction_events DISABLE TRIGGER USER']),
    `DELETE FROM interaction_events WHERE occurred_at >= '${MONTH.from}' AND occurred_at < '${MONTH.to}'`,
    ...(DELETE_TRIGGERS ? [] : ['ALTER TABLE interaction_events ENABLE TRIGGER USER']),
  ]);

  const after = [await keptAnswers(a), await keptAnswers(b)];
  const same = (x: Record<string, string>, y: Record<string, string>) => Object.keys(x).filter((k) => x[k] !== y[k]);
  const changedA = same(before[0], after[0]);
  const changedB = DELETE_TRIGGERS ? [] : same(before[1], after[1]);
  const { rows: left } = await a.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM interaction_events WHERE occurred_at >= '${MONTH.from}' AND occurred_at < '${MONTH.to}'`,
  );
  rows.push(
    {
      scenario: `drop one month's partition (${inMonth[0].n} of ${EVENTS} events)`,
      p50: drop.ms,
      note: `${drop.ms.toFixed(1)} ms BEGIN to COMMIT; ${left[0].n} rows of the month left; answers for the kept months changed: ${changedA.length ? changedA.join(', ') : 'none'}`,
    },
    {
      scenario: `baseline: DELETE the same month row by row (triggers ${DELETE_TRIGGERS ? 'on' : 'off'})`,
      p50: del.ms,
      baseline: 'delete',
      ratio: del.ms / drop.ms,
      note: `${del.ms.toFixed(1)} ms, ${del.rows} rows; ratio = delete / drop; answers for the kept months changed: ${changedB.length ? changedB.join(', ') : 'none'}${DELETE_TRIGGERS ? ' (not compared: the triggers recount)' : ''}`,
    },
  );
  printTable(`Tables that age out: one month of ${EVENTS} events`, rows);
  for (const db of dbs) await db.close();
  if (changedA.length || changedB.length || left[0].n !== 0) {
    throw new Error('an answer about the kept months changed, or rows of the month were left');
  }
} finally {
  for (const c of copies) await c.drop();
}
