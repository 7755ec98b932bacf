/**
 * Bulk-loads realistic interaction events, fast: each batch is one
 * `INSERT ... SELECT ... FROM generate_series(...)` computed inside the database, so a million
 * events never cross the wire. Values come from cheap multiplicative hashes of the row number,
 * so the same arguments always give the same data set (benchmarks are repeatable).
 *
 *   npm run seed:events -- --events 1000000 [--collection bench] [--interactions 10]
 *     [--users 100000] [--days 30] [--journey-users 100000] [--batch 100000] [--run r1]
 *
 * Against DATABASE_URL (PostgreSQL) or DATA_DIR (PGlite), migrating first. What it creates:
 * - the collection (if missing), interaction types bench-0..bench-(k-1) of app `bench`, each
 *   with outcomes success 60 % / fail 30 % / skip 10 % and metadata {score: 0..99};
 * - journey `jrn_bench` with steps s1..s3 (journey-step1..3, outcome success) and its events:
 *   every journey user enters (an event carrying journeyId), 60 % complete s1 within the hour,
 *   30 % also s2 an hour later, 10 % also s3; these count toward --events.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { type Db, migrate, openDatabase } from '../src/db/index.ts';

export interface SeedOptions {
  events: number;
  collection: string;
  interactions: number;
  users: number;
  days: number;
  journeyUsers: number;
  batch: number;
  run: string;
  /** The newest event's time; events spread over `days` before it. */
  end?: Date;
}

export const JOURNEY_ID = 'jrn_bench';

export async function seedEvents(
  db: Db,
  o: SeedOptions,
  log: (m: string) => void = () => {},
): Promise<{ events: number; ms: number }> {
  const started = Date.now();
  const end = o.end ?? new Date();
  const spanSeconds = Math.max(1, Math.floor(o.days * 86400));
  const start = new Date(end.getTime() - spanSeconds * 1000);
  await db.query('INSERT INTO collections (id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
    o.collection,
    o.collection,
  ]);
  const types = [
    ...Array.from({ length: o.interactions }, (_, k) => `bench-${k}`),
    'journey-enter',
    'journey-step1',
    'journey-step2',
    'journey-step3',
  ];
  for (const id of types) {
    await db.query(
      `INSERT INTO interaction_types (collection_id, id, app_id, permissions)
       VALUES ($1, $2, 'bench', '{"allowPublicSubmit": true, "allowPublicSummary": true}'::jsonb) ON CONFLICT DO NOTHING`,
      [o.collection, id],
    );
  }
  const steps = [1, 2, 3].map((n) => ({
    id: `s${n}`,
    config: { interactionId: `journey-step${n}`, outcome: 'success' },
  }));
  await db.query(
    `INSERT INTO journeys (collection_id, id, app_id, name, journey_type, data)
     VALUES ($1, $2, 'bench', 'Bench journey', 'event_triggered', $3::jsonb) ON CONFLICT DO NOTHING`,
    [o.collection, JOURNEY_ID, JSON.stringify({ steps })],
  );

  let written = 0;
  /** Parameters: $1 collection, $2 run, $3 start, $4 span seconds, $5..$6 the batch's range, then extra. */
  const insert = async (label: string, selectSql: string, lo: number, hi: number, extra: unknown[]) => {
    const { rowCount } = await db.query(
      `INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, occurred_at, user_id, contact_id,
         outcome, journey_id, metadata, source)
       ${selectSql}`,
      [o.collection, o.run, start, spanSeconds, lo, hi, ...extra],
    );
    written += rowCount;
    log(`${label} ${lo}..${hi}: ${written} events, ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };

  // Journey users: entry at a spread-out time t0(i); steps at fixed offsets after it.
  const journeyUsers = Math.min(o.journeyUsers, Math.floor(o.events / 2));
  const t0 = "$3::timestamptz + ((g::bigint * 7919) % $4::int) * interval '1 second'";
  const journeySteps: [string, string, string][] = [
    ['journey-enter', 'true', '0'],
    ['journey-step1', 'g % 10 < 6', '60 + g % 3000'],
    ['journey-step2', 'g % 10 < 3', '3600 + g % 1800'],
    ['journey-step3', 'g % 10 < 1', '7200 + g % 1800'],
  ];
  for (let lo = 0; lo < journeyUsers; lo += o.batch) {
    const hi = Math.min(journeyUsers, lo + o.batch) - 1;
    for (const [interaction, cond, offset] of journeySteps) {
      const journey = interaction === 'journey-enter' ? `'${JOURNEY_ID}'` : 'NULL';
      await insert(
        interaction,
        `SELECT $1, 'seed-' || $2 || '-${interaction}-' || g, '${interaction}', 'bench',
           ${t0} + (${offset}) * interval '1 second', 'user-' || g, 'user-' || g, 'success', ${journey},
           NULL, 'admin'
         FROM generate_series($5::int, $6::int) g WHERE ${cond}`,
        lo,
        hi,
        [],
      );
    }
  }

  // Everything else: k interaction types, users, outcomes and scores from hashes of g.
  const remaining = Math.max(0, o.events - written);
  for (let lo = 0; lo < remaining; lo += o.batch) {
    const hi = Math.min(remaining, lo + o.batch) - 1;
    await insert(
      'events',
      `SELECT $1, 'seed-' || $2 || '-' || g, 'bench-' || (g % $8::int), 'bench',
         $3::timestamptz + ((g::bigint * 2654435761) % $4::int) * interval '1 second',
         'user-' || ((g::bigint * 48271) % 2147483647 % $7::int), 'user-' || ((g::bigint * 48271) % 2147483647 % $7::int),
         CASE WHEN (g::bigint * 16807) % 101 % 10 < 6 THEN 'success'
              WHEN (g::bigint * 16807) % 101 % 10 < 9 THEN 'fail' ELSE 'skip' END,
         NULL, jsonb_build_object('score', (g::bigint * 31) % 97), 'admin'
       FROM generate_series($5::int, $6::int) g`,
      lo,
      hi,
      [o.users, o.interactions],
    );
  }
  // Sets the visibility map too, so counts can be answered by index-only scans (autovacuum
  // would get there on its own; a benchmark should not depend on when).
  await db.query('VACUUM ANALYZE interaction_events');
  return { events: written, ms: Date.now() - started };
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1]);
if (isMain) {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '1000000' },
      collection: { type: 'string', default: 'bench' },
      interactions: { type: 'string', default: '10' },
      users: { type: 'string', default: '100000' },
      days: { type: 'string', default: '30' },
      'journey-users': { type: 'string', default: '100000' },
      batch: { type: 'string', default: '100000' },
      run: { type: 'string', default: Date.now().toString(36) },
    },
  });
  const num = (name: keyof typeof values, min: number) => {
    const n = Number(values[name]);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number ≥ ${min}`);
    return Math.floor(n);
  };
  const config = loadConfig();
  const db = await openDatabase(config);
  await migrate(db);
  const result = await seedEvents(
    db,
    {
      events: num('events', 0),
      collection: String(values.collection),
      interactions: num('interactions', 1),
      users: num('users', 1),
      days: num('days', 1),
      journeyUsers: num('journey-users', 0),
      batch: num('batch', 1000),
      run: String(values.run),
    },
    (m) => console.log(m),
  );
  console.log(
    `seeded ${result.events} events into ${values.collection} in ${(result.ms / 1000).toFixed(1)} s ` +
      `(${Math.round(result.events / (result.ms / 1000))} events/s) on ${db.kind}`,
  );
  await db.close();
}
