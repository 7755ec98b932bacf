/**
 * Interactions and journey analytics over a collection of BENCH_EVENTS (default 1,000,000)
 * events on PostgreSQL (BENCH_BACKEND=pglite for the embedded database).
 * - append throughput, as a ratio to raw inserts measured in the same run from this process on
 *   the same schema: a multi-row INSERT (500 rows per statement, the bulk-load ceiling) and
 *   single-row INSERTs on 20 connections (the per-event ceiling without HTTP, auth, validation);
 * - counts-by-outcome: one interaction (~80,000 events) plain and with dedupeLatest, and the
 *   whole collection (every event) — target p99 under 200 ms;
 * - funnel report of a 3-step journey with 100,000 entered users — target p99 under 1 s.
 * Reads run before appends so that every read sees the same data set.
 */
import pg from 'pg';
import { migrate, openDatabase } from '../src/db/index.ts';
import { benchDatabase, load, printTable, type Row, row, SUPER_KEY, startService } from './lib.ts';
import { JOURNEY_ID, seedEvents } from './seed-events.ts';

const backend = (process.env.BENCH_BACKEND ?? 'postgres') as 'postgres' | 'pglite';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);

const database = await benchDatabase(backend);
try {
  const rows: Row[] = [];
  const db = await openDatabase({ databaseUrl: database.env.DATABASE_URL, dataDir: database.env.DATA_DIR ?? '' });
  await migrate(db);
  const seeded = await seedEvents(db, {
    events: EVENTS,
    collection: 'bench',
    interactions: 10,
    users: 100_000,
    days: 30,
    journeyUsers: 100_000,
    batch: 100_000,
    run: 'bench',
  });
  rows.push({
    scenario: `seed: ${seeded.events} events (npm run seed:events)`,
    rps: seeded.events / (seeded.ms / 1000),
    note: `${(seeded.ms / 1000).toFixed(1)} s, events/s`,
  });
  await db.close();

  // Baselines: raw inserts into the same table, without the service (PostgreSQL only).
  let multiRow: { name: string; result: { rps: number; p50: number; p99: number; unexpected: number } } | undefined;
  let singleRow: typeof multiRow;
  if (database.url) {
    const pool = new pg.Pool({ connectionString: database.url, max: 20 });
    const columns = '(collection_id, event_id, interaction_id, app_id, user_id, contact_id, outcome, metadata, source)';
    const rowValues = (n: number, base: number) => {
      const params: unknown[] = [];
      const tuples: string[] = [];
      for (let i = 0; i < n; i++) {
        const k = base + i;
        const p = params.length;
        tuples.push(
          `('bench', $${p + 1}, 'bench-1', 'bench', $${p + 2}, $${p + 2}, 'success', $${p + 3}::jsonb, 'admin')`,
        );
        params.push(`raw-${k}`, `user-${k % 100_000}`, JSON.stringify({ score: k % 97 }));
      }
      return { text: `INSERT INTO interaction_events ${columns} VALUES ${tuples.join(', ')}`, params };
    };
    const timed = async (workers: number, perStatement: number) => {
      const deadline = Date.now() + SECONDS * 1000;
      let inserted = 0;
      let next = perStatement === 1 ? 10_000_000 : 0;
      await Promise.all(
        Array.from({ length: workers }, async () => {
          while (Date.now() < deadline) {
            const base = next;
            next += perStatement;
            const { text, params } = rowValues(perStatement, base);
            await pool.query(text, params);
            inserted += perStatement;
          }
        }),
      );
      return inserted / SECONDS;
    };
    const multi = await timed(2, 500);
    multiRow = { name: 'raw multi-row INSERT', result: { rps: multi, p50: 0, p99: 0, unexpected: 0 } };
    rows.push({ scenario: 'baseline: raw multi-row INSERT (500 rows/statement, 2 conn)', rps: multi, note: 'rows/s' });
    const single = await timed(20, 1);
    singleRow = { name: 'raw single-row INSERT', result: { rps: single, p50: 0, p99: 0, unexpected: 0 } };
    rows.push({ scenario: 'baseline: raw single-row INSERT (20 conn)', rps: single, note: 'rows/s' });
    // Take the baselines' rows out again so the reads below see exactly the seeded set.
    await pool.query("DELETE FROM interaction_events WHERE event_id LIKE 'raw-%'");
    await pool.query('VACUUM ANALYZE interaction_events');
    await pool.end();
  }

  const service = await startService(database.env);
  try {
    const { key } = await fetch(`${service.url}/admin/collection/bench/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SUPER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    }).then((r) => r.json() as Promise<{ key: string }>);
    const headers = { authorization: `Bearer ${key}` };
    const post = (path: string, body: unknown, connections: number) =>
      load({
        url: `${service.url}/admin/collection/bench${path}`,
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        connections,
        durationSeconds: SECONDS,
        expectStatus: 200,
      });
    const probe = await fetch(`${service.url}/admin/collection/bench/journeys.analytics/${JOURNEY_ID}/funnel-report`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ stepMappings: [] }),
    });
    if (!probe.ok) throw new Error(`funnel probe: ${probe.status} ${await probe.text()}`);
    const funnel = (await probe.json()) as { steps: { enteredCount: number }[] };
    const whole = Math.round(EVENTS / 1000);

    rows.push(
      row(
        `counts-by-outcome, one interaction (~${Math.round((EVENTS * 0.81) / 10 / 1000)}k of ${whole}k events), 4 conn`,
        await post('/interactions/counts-by-outcome', { interactionId: 'bench-3' }, 4),
      ),
    );
    rows.push(
      row(
        'counts-by-outcome, one interaction, dedupeLatest, 4 conn',
        await post('/interactions/counts-by-outcome', { interactionId: 'bench-3', dedupeLatest: true }, 4),
      ),
    );
    rows.push(
      row(
        `counts-by-outcome, whole collection (${whole}k events), 4 conn`,
        await post('/interactions/counts-by-outcome', {}, 4),
      ),
    );
    rows.push(
      row(
        `counts-by-outcome, whole collection (${whole}k events), 1 conn`,
        await post('/interactions/counts-by-outcome', {}, 1),
      ),
    );
    for (const connections of [1, 2]) {
      rows.push(
        row(
          `funnel report, 3 steps, ${funnel.steps[0]?.enteredCount ?? 0} entered, ${whole}k events, ${connections} conn`,
          await post(`/journeys.analytics/${JOURNEY_ID}/funnel-report`, { stepMappings: [] }, connections),
        ),
      );
    }
    rows.push(
      row(
        'journey stats (finalStepId), 1 conn',
        await post(`/journeys.analytics/${JOURNEY_ID}/stats`, { finalStepId: 's3' }, 1),
      ),
    );

    let n = 0;
    const append = await load({
      url: `${service.url}/admin/collection/bench/interactions/append`,
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
    const appendRow = row('append (admin, 1 event/request), 20 conn', append, multiRow);
    if (singleRow) appendRow.note = `${(append.rps / singleRow.result.rps).toFixed(2)}× raw single-row INSERT`;
    rows.push(appendRow);
  } finally {
    await service.stop();
  }
  printTable(`Interactions and journeys (${backend}, ${EVENTS} events)`, rows);
} finally {
  await database.drop();
}
