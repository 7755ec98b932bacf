/**
 * Interactions and journey analytics over a collection of BENCH_EVENTS (default 1,000,000)
 * events on PostgreSQL (BENCH_BACKEND=pglite for the embedded database).
 * - append throughput, as a ratio to raw inserts measured in the same run from this process on
 *   the same schema, in interleaved rounds (BENCH_ROUNDS): a multi-row INSERT (500 rows per
 *   statement, the bulk-load ceiling) and single-row INSERTs on 20 connections (the per-event
 *   ceiling without HTTP, auth, validation);
 * - counts-by-outcome: one interaction (~80,000 events) plain and with dedupeLatest, and the
 *   whole collection (every event) — target p99 under 200 ms;
 * - funnel report of a 3-step journey with 100,000 entered users — target p99 under 1 s.
 * Reads run before appends so that every read sees the same data set.
 */
import pg from 'pg';
import { migrate, openDatabase } from '../src/db/index.ts';
import {
  benchDatabase,
  interleaved,
  type LoadResult,
  load,
  printTable,
  type Row,
  row,
  SUPER_KEY,
  startService,
} from './lib.ts';
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

    // Writes, after the reads: the API's append against raw inserts into the same table from
    // this process (no HTTP, auth, validation or type check), in interleaved rounds.
    const pool = database.url ? new pg.Pool({ connectionString: database.url, max: 20 }) : undefined;
    let next = 0;
    const rawInsert = async (workers: number, perStatement: number): Promise<LoadResult> => {
      const deadline = Date.now() + SECONDS * 1000;
      let inserted = 0;
      await Promise.all(
        Array.from({ length: workers }, async () => {
          while (Date.now() < deadline) {
            const params: unknown[] = [];
            const tuples: string[] = [];
            for (let i = 0; i < perStatement; i++) {
              const k = next++;
              const p = params.length;
              tuples.push(
                `('bench', $${p + 1}, $${p + 2}, 'bench', $${p + 3}, $${p + 3}, 'success', $${p + 4}::jsonb, 'admin')`,
              );
              params.push(`raw-${k}`, `bench-${k % 10}`, `user-${k % 100_000}`, JSON.stringify({ score: k % 97 }));
            }
            await pool!.query(
              `INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, user_id, contact_id, outcome, metadata, source)
               VALUES ${tuples.join(', ')}`,
              params,
            );
            inserted += perStatement;
          }
        }),
      );
      return { rps: inserted / SECONDS, p50: 0, p99: 0, unexpected: 0 };
    };
    let n = 0;
    const append = () =>
      load({
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
    if (pool) {
      const w = await interleaved({
        multi: () => rawInsert(2, 500),
        single: () => rawInsert(20, 1),
        append,
      });
      rows.push({
        scenario: 'baseline: raw multi-row INSERT (500 rows/statement, 2 conn)',
        rps: w.multi.rps,
        note: 'rows/s',
      });
      rows.push({ scenario: 'baseline: raw single-row INSERT (20 conn)', rps: w.single.rps, note: 'rows/s' });
      const appendRow = row('append (admin, 1 event/request), 20 conn', w.append, {
        name: 'raw multi-row INSERT',
        result: w.multi,
      });
      appendRow.note = `${(w.append.rps / w.single.rps).toFixed(2)}× raw single-row INSERT`;
      rows.push(appendRow);
      await pool.end();
    } else {
      rows.push(row('append (admin, 1 event/request), 20 conn', await append()));
    }
  } finally {
    await service.stop();
  }
  printTable(`Interactions and journeys (${backend}, ${EVENTS} events)`, rows);
} finally {
  await database.drop();
}
