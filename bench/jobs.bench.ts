/**
 * Job engine scenarios on PostgreSQL, against pg-boss 10 on the same database in the same run:
 * - throughput of no-op jobs end to end (first enqueue → last completed) with 1 and 4 worker
 *   processes (JOBS_CONCURRENCY=8 each; pg-boss batchSize 8);
 * - pickup latency of a single job on idle workers (enqueue committed → handler started),
 *   p50/p99 over sequential jobs. Ours is woken by LISTEN/NOTIFY; pg-boss polls.
 * Workers are real child processes (support/job-worker-main.ts runs our JobEngine).
 * Each pair is measured in interleaved rounds (BENCH_ROUNDS, default 3), median reported.
 * Env: BENCH_JOBS (default 3000), BENCH_PICKUPS (default 100), BENCH_PEER_PICKUPS (default 30).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { type Db, migrate, openPostgres } from '../src/db/index.ts';
import { type EngineLogger, JobEngine, jobsSettings } from '../src/modules/jobs/index.ts';
import { startWorker, type WorkerProcess } from '../support/job-worker-process.ts';
import { benchDatabase, interleaved, type LoadResult, PG_URL, printTable, type Row } from './lib.ts';

const JOBS = Number(process.env.BENCH_JOBS ?? 3000);
const PICKUPS = Number(process.env.BENCH_PICKUPS ?? 100);
/** pg-boss picks up on its 0.5 s poll: fewer samples keep the run short. */
const PEER_PICKUPS = Number(process.env.BENCH_PEER_PICKUPS ?? 30);
const CONCURRENCY = 8;
const ENQUEUERS = 16;
const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as EngineLogger;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

async function inParallel(n: number, workers: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('timed out');
    await sleep(10);
  }
}

async function stopAll(workers: WorkerProcess[]) {
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
}

interface Engine {
  name: string;
  spawn(): WorkerProcess;
  enqueueNoop(i: number): Promise<unknown>;
  completedNoops(): Promise<number>;
  enqueuePickup(i: number): Promise<unknown>;
  reset(): Promise<void>;
}

async function ours(db: Db, url: string): Promise<Engine> {
  const engine = new JobEngine(db, jobsSettings({}), quiet);
  engine.registerTask({ name: 'test.noop', visible: false, handler: async () => null });
  engine.registerTask({ name: 'test.sleep', visible: true, handler: async () => null });
  await db.query("INSERT INTO collections (id, name) VALUES ('bench', 'Bench')");
  return {
    name: 'ours (LISTEN/NOTIFY)',
    spawn: () =>
      startWorker({ DATABASE_URL: url, JOBS_CONCURRENCY: String(CONCURRENCY), JOBS_POLL_INTERVAL_MS: '2000' }),
    enqueueNoop: () => engine.enqueue(db, 'bench', { task: 'test.noop' }),
    completedNoops: async () =>
      (
        await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobs WHERE task = 'test.noop' AND status = 'completed'",
        )
      ).rows[0].n,
    enqueuePickup: () => engine.enqueue(db, 'bench', { task: 'test.sleep', payload: { ms: 0 } }),
    reset: async () => void (await db.query('DELETE FROM jobs')),
  };
}

async function pgBoss(schema: string): Promise<Engine & { close(): Promise<void> }> {
  const boss = new PgBoss({ connectionString: PG_URL, schema, supervise: false, schedule: false, max: 20 });
  boss.on('error', () => {});
  await boss.start();
  await boss.createQueue('noop');
  await boss.createQueue('sleep');
  const client = new pg.Pool({ connectionString: PG_URL, max: 2 });
  return {
    name: 'pg-boss 10.4 (polling 0.5 s)',
    spawn: () =>
      startWorker({ PG_URL, PGBOSS_SCHEMA: schema, JOBS_CONCURRENCY: String(CONCURRENCY) }, 'bench/pgboss-worker.ts'),
    enqueueNoop: () => boss.send('noop', {}),
    completedNoops: async () =>
      (await client.query(`SELECT count(*)::int AS n FROM ${schema}.job WHERE name = 'noop' AND state = 'completed'`))
        .rows[0].n as number,
    enqueuePickup: (i) => boss.send('sleep', { n: i }),
    reset: async () => void (await client.query(`DELETE FROM ${schema}.job`)),
    close: async () => {
      await client.end();
      await boss.stop({ graceful: false, close: true, wait: true });
    },
  };
}

async function throughput(e: Engine, processes: number): Promise<LoadResult> {
  await e.reset();
  const workers = Array.from({ length: processes }, () => e.spawn());
  await Promise.all(workers.map((w) => w.waitFor((ev) => ev.event === 'ready', 60_000)));
  const t0 = performance.now();
  await inParallel(JOBS, ENQUEUERS, (i) => e.enqueueNoop(i));
  await waitUntil(async () => (await e.completedNoops()) >= JOBS);
  const seconds = (performance.now() - t0) / 1000;
  await stopAll(workers);
  return { rps: JOBS / seconds, p50: 0, p99: 0, unexpected: 0 };
}

/** p50/p99 from enqueue committed to handler start; `rps` carries the p50 including the enqueue call. */
async function pickup(e: Engine, count: number): Promise<LoadResult> {
  await e.reset();
  const w = e.spawn();
  await w.waitFor((ev) => ev.event === 'ready', 60_000);
  await sleep(500);
  const pickups: number[] = [];
  const endToEnd: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = Date.now();
    const res = (await e.enqueuePickup(i)) as { id?: number } | string;
    const committed = Date.now();
    const id = typeof res === 'object' && res !== null ? res.id : i;
    const started = await w.waitFor((ev) => ev.event === 'start' && ev.id === id, 10_000);
    pickups.push((started.at as number) - committed);
    endToEnd.push((started.at as number) - t0);
    await sleep(5);
  }
  await stopAll([w]);
  return { rps: pct(endToEnd, 50), p50: pct(pickups, 50), p99: pct(pickups, 99), unexpected: 0 };
}

const bench = await benchDatabase('postgres');
const bossSchema = `pgboss_${randomBytes(4).toString('hex')}`;
const db = await openPostgres({ connectionString: bench.url as string, max: ENQUEUERS });
try {
  await migrate(db);
  const engines: Engine[] = [await ours(db, bench.url as string)];
  let boss: Awaited<ReturnType<typeof pgBoss>> | undefined;
  try {
    boss = await pgBoss(bossSchema);
    engines.push(boss);
  } catch (err) {
    console.error(`pg-boss baseline unavailable: ${String(err)}`);
  }
  const [mine, peer] = engines;
  const rows: Row[] = [];
  // Interleaved rounds (ours, pg-boss, ours, …), median of each: background load hits both.
  for (const processes of [1, 4]) {
    const label = `${JOBS} no-op jobs, ${processes} worker process${processes > 1 ? 'es' : ''}`;
    const r = await interleaved<string>({
      ours: () => throughput(mine, processes),
      ...(peer ? { peer: () => throughput(peer, processes) } : {}),
    });
    if (r.peer) rows.push({ scenario: `${peer.name}: ${label}`, rps: r.peer.rps, note: 'jobs/s end to end' });
    rows.push({
      scenario: `${mine.name}: ${label}`,
      rps: r.ours.rps,
      ...(r.peer ? { baseline: 'pg-boss', ratio: r.ours.rps / r.peer.rps } : {}),
      note: 'jobs/s end to end',
    });
  }
  const lat = await interleaved<string>({
    ours: () => pickup(mine, PICKUPS),
    ...(peer ? { peer: () => pickup(peer, PEER_PICKUPS) } : {}),
  });
  for (const [key, e, n] of [
    ['ours', mine, PICKUPS],
    ['peer', peer, PEER_PICKUPS],
  ] as const) {
    if (!lat[key] || !e) continue;
    rows.push({
      scenario: `${e.name}: pickup latency, ${n} single jobs`,
      p50: lat[key].p50,
      p99: lat[key].p99,
      note: `ms from enqueue committed to handler start; p50 including the enqueue call ${lat[key].rps}`,
    });
  }
  printTable(`Jobs (PostgreSQL; median of ${process.env.BENCH_ROUNDS ?? 3} interleaved rounds)`, rows);
  await boss?.close();
} finally {
  await db.close();
  await bench.drop();
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${bossSchema} CASCADE`);
  await c.end();
}
