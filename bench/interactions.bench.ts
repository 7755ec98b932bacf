/**
 * Interactions and journey analytics over a collection of BENCH_EVENTS (default 1,000,000)
 * events of BENCH_EVENTS/10 users, on PostgreSQL (BENCH_BACKEND=pglite for the embedded
 * database), seeded by `seedEvents` (bench/seed-events.ts: COPY on PostgreSQL).
 *
 *   npm run bench -- interactions
 *
 * Environment:
 * - BENCH_EVENTS: events to seed (default 1,000,000; journey entrants and users are a tenth).
 * - BENCH_SECONDS: load per scenario and round (default 8); BENCH_ROUNDS: interleaved rounds
 *   when there is a baseline (default 3).
 * - BENCH_SCHEMA=<name>: use that schema of the PostgreSQL database (created if missing) and
 *   keep it afterwards; seeding is skipped when collection `bench` already has events, so a
 *   10M data set is loaded once and measured many times. The writes at the end are removed
 *   again (events with a larger id deleted, then VACUUM ANALYZE), so the data set stays as
 *   seeded. Migrations the schema lacks are applied first.
 * - BENCH_BASELINE_DIR=<path>: another checkout of this repository with its node_modules
 *   (e.g. `git worktree add /work/wt-base <commit>`, node_modules symlinked). Its service
 *   runs too, against the same database, and each read scenario loads both in interleaved
 *   rounds; the ratio column is p99 ours / baseline (above 1 is slower). The API's append is
 *   loaded on both too, in the write rounds.
 * - BENCH_TIMEOUT_MS: cap of one read (default 5000). The services run with that
 *   statement_timeout (a longer query answers 503), and a probe request before each scenario
 *   that takes longer, or fails, reports the scenario as a timeout instead of loading it.
 *   Every load and scenario starts once no statement is running in the database, so that a
 *   read still running when the last load ended is not counted against the next.
 *
 * Scenarios, reads first so that every read sees the same data set:
 * - counts-by-outcome: one interaction, plain and dedupeLatest; the whole collection, plain
 *   and dedupeLatest, on 4 and 1 connections; from 7 days before the data's end, plain and
 *   dedupeLatest;
 * - the 4-step journey: funnel report (1 and 2 connections), stats with finalStepId s4, step
 *   recipients (s4 completed, s2 pending, limit 1000), funnel report from 7 days before the end;
 *   and issue 29's options path, from progress rows: a 7-day conversion window over all time,
 *   with a breakdown (metadata.plan, which the seeded journey declares, 10 values, last
 *   touch), from 7 days before the end, and trends by day over 90 days. At 10,000,000 events
 *   these take most of a second, and the code before this session's took seconds for the
 *   breakdown: set BENCH_SECONDS and BENCH_TIMEOUT_MS above them, or their rows say no answer
 *   came within the load;
 * - append throughput, as a ratio to raw inserts measured in the same run from this process on
 *   the same schema, in interleaved rounds: a multi-row INSERT (500 rows per statement, the
 *   bulk-load ceiling) and single-row INSERTs on 20 connections (the per-event ceiling
 *   without HTTP, auth, validation), each also with the user triggers off and with only the
 *   hourly rollup's, which prices the derived tables (hourly rollup, latest events, journey
 *   progress) a write keeps.
 */
import pg from 'pg';
import { migrate, openDatabase } from '../src/db/index.ts';
import { InteractionCounters, interactionsSettings } from '../src/modules/interactions/index.ts';
import {
  benchDatabase,
  comparedRow,
  interleaved,
  type LoadResult,
  load,
  printTable,
  type Row,
  type RunningProcess,
  row,
  SUPER_KEY,
  startService,
  startServiceAt,
  withSetting,
} from './lib.ts';
import { JOURNEY_ID, seedEvents } from './seed-events.ts';

const backend = (process.env.BENCH_BACKEND ?? 'postgres') as 'postgres' | 'pglite';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_MS ?? 5000);
const KEEP = process.env.BENCH_SCHEMA || undefined;
const BASELINE_DIR = process.env.BENCH_BASELINE_DIR || undefined;
const COLLECTION = 'bench';
if (backend === 'pglite' && (KEEP || BASELINE_DIR)) {
  throw new Error('BENCH_SCHEMA and BENCH_BASELINE_DIR need PostgreSQL (one PGlite data directory has one process)');
}

const database = await benchDatabase(backend, { keep: KEEP });
const rows: Row[] = [];
const report = (r: Row) => {
  rows.push(r);
  console.log(
    `${r.scenario}: p50 ${r.p50?.toFixed(1) ?? '-'} ms, p99 ${r.p99?.toFixed(1) ?? '-'} ms` +
      `${r.ratio === undefined ? '' : `, ratio ${r.ratio.toFixed(2)}`}${r.note ? ` (${r.note})` : ''}`,
  );
};
try {
  const db = await openDatabase({ databaseUrl: database.env.DATABASE_URL, dataDir: database.env.DATA_DIR ?? '' });
  await migrate(db);
  const { rows: existing } = await db.query(
    'SELECT 1 FROM interaction_events WHERE collection_id = $1 AND deleted_at IS NULL LIMIT 1',
    [COLLECTION],
  );
  if (existing.length === 0) {
    const seeded = await seedEvents(
      db,
      { events: EVENTS, collection: COLLECTION, interactions: 10, days: 30, batch: 100_000, run: 'bench' },
      (m) => console.log(`seed: ${m}`),
    );
    const phases = Object.entries(seeded.phases)
      .map(([phase, ms]) => `${phase} ${(ms / 1000).toFixed(1)} s`)
      .join(', ');
    report({
      scenario: `seed: ${seeded.events} events (${seeded.path} path)`,
      rps: seeded.events / (seeded.ms / 1000),
      note: `${(seeded.ms / 1000).toFixed(1)} s, events/s; ${phases}`,
    });
  } else {
    report({ scenario: `seed: skipped, collection ${COLLECTION} of schema ${KEEP} already has events` });
  }
  // The counters as worker processes keep them: slots of past hours folded (a no-op on a fresh
  // seed, which writes one row per counter; a kept schema's earlier writes and their removal
  // leave up to 16 rows a counter otherwise).
  const compactStarted = Date.now();
  const folded = await new InteractionCounters(db, interactionsSettings({})).compact();
  report({
    scenario: 'counter compaction before the reads',
    note: `${folded} rows folded or removed in ${((Date.now() - compactStarted) / 1000).toFixed(1)} s`,
  });
  // The data's end, for the windows "from 7 days before the end".
  const { rows: bounds } = await db.query<{ end: Date; max_id: number }>(
    'SELECT max(occurred_at) AS end, max(id) AS max_id FROM interaction_events WHERE collection_id = $1',
    [COLLECTION],
  );
  const weekBefore = new Date(bounds[0].end.getTime() - 7 * 86_400_000).toISOString();
  const seededMaxId = bounds[0].max_id;
  await db.close();

  // The services read with a statement_timeout, so a slow read ends on the server too rather
  // than running on after the client gave up and piling up under the next requests.
  const readEnv = database.env.DATABASE_URL
    ? { DATABASE_URL: withSetting(database.env.DATABASE_URL, 'statement_timeout', String(TIMEOUT_MS)) }
    : database.env;
  const service = await startService(readEnv);
  let baseline: RunningProcess | undefined;
  try {
    // The baseline answers reads only: as a worker it would claim tasks it does not have (the
    // journeys.progress rebuild of this checkout) and fail them.
    if (BASELINE_DIR) baseline = await startServiceAt(BASELINE_DIR, { ...readEnv, ROLE: 'api' });
    const { key } = await fetch(`${service.url}/admin/collection/${COLLECTION}/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SUPER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    }).then((r) => r.json() as Promise<{ key: string }>);
    const headers = { authorization: `Bearer ${key}` };

    // The journey's maintained progress is built by the journeys.progress task once the service
    // has adopted the seeded journey; until it is ready its analytics read the events. Wait for
    // it (BENCH_REBUILD_WAIT_S, default 1800) and report how long it took.
    const rebuildStarted = Date.now();
    const rebuildWait = Number(process.env.BENCH_REBUILD_WAIT_S ?? 1800) * 1000;
    for (;;) {
      const res = await fetch(`${service.url}/admin/collection/${COLLECTION}/journeys.analytics/${JOURNEY_ID}/stats`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: '{}',
      });
      await res.arrayBuffer();
      if (res.headers.get('x-analytics-source') === 'maintained') {
        report({
          scenario: 'journey progress ready (journeys.progress task after start)',
          note: `${((Date.now() - rebuildStarted) / 1000).toFixed(1)} s waited`,
        });
        break;
      }
      if (Date.now() - rebuildStarted > rebuildWait) {
        report({ scenario: 'journey progress not ready', note: `after ${rebuildWait / 1000} s: the events answer` });
        break;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }

    /** One request, to check the answer and the time before loading: null when over the cap or failed. */
    const probe = async (base: string, path: string, body: unknown) => {
      const started = Date.now();
      try {
        const res = await fetch(`${base}/admin/collection/${COLLECTION}${path}`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(TIMEOUT_MS + 2000),
        });
        const text = await res.text();
        const ms = Date.now() - started;
        if (res.status !== 200) return { ms, status: res.status, error: text.slice(0, 200) };
        // Which data answered (maintained counters or the events), as the service says.
        const source = res.headers.get('x-analytics-source') ?? undefined;
        return { ms, status: 200, json: JSON.parse(text) as unknown, source };
      } catch (err) {
        return { ms: Date.now() - started, status: 0, error: String(err) };
      }
    };
    /**
     * Waits until no other statement is running in the database: a read still running when a
     * load ends (an answer slower than the load's seconds) would otherwise run on into the next
     * load, up to the statement timeout, and be counted against whoever comes next.
     */
    const settle = async () => {
      if (!database.url) return;
      const c = new pg.Client({ connectionString: database.url });
      await c.connect();
      try {
        const until = Date.now() + TIMEOUT_MS + 5000;
        while (Date.now() < until) {
          const { rows } = await c.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()
               AND backend_type = 'client backend' AND query NOT ILIKE 'LISTEN%'`,
          );
          if (rows[0].n === 0) return;
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        await c.end();
      }
    };
    const post = (base: string, path: string, body: unknown, connections: number) => async () => {
      const r = await load({
        url: `${base}/admin/collection/${COLLECTION}${path}`,
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        connections,
        durationSeconds: SECONDS,
        expectStatus: 200,
        timeoutSeconds: Math.ceil(TIMEOUT_MS / 1000) + 5,
      });
      await settle();
      return r;
    };
    const failedNote = (r: LoadResult) =>
      r.unexpected > 0 ? `${r.unexpected} failed (statement_timeout 503 or client timeout)` : undefined;

    /**
     * One read scenario: a probe on each service (its answer labels the row), then the load,
     * interleaved with the baseline's when there is one. Returns our probe's answer.
     */
    const scenario = async (
      label: (answer: unknown) => string,
      path: string,
      body: unknown,
      connections: number,
    ): Promise<unknown> => {
      await settle();
      const ours = await probe(service.url, path, body);
      const base = baseline ? await probe(baseline.url, path, body) : undefined;
      const name = `${label(ours.json)}, ${connections} conn`;
      // 503 is the statement_timeout; 0 the probe's own (client) timeout.
      const slow = (p: typeof ours) => {
        if (p.status === 200 && p.ms <= TIMEOUT_MS) return undefined;
        if (p.status === 200 || p.status === 503 || p.status === 0) {
          return `timeout: probe ${p.ms} ms, cap ${TIMEOUT_MS} ms${p.status ? `, status ${p.status}` : ''}`;
        }
        return `failed: ${p.status} ${p.error}`;
      };
      if (slow(ours) || (base && slow(base))) {
        report({ scenario: name, note: `ours ${slow(ours) ?? `probe ${ours.ms} ms`}` });
        if (base) report({ scenario: `${name} (baseline)`, note: slow(base) ?? `probe ${base.ms} ms` });
        return ours.json;
      }
      const answered = ours.source ? `from ${ours.source}` : undefined;
      // Not a latency of 0: the load (a median round with a baseline) ended before its first answer.
      const none = (p: typeof ours) =>
        `no answer within the load's ${SECONDS} s; the probe took ${p.ms} ms (raise BENCH_SECONDS above it)`;
      if (!baseline) {
        const r = await post(service.url, path, body, connections)();
        if (r.answered === 0) {
          report({ scenario: name, note: [answered, none(ours)].filter(Boolean).join('; ') });
          return ours.json;
        }
        const out = row(name, r);
        out.note = [answered, failedNote(r)].filter(Boolean).join('; ') || undefined;
        report(out);
        return ours.json;
      }
      const w = await interleaved({
        ours: post(service.url, path, body, connections),
        base: post(baseline.url, path, body, connections),
      });
      if (w.ours.answered === 0 || w.base.answered === 0) {
        report({ scenario: name, note: [answered, none(ours)].filter(Boolean).join('; ') });
        report({ scenario: `${name} (baseline)`, note: none(base ?? ours) });
        return ours.json;
      }
      const compared = comparedRow(name, w.ours, w.base, 'baseline service');
      if (answered) compared.note = [compared.note, answered].filter(Boolean).join('; ');
      report(compared);
      const b = row(`${name} (baseline)`, w.base);
      b.note = failedNote(w.base);
      report(b);
      return ours.json;
    };

    type Counts = { outcome: string | null; count: number }[];
    const total = (a: unknown) => (Array.isArray(a) ? (a as Counts).reduce((n, c) => n + c.count, 0) : 0);
    const k = (n: number) => `${Math.round(n / 1000)}k`;
    const counts = '/interactions/counts-by-outcome';
    const whole = total(await (await probe(service.url, counts, {})).json);
    await scenario(
      (a) => `counts-by-outcome, one interaction (${k(total(a))} of ${k(whole)} events)`,
      counts,
      { interactionId: 'bench-3' },
      4,
    );
    await scenario(
      (a) => `counts-by-outcome, one interaction, dedupeLatest (${k(total(a))} latest)`,
      counts,
      { interactionId: 'bench-3', dedupeLatest: true },
      4,
    );
    for (const connections of [4, 1]) {
      await scenario((a) => `counts-by-outcome, whole collection (${k(total(a))} events)`, counts, {}, connections);
    }
    for (const connections of [4, 1]) {
      await scenario(
        (a) => `counts-by-outcome, whole collection, dedupeLatest (${k(total(a))} latest)`,
        counts,
        { dedupeLatest: true },
        connections,
      );
    }
    await scenario((a) => `counts-by-outcome, last 7 days (${k(total(a))} events)`, counts, { from: weekBefore }, 4);
    await scenario(
      (a) => `counts-by-outcome, last 7 days, dedupeLatest (${k(total(a))} latest)`,
      counts,
      { from: weekBefore, dedupeLatest: true },
      4,
    );

    const journey = `/journeys.analytics/${JOURNEY_ID}`;
    type Funnel = { steps: { enteredCount: number; completedCount: number }[] };
    const funnelLabel = (what: string) => (a: unknown) => {
      const steps = (a as Funnel | undefined)?.steps ?? [];
      return `${what}, ${steps.length} steps, ${steps[0]?.enteredCount ?? '?'} entered, completed ${steps.map((s) => s.completedCount).join('/')}`;
    };
    for (const connections of [1, 2]) {
      await scenario(funnelLabel('funnel report'), `${journey}/funnel-report`, { stepMappings: [] }, connections);
    }
    await scenario(
      (a) => `journey stats (finalStepId s4: ${(a as { completed?: number } | undefined)?.completed ?? '?'} completed)`,
      `${journey}/stats`,
      { finalStepId: 's4' },
      1,
    );
    const recipients = (a: unknown) => (Array.isArray(a) ? a.length : '?');
    await scenario(
      (a) => `step recipients, s4 completed (limit 1000: ${recipients(a)})`,
      `${journey}/steps/s4/recipients`,
      { status: 'completed', limit: 1000 },
      1,
    );
    await scenario(
      (a) => `step recipients, s2 pending (limit 1000: ${recipients(a)})`,
      `${journey}/steps/s2/recipients`,
      { status: 'pending', limit: 1000 },
      1,
    );
    await scenario(
      funnelLabel('funnel report, last 7 days'),
      `${journey}/funnel-report`,
      { stepMappings: [], periodStart: weekBefore },
      1,
    );
    // Issue 29's options path: every entrant's events gathered and walked (no maintained
    // progress answers a conversion window).
    const window7 = { stepMappings: [], conversionWindow: { value: 7, unit: 'day' } };
    await scenario(funnelLabel('funnel, 7-day conversion window'), `${journey}/funnel-report`, window7, 1);
    await scenario(
      (a) =>
        `${funnelLabel('funnel, 7-day window, breakdown by metadata.plan (last touch)')(a)}, ${(a as { breakdown?: unknown[] } | undefined)?.breakdown?.length ?? '?'} values`,
      `${journey}/funnel-report`,
      { ...window7, breakdown: { property: 'metadata.plan', attribution: 'last' } },
      1,
    );
    await scenario(
      funnelLabel('funnel, 7-day window, last 7 days'),
      `${journey}/funnel-report`,
      { ...window7, periodStart: weekBefore },
      1,
    );
    const trendsStart = new Date(bounds[0].end.getTime() - 90 * 86_400_000).toISOString();
    await scenario(
      (a) => {
        const buckets = (a as { buckets?: { entered: number }[] } | undefined)?.buckets ?? [];
        return `trends by day over 90 days, 7-day window (${buckets.length} buckets, ${buckets.reduce((n, b) => n + b.entered, 0)} entered)`;
      },
      `${journey}/trends`,
      {
        ...window7,
        periodStart: trendsStart,
        periodEnd: new Date(bounds[0].end.getTime() + 1000).toISOString(),
        interval: 'day',
      },
      1,
    );
    // Writes, after the reads: the API's append against raw inserts into the same table from
    // this process (no HTTP, auth, validation or type check), in interleaved rounds.
    const pool = database.url ? new pg.Pool({ connectionString: database.url, max: 20 }) : undefined;
    let next = 0;
    /**
     * Raw inserts from this process. `triggersOff`: with the user triggers disabled for the
     * session (session_replication_role = replica, superuser), so the hourly rollup, the latest
     * events and journey progress are not kept: what the derived tables cost a write, in the
     * same rounds. Those rows carry the event-id prefix `raw-off-` and are removed the same way.
     */
    /**
     * The same, with only the hourly rollup's triggers (what a write kept before the latest
     * events and journey progress of issue 15): the others are disabled for the round and
     * enabled again whatever happens. Those rows keep the prefix `raw-`: the latest and
     * progress triggers recompute from the events on delete, so removing rows they never saw
     * changes nothing there.
     */
    const withRollupOnly = async (run: () => Promise<LoadResult>): Promise<LoadResult> => {
      const others = ['interaction_latest', 'journey_progress'].flatMap((t) =>
        ['insert', 'update', 'delete'].map((op) => `${t}_${op}`),
      );
      const alter = (verb: string) =>
        pool!.query(`ALTER TABLE interaction_events ${others.map((t) => `${verb} TRIGGER ${t}`).join(', ')}`);
      await alter('DISABLE');
      try {
        return await run();
      } finally {
        await alter('ENABLE');
      }
    };
    const rawInsert = async (workers: number, perStatement: number, triggersOff = false): Promise<LoadResult> => {
      const deadline = Date.now() + SECONDS * 1000;
      const prefix = triggersOff ? 'raw-off' : 'raw';
      let inserted = 0;
      await Promise.all(
        Array.from({ length: workers }, async () => {
          const client = await pool!.connect();
          if (triggersOff) await client.query('SET session_replication_role = replica');
          try {
            await insertLoop(client);
          } finally {
            if (triggersOff) await client.query('RESET session_replication_role');
            client.release();
          }
        }),
      );
      async function insertLoop(client: pg.PoolClient) {
        while (Date.now() < deadline) {
          const params: unknown[] = [];
          const tuples: string[] = [];
          for (let i = 0; i < perStatement; i++) {
            const k = next++;
            const p = params.length;
            tuples.push(
              `('bench', $${p + 1}, $${p + 2}, 'bench', $${p + 3}, $${p + 3}, 'success', $${p + 4}::jsonb, 'admin')`,
            );
            params.push(`${prefix}-${k}`, `bench-${k % 10}`, `user-${k % 100_000}`, JSON.stringify({ score: k % 97 }));
          }
          await client.query(
            `INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, user_id, contact_id, outcome, metadata, source)
               VALUES ${tuples.join(', ')}`,
            params,
          );
          inserted += perStatement;
        }
      }
      return { rps: inserted / SECONDS, p50: 0, p99: 0, unexpected: 0, answered: inserted };
    };
    let n = 0;
    // The API's append, on this code's service or the baseline's (the same schema and key).
    const appendTo = (base: string) => () =>
      load({
        url: `${base}/admin/collection/bench/interactions/append`,
        method: 'POST',
        headers,
        connections: 20,
        durationSeconds: SECONDS,
        expectStatus: 200,
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({
            interactionId: `bench-${n % 10}`,
            userId: `user-${n++ % 100_000}`,
            outcome: 'success',
            metadata: { score: n % 97 },
          }),
        }),
        body: '{}',
      });
    if (pool) {
      const w = await interleaved({
        multi: () => rawInsert(2, 500),
        multiOff: () => rawInsert(2, 500, true),
        multiRollup: () => withRollupOnly(() => rawInsert(2, 500)),
        single: () => rawInsert(20, 1),
        singleOff: () => rawInsert(20, 1, true),
        singleRollup: () => withRollupOnly(() => rawInsert(20, 1)),
        append: appendTo(service.url),
        ...(baseline && { appendBase: appendTo(baseline.url) }),
      } as Record<string, () => Promise<LoadResult>>);
      report({
        scenario: 'baseline: raw multi-row INSERT (500 rows/statement, 2 conn)',
        rps: w.multi.rps,
        note: 'rows/s',
      });
      report({ scenario: 'baseline: raw single-row INSERT (20 conn)', rps: w.single.rps, note: 'rows/s' });
      const kept = (on: LoadResult, off: LoadResult) =>
        `rows/s; with the derived tables kept ${(on.rps / off.rps).toFixed(2)}× of this`;
      report({
        scenario: 'raw multi-row INSERT, triggers off (no rollup, latest, progress)',
        rps: w.multiOff.rps,
        note: kept(w.multi, w.multiOff),
      });
      report({
        scenario: 'raw single-row INSERT, triggers off (no rollup, latest, progress)',
        rps: w.singleOff.rps,
        note: kept(w.single, w.singleOff),
      });
      report({
        scenario: 'raw multi-row INSERT, hourly rollup only (as before latest and progress)',
        rps: w.multiRollup.rps,
        note: kept(w.multi, w.multiRollup),
      });
      report({
        scenario: 'raw single-row INSERT, hourly rollup only (as before latest and progress)',
        rps: w.singleRollup.rps,
        note: kept(w.single, w.singleRollup),
      });
      const appendRow = row('append (admin, 1 event/request), 20 conn', w.append, {
        name: 'raw multi-row INSERT',
        result: w.multi,
      });
      appendRow.note = `${(w.append.rps / w.single.rps).toFixed(2)}× raw single-row INSERT`;
      report(appendRow);
      if (w.appendBase) {
        report({
          ...row('append (admin, 1 event/request), 20 conn (baseline service)', w.appendBase),
          note: `this code's append ${(w.append.rps / w.appendBase.rps).toFixed(2)}× of this`,
        });
      }
      if (KEEP) {
        // A kept data set stays as seeded: the writes go (their delete trigger corrects the
        // derived counts), and VACUUM sets the visibility map the writes cleared.
        // Rows written without the triggers go without them (their delete trigger would take
        // back counts they never added); the rest with them.
        const off = await pool.connect();
        let removed = 0;
        try {
          await off.query('SET session_replication_role = replica');
          const r = await off.query(
            "DELETE FROM interaction_events WHERE collection_id = $1 AND id > $2 AND event_id LIKE 'raw-off-%'",
            [COLLECTION, seededMaxId],
          );
          removed += r.rowCount ?? 0;
          await off.query('RESET session_replication_role');
        } finally {
          off.release();
        }
        const { rowCount } = await pool.query('DELETE FROM interaction_events WHERE collection_id = $1 AND id > $2', [
          COLLECTION,
          seededMaxId,
        ]);
        removed += rowCount ?? 0;
        // The derived tables too: the writes and their removal left a dead row version behind
        // for every latest row and counter they moved (1.5M in interaction_latest after one
        // run at a million events), which a next run's dedupeLatest counts would read through
        // (p99 22-49 ms became 77-99 ms) if autovacuum had not come by yet.
        await pool.query(
          `VACUUM ANALYZE interaction_events, interaction_counts_hourly, interaction_latest,
             interaction_latest_counts, journey_progress, journey_progress_counts`,
        );
        console.log(`kept schema ${KEEP}: removed the ${removed} events the writes added`);
      }
      await pool.end();
    } else {
      report(row('append (admin, 1 event/request), 20 conn', await appendTo(service.url)()));
    }
  } finally {
    await baseline?.stop();
    await service.stop();
  }
  printTable(
    `Interactions and journeys (${backend}, ${EVENTS} events${KEEP ? `, schema ${KEEP}` : ''}${BASELINE_DIR ? `, baseline ${BASELINE_DIR}` : ''})`,
    rows,
  );
} finally {
  await database.drop();
}
