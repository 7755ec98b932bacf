/**
 * Bulk-loads realistic interaction events. Rows are generated in this process from cheap
 * hashes of the row number, so the same arguments always give the same data set (benchmarks
 * are repeatable), and the same rows on both backends:
 * - PostgreSQL: COPY FROM STDIN. Into an empty interaction_events it takes the bulk-load path,
 *   in one transaction (a failure leaves the table as it was): drop the secondary indexes
 *   (their definitions kept), disable the user triggers, TRUNCATE (so COPY may FREEZE: rows
 *   are written frozen and all-visible, so no VACUUM has to rewrite 10M rows' hint bits
 *   later; not into a partitioned table, which takes no FREEZE), COPY, re-create the indexes,
 *   enable the triggers. The months the data spans get their partitions first (migration 0911). The derived tables the disabled
 *   triggers would have kept are then rebuilt (see `rebuildDerived`), and everything VACUUM
 *   ANALYZEd. A table that already holds events gets COPY with its indexes and triggers in
 *   place, in --batch chunks so each statement trigger's transition table stays small.
 * - PGlite: INSERT ... SELECT FROM jsonb_to_recordset, --batch rows per statement.
 *
 *   npm run seed:events -- --events 1000000 [--collection bench] [--interactions 10]
 *     [--users events/10] [--days 30] [--journey-users events/10] [--batch 100000] [--run r1]
 *
 * Against DATABASE_URL (PostgreSQL) or DATA_DIR (PGlite), migrating first. What it creates:
 * - the collection (if missing), interaction types bench-0..bench-(k-1) of app `bench`, each
 *   with outcomes success 60 % / fail 30 % / skip 10 % and metadata {score: 0..96}, spread
 *   over --days before the end and over --users users;
 * - journey `jrn_bench` with steps s1..s4 (journey-step1..4, outcome success) and its events:
 *   every journey user enters (an event carrying journeyId; each of its journey events has
 *   metadata {plan: plan-0..plan-9}, which the journey declares in breakdownProperties); 60 %
 *   complete s1 1–50 min later, 40 % also s2 an hour after entry, 20 % also s3 two hours
 *   after, 10 % also s4 three hours after. Noise that must not count: 3 % of entrants have
 *   a journey-step2 success 30 s after entry, before any step-1 event; 5 % have one
 *   journey-step1..4 event with outcome fail.
 *   These count toward --events;
 * - per user, 2 % have no contact_id and 3 % contact `contact-<n>` instead of `user-<n>`, so
 *   idField=contactId counts differently from userId.
 * Event ids are `seed-<run>-...`, unique per run. Every event is at or before the end.
 */

import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { loadConfig } from '../src/config.ts';
import { type Db, makeMonths, migrate, openDatabase } from '../src/db/index.ts';

export interface SeedOptions {
  events: number;
  collection: string;
  interactions: number;
  /** Default events/10. */
  users?: number;
  days: number;
  /** Entrants of the journey; default events/10. */
  journeyUsers?: number;
  batch: number;
  run: string;
  /** The newest event's time; events spread over `days` before it. */
  end?: Date;
}

export interface SeedResult {
  events: number;
  ms: number;
  /** Milliseconds per phase, in the order they ran. */
  phases: Record<string, number>;
  /** Which load path ran: bulk (indexes dropped, triggers off), copy (in place) or insert (PGlite). */
  path: 'bulk' | 'copy' | 'insert';
}

export const JOURNEY_ID = 'jrn_bench';
export const JOURNEY_STEPS = 4;

/** A 32-bit integer hash (murmur3's finalizer) of a row number and a salt: deterministic noise. */
function mix(n: number, salt: number): number {
  let x = (n ^ Math.imul(salt, 0x9e3779b9)) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** (a * b) mod m without leaving the exact range of doubles: a * b overflows 2^53 at 10M rows. */
const mulmod = (a: number, b: number, m: number) => ((a % m) * (b % m)) % m;

/** A user's contact id: the same user always maps to the same contact (or none). */
function contactOf(u: number): string | null {
  const h = mix(u, 7) % 100;
  return h < 2 ? null : h < 5 ? `contact-${u}` : `user-${u}`;
}

/** One event as generated; collection, app and source are the same for all. */
export interface SeedRow {
  eventId: string;
  interactionId: string;
  occurredAt: string;
  userId: string;
  contactId: string | null;
  outcome: string;
  journeyId: string | null;
  metadata: string | null;
}

interface Plan {
  run: string;
  startMs: number;
  spanSeconds: number;
  users: number;
  interactions: number;
  journeyUsers: number;
  /** Events not in the journey. */
  general: number;
  batch: number;
}

/** Step k's (1-based) completion offset from entry in seconds, and who completes it. */
const STEP_BASE = [0, 60, 3600, 7200, 10800];
const stepOffset = (k: number, i: number) => STEP_BASE[k] + (k === 1 ? i % 3000 : i % 1800);
const completes = (k: number, i: number) => i % 10 < [10, 6, 4, 2, 1][k];
/** The latest offset after entry (s4 at most 10800 + 1799 s), kept clear of the end. */
const JOURNEY_TAIL_SECONDS = 4 * 3600;

function plan(o: SeedOptions, end: Date): Plan {
  const spanSeconds = Math.max(1, Math.floor(o.days * 86400));
  const journeyUsers = Math.min(o.journeyUsers ?? Math.floor(o.events / 10), Math.floor(o.events / 3));
  return {
    run: o.run,
    startMs: end.getTime() - spanSeconds * 1000,
    spanSeconds,
    users: Math.max(1, o.users ?? Math.floor(o.events / 10)),
    interactions: o.interactions,
    journeyUsers,
    general: Math.max(0, o.events - journeyEventCount(journeyUsers)),
    batch: o.batch,
  };
}

/**
 * A journey user's plan, on each of its journey events (`metadata.plan`, 10 values): what a
 * funnel breaks down by. From a hash, not from i, so that it does not follow who completes.
 */
const planOf = (i: number) => `{"plan": "plan-${mix(i, 11) % 10}"}`;

function earlyStep2(i: number) {
  return mix(i, 1) % 100 < 3;
}
function failedStep(i: number): number {
  return mix(i, 2) % 100 < 5 ? 1 + (mix(i, 3) % JOURNEY_STEPS) : 0;
}

function journeyEventCount(journeyUsers: number): number {
  let n = 0;
  for (let i = 0; i < journeyUsers; i++) {
    for (let k = 0; k <= JOURNEY_STEPS; k++) if (completes(k, i)) n++;
    if (earlyStep2(i)) n++;
    if (failedStep(i)) n++;
  }
  return n;
}

/** Every row of the data set, in insertion order: the journey's batch by batch and kind by kind, then the rest. */
function* rows(p: Plan): Generator<SeedRow> {
  const iso = (seconds: number) => new Date(p.startMs + seconds * 1000).toISOString();
  const journeySpan = Math.max(1, p.spanSeconds - JOURNEY_TAIL_SECONDS);
  const t0 = (i: number) => mulmod(i, 7919, journeySpan);
  for (let lo = 0; lo < p.journeyUsers; lo += p.batch) {
    const hi = Math.min(p.journeyUsers, lo + p.batch);
    for (let k = 0; k <= JOURNEY_STEPS; k++) {
      const interactionId = k === 0 ? 'journey-enter' : `journey-step${k}`;
      for (let i = lo; i < hi; i++) {
        if (!completes(k, i)) continue;
        yield {
          eventId: `seed-${p.run}-${interactionId}-${i}`,
          interactionId,
          occurredAt: iso(t0(i) + (k === 0 ? 0 : stepOffset(k, i))),
          userId: `user-${i}`,
          contactId: contactOf(i),
          outcome: 'success',
          journeyId: k === 0 ? JOURNEY_ID : null,
          metadata: planOf(i),
        };
      }
    }
    for (let i = lo; i < hi; i++) {
      if (earlyStep2(i)) {
        yield {
          eventId: `seed-${p.run}-journey-step2-early-${i}`,
          interactionId: 'journey-step2',
          occurredAt: iso(t0(i) + 30),
          userId: `user-${i}`,
          contactId: contactOf(i),
          outcome: 'success',
          journeyId: null,
          metadata: planOf(i),
        };
      }
      const k = failedStep(i);
      if (k) {
        yield {
          eventId: `seed-${p.run}-journey-step${k}-fail-${i}`,
          interactionId: `journey-step${k}`,
          occurredAt: iso(t0(i) + STEP_BASE[k] - 20),
          userId: `user-${i}`,
          contactId: contactOf(i),
          outcome: 'fail',
          journeyId: null,
          metadata: planOf(i),
        };
      }
    }
  }
  // Everything else: the same hashes of g as the SQL seeder before it.
  for (let g = 0; g < p.general; g++) {
    const u = ((g * 48271) % 2147483647) % p.users;
    const o = ((g * 16807) % 101) % 10;
    yield {
      eventId: `seed-${p.run}-${g}`,
      interactionId: `bench-${g % p.interactions}`,
      occurredAt: iso(mulmod(g, 2654435761, p.spanSeconds)),
      userId: `user-${u}`,
      contactId: contactOf(u),
      outcome: o < 6 ? 'success' : o < 9 ? 'fail' : 'skip',
      journeyId: null,
      metadata: `{"score": ${(g * 31) % 97}}`,
    };
  }
}

const COLUMNS =
  'collection_id, event_id, interaction_id, app_id, occurred_at, user_id, contact_id, outcome, journey_id, metadata, source';

/**
 * Rows as COPY text, about 256 KB per chunk, `limit` rows at most (then the generator is left
 * where it stopped, for the next COPY). Our values hold no tab, newline or backslash, so
 * nothing needs escaping.
 */
function* copyText(collection: string, it: Iterator<SeedRow>, limit: number): Generator<string> {
  let chunk = '';
  for (let n = 0; n < limit; n++) {
    const next = it.next();
    if (next.done) break;
    const r = next.value;
    chunk += `${collection}\t${r.eventId}\t${r.interactionId}\tbench\t${r.occurredAt}\t${r.userId}\t${r.contactId ?? '\\N'}\t${r.outcome}\t${r.journeyId ?? '\\N'}\t${r.metadata ?? '\\N'}\tadmin\n`;
    if (chunk.length > 262_144) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

async function copyRows(
  client: pg.PoolClient,
  collection: string,
  it: Iterator<SeedRow>,
  limit: number,
  freeze: boolean,
) {
  const stream = client.query(
    copyFrom(`COPY interaction_events (${COLUMNS}) FROM STDIN${freeze ? ' WITH (FREEZE)' : ''}`),
  );
  await pipeline(Readable.from(copyText(collection, it, limit)), stream);
  return stream.rowCount;
}

/**
 * Rebuilds what the user triggers of interaction_events would have kept, for one collection:
 * `interactions_rebuild_derived(collection)` where a migration defines it (it knows every
 * derived table); otherwise the one derived table there is without it, the hourly rollup, from
 * the same aggregate as its trigger (slot 0: reads sum the slots).
 */
async function rebuildDerived(client: pg.PoolClient, collection: string): Promise<string> {
  const { rows: found } = await client.query<{ ok: boolean }>(
    "SELECT to_regproc('interactions_rebuild_derived') IS NOT NULL AS ok",
  );
  if (found[0].ok) {
    await client.query('SELECT interactions_rebuild_derived($1)', [collection]);
    return 'interactions_rebuild_derived';
  }
  await client.query('BEGIN');
  await client.query('DELETE FROM interaction_counts_hourly WHERE collection_id = $1', [collection]);
  await client.query(
    `INSERT INTO interaction_counts_hourly (collection_id, interaction_id, hour, app_id, outcome, slot, n)
     SELECT collection_id, interaction_id, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'),
            coalesce(app_id, ''), coalesce(outcome, ''), 0, count(*)
     FROM interaction_events WHERE collection_id = $1 AND deleted_at IS NULL
     GROUP BY 1, 2, 3, 4, 5`,
    [collection],
  );
  await client.query('COMMIT');
  return 'interaction_counts_hourly (no interactions_rebuild_derived)';
}

/** The COPY paths; `client` is one connection of the service's pool (its search_path included). */
async function seedByCopy(
  client: pg.PoolClient,
  o: SeedOptions,
  p: Plan,
  log: (m: string) => void,
): Promise<Pick<SeedResult, 'events' | 'phases' | 'path'>> {
  const phases: Record<string, number> = {};
  let t = Date.now();
  const lap = (name: string) => {
    phases[name] = Date.now() - t;
    log(`${name}: ${(phases[name] / 1000).toFixed(1)} s`);
    t = Date.now();
  };
  const it = rows(p)[Symbol.iterator]();
  const total = p.general + journeyEventCount(p.journeyUsers);
  let written = 0;

  await client.query('BEGIN');
  // Nobody may write between the emptiness check and the load.
  await client.query('LOCK TABLE interaction_events IN ACCESS EXCLUSIVE MODE');
  const { rows: any } = await client.query('SELECT 1 FROM interaction_events LIMIT 1');
  if (any.length > 0) {
    await client.query('COMMIT');
    for (; written < total; ) {
      const n = await copyRows(client, o.collection, it, p.batch, false);
      if (n === 0) break;
      written += n;
      log(`copy: ${written} events, ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    lap('generate+copy (indexes and triggers in place)');
    await vacuum(client);
    lap('vacuum analyze');
    return { events: written, phases, path: 'copy' };
  }
  try {
    await client.query("SET LOCAL maintenance_work_mem = '512MB'");
    await client.query('SET LOCAL synchronous_commit = off');
    // Secondary indexes only: the primary key is kept (COPY FREEZE needs none dropped, and the
    // key is the cheapest index to maintain while loading: ascending bigints).
    const { rows: indexes } = await client.query<{ name: string; def: string }>(`
      SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def
      FROM pg_index i
      WHERE i.indrelid = 'interaction_events'::regclass AND NOT i.indisprimary
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
      ORDER BY 1`);
    for (const ix of indexes) await client.query(`DROP INDEX ${ix.name}`);
    await client.query('ALTER TABLE interaction_events DISABLE TRIGGER USER');
    await client.query('TRUNCATE interaction_events');
    // A partitioned table (migration 0911) takes no COPY FREEZE: its rows go to the partitions.
    const { rows: kind } = await client.query<{ partitioned: boolean }>(
      "SELECT relkind = 'p' AS partitioned FROM pg_class WHERE oid = 'interaction_events'::regclass",
    );
    const freeze = !kind[0].partitioned;
    lap(`drop ${indexes.length} indexes, disable triggers`);
    // One COPY for everything: this process generates while the server stores.
    const progress = setInterval(() => log(`copy: ${((Date.now() - t) / 1000).toFixed(0)} s`), 30_000);
    try {
      written = await copyRows(client, o.collection, it, Number.POSITIVE_INFINITY, freeze);
    } finally {
      clearInterval(progress);
    }
    lap(`generate+copy ${written} events${freeze ? ' (FREEZE)' : ' (into the partitions)'}`);
    for (const ix of indexes) {
      // A partitioned table's index is defined ON ONLY the parent; made again on the whole table.
      await client.query(ix.def.replace(' ON ONLY ', ' ON '));
      log(`  ${ix.name}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }
    lap(`index build (${indexes.length})`);
    await client.query('ALTER TABLE interaction_events ENABLE TRIGGER USER');
    await client.query('COMMIT');
    lap('commit');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
  const rebuilt = await rebuildDerived(client, o.collection);
  lap(`rebuild: ${rebuilt}`);
  await vacuum(client);
  lap('vacuum analyze');
  return { events: written, phases, path: 'bulk' };
}

/**
 * VACUUM ANALYZE of every table of the schema the events are in: planner statistics for the
 * events and whatever derived tables exist, and the visibility map set, so counts can be index-only
 * scans (autovacuum would get there on its own; a benchmark should not depend on when).
 */
async function vacuum(q: pg.PoolClient) {
  const { rows: tables } = await q.query<{ name: string }>(`
    SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables
    WHERE schemaname = (SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'interaction_events'::regclass)
    ORDER BY (tablename = 'interaction_events') DESC, tablename`);
  for (const t of tables) await q.query(`VACUUM ANALYZE ${t.name}`);
}

async function seedByInsert(db: Db, o: SeedOptions, p: Plan, log: (m: string) => void) {
  const started = Date.now();
  let written = 0;
  let batch: SeedRow[] = [];
  const flush = async () => {
    const { rowCount } = await db.query(
      `INSERT INTO interaction_events (${COLUMNS})
       SELECT $1, "eventId", "interactionId", 'bench', "occurredAt", "userId", "contactId", outcome, "journeyId",
              metadata::jsonb, 'admin'
       FROM jsonb_to_recordset($2::jsonb) AS r("eventId" text, "interactionId" text, "occurredAt" timestamptz,
         "userId" text, "contactId" text, outcome text, "journeyId" text, metadata text)`,
      [o.collection, JSON.stringify(batch)],
    );
    written += rowCount;
    batch = [];
    log(`insert: ${written} events, ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };
  for (const r of rows(p)) {
    batch.push(r);
    if (batch.length >= p.batch) await flush();
  }
  if (batch.length) await flush();
  const phases: Record<string, number> = { 'generate+insert': Date.now() - started };
  const t = Date.now();
  await db.query('VACUUM ANALYZE interaction_events');
  phases['vacuum analyze'] = Date.now() - t;
  return { events: written, phases, path: 'insert' as const };
}

export async function seedEvents(db: Db, o: SeedOptions, log: (m: string) => void = () => {}): Promise<SeedResult> {
  const started = Date.now();
  const p = plan(o, o.end ?? new Date());
  await db.query('INSERT INTO collections (id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
    o.collection,
    o.collection,
  ]);
  const types = [
    ...Array.from({ length: o.interactions }, (_, k) => `bench-${k}`),
    'journey-enter',
    ...Array.from({ length: JOURNEY_STEPS }, (_, k) => `journey-step${k + 1}`),
  ];
  for (const id of types) {
    await db.query(
      `INSERT INTO interaction_types (collection_id, id, app_id, permissions)
       VALUES ($1, $2, 'bench', '{"allowPublicSubmit": true, "allowPublicSummary": true}'::jsonb) ON CONFLICT DO NOTHING`,
      [o.collection, id],
    );
  }
  const steps = Array.from({ length: JOURNEY_STEPS }, (_, k) => ({
    id: `s${k + 1}`,
    config: { interactionId: `journey-step${k + 1}`, outcome: 'success' },
  }));
  await db.query(
    `INSERT INTO journeys (collection_id, id, app_id, name, journey_type, data)
     VALUES ($1, $2, 'bench', 'Bench journey', 'event_triggered', $3::jsonb) ON CONFLICT DO NOTHING`,
    // metadata.plan declared: progress rows keep its values, and a breakdown by it reads them.
    [o.collection, JOURNEY_ID, JSON.stringify({ steps, breakdownProperties: ['metadata.plan'] })],
  );
  // The months the data spans get their partitions first (migration 0911), or every row would
  // land in the default partition. Skipped on a schema from before the partitions.
  const { rows: partitioned } = await db.query<{ ok: boolean }>(
    "SELECT to_regproc('partition_month') IS NOT NULL AS ok",
  );
  if (partitioned[0].ok) {
    const start = new Date(p.startMs);
    const end = new Date(p.startMs + p.spanSeconds * 1000);
    const months = (end.getUTCFullYear() - start.getUTCFullYear()) * 12 + end.getUTCMonth() - start.getUTCMonth() + 1;
    await makeMonths(db, { table: 'interaction_events', column: 'occurred_at' }, start, months);
  }
  log(
    `plan: ${p.general} events of ${p.interactions} types and ${p.users} users, ` +
      `${p.journeyUsers} journey entrants (${journeyEventCount(p.journeyUsers)} journey events)`,
  );
  // openPostgres hands back its pool; COPY needs one connection of it to itself.
  const pool = (db as Db & { pool?: pg.Pool }).pool;
  let result: Pick<SeedResult, 'events' | 'phases' | 'path'>;
  if (db.kind === 'postgres' && pool) {
    const client = await pool.connect();
    try {
      result = await seedByCopy(client, o, p, log);
    } finally {
      client.release();
    }
  } else {
    result = await seedByInsert(db, o, p, log);
  }
  return { ...result, ms: Date.now() - started };
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1]);
if (isMain) {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '1000000' },
      collection: { type: 'string', default: 'bench' },
      interactions: { type: 'string', default: '10' },
      users: { type: 'string' },
      days: { type: 'string', default: '30' },
      'journey-users': { type: 'string' },
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
      users: values.users === undefined ? undefined : num('users', 1),
      days: num('days', 1),
      journeyUsers: values['journey-users'] === undefined ? undefined : num('journey-users', 0),
      batch: num('batch', 1000),
      run: String(values.run),
    },
    (m) => console.log(m),
  );
  console.log(
    `seeded ${result.events} events into ${values.collection} in ${(result.ms / 1000).toFixed(1)} s ` +
      `(${Math.round(result.events / (result.ms / 1000))} events/s) on ${db.kind}, ${result.path} path`,
  );
  for (const [phase, ms] of Object.entries(result.phases)) console.log(`  ${phase}: ${(ms / 1000).toFixed(1)} s`);
  await db.close();
}
