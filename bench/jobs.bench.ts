/**
 * The job engine on PostgreSQL against its peers on the same database in the same run:
 * graphile-worker 0.16.6 (the peer to beat) and pg-boss 10 (polling; its best settings for
 * throughput, bench/pgboss-worker.ts), each in a schema of
 * its own, plus the machine's ceiling.
 *
 * - Ceiling: single-row INSERT transactions per second with as many clients as there are
 *   enqueuers (16), by pgbench (C) and by a loop of node-postgres clients; a job costs at
 *   least that insert, a claim and a share of a completion, so this bounds what any of the
 *   engines can do here.
 * - Throughput of no-op jobs end to end (first enqueue → last job completed), with 1 and 4
 *   worker processes (concurrency 8 each), jobs enqueued one by one (16 enqueuers in
 *   parallel, each enqueue its own transaction) and in bulk (batches of 500 through each
 *   engine's bulk call).
 * - Pickup latency of a single job on an idle worker (enqueue committed → handler started),
 *   p50/p99 over sequential jobs.
 * - Enqueue rate: jobs enqueued per second until the last enqueue returned (workers running).
 * - Where the cost goes: every process counts its round trips and commits by kind of
 *   statement (bench/query-count.ts) and its CPU time, reported per job.
 *
 * Workers are real child processes. Each round runs every subject once, in turns (ceiling,
 * then each scenario: ours, graphile-worker, pg-boss), so background load hits all of them;
 * the tables show the median round and the range over rounds, and ratios are taken within a
 * round, then their median and range reported.
 *
 * Jobs per run: 10,000 (BENCH_JOBS), so that a run of ours lasts seconds rather than the
 * fraction of a second in which four fresh worker processes are still warming up; pg-boss
 * the same (BENCH_PEER_JOBS). Until 2026-11-26 pg-boss ran 3,000 with one loop of batches of
 * 100 a 0.5 s poll: 200 jobs/s a process, the bench's own cap (docs/benchmarks.md).
 *
 * Env: BENCH_ROUNDS (3), BENCH_JOBS (10000), BENCH_PEER_JOBS (BENCH_JOBS), BENCH_BULK_BATCH (500),
 * BENCH_PICKUPS (100), BENCH_PEER_PICKUPS (pg-boss, 30), BENCH_JOBS_ENGINES
 * (ours,graphile,pgboss; `ours+NAME=VALUE` adds our engine with one setting changed),
 * BENCH_JOBS_SCENARIOS (single,bulk), BENCH_JOBS_PROCESSES (1,4), BENCH_JOBS_CONCURRENCY (8),
 * BENCH_CEILING_SECONDS (4).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeWorkerUtils, runMigrations, Logger as WorkerLogger } from 'graphile-worker';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { type Db, migrate, openPostgres } from '../src/db/index.ts';
import { type EngineLogger, JobEngine, jobsSettings } from '../src/modules/jobs/index.ts';
import { startWorker, type WorkerProcess } from '../support/job-worker-process.ts';
import { ROOT } from '../support/service-process.ts';
import { benchDatabase, fmt, median, PG_URL, spread } from './lib.ts';
import { countsSince, installQueryCounter, type QueryCounts, queryCounts, sumCounts } from './query-count.ts';

installQueryCounter();

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const JOBS = Number(process.env.BENCH_JOBS ?? 10_000);
const PEER_JOBS = Number(process.env.BENCH_PEER_JOBS ?? JOBS);
const BULK_BATCH = Number(process.env.BENCH_BULK_BATCH ?? 500);
const PICKUPS = Number(process.env.BENCH_PICKUPS ?? 100);
/** pg-boss picks up on its 0.5 s poll: fewer samples keep the run short. */
const PEER_PICKUPS = Number(process.env.BENCH_PEER_PICKUPS ?? 30);
const CEILING_SECONDS = Number(process.env.BENCH_CEILING_SECONDS ?? 4);
const ENGINES = (process.env.BENCH_JOBS_ENGINES ?? 'ours,graphile,pgboss').split(',');
/** `pickup` alone (no single/bulk) runs only the ceiling and the pickup latencies. */
const MODES = (process.env.BENCH_JOBS_SCENARIOS ?? 'single,bulk')
  .split(',')
  .filter((m): m is Mode => m === 'single' || m === 'bulk');
const PROCESSES = (process.env.BENCH_JOBS_PROCESSES ?? '1,4').split(',').map(Number);
const CONCURRENCY = Number(process.env.BENCH_JOBS_CONCURRENCY ?? 8);
const ENQUEUERS = 16;
type Mode = 'single' | 'bulk';

const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as EngineLogger;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const countDir = mkdtempSync(join(tmpdir(), 'bench-jobs-'));

async function inParallel(n: number, workers: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function stopAll(workers: WorkerProcess[]) {
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
}

interface Engine {
  key: string;
  name: string;
  spawn(env: Record<string, string>): WorkerProcess;
  enqueueNoop(): Promise<unknown>;
  /** `n` no-op jobs in one call of the engine's bulk API. */
  enqueueNoops(n: number): Promise<unknown>;
  /**
   * Is any job not finished yet? The tables are not emptied between runs: each keeps what its
   * engine keeps (ours and pg-boss the finished jobs, graphile-worker nothing), as in service.
   * (Emptying them with DELETE made runs depend on when autovacuum last analyzed the table:
   * analyzed empty, the planner takes every statement on it for a one-row scan.)
   */
  pending(): Promise<boolean>;
  /** Enqueues a `test.sleep`-like job; answers the id its worker reports at start. */
  enqueuePickup(i: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Our engine; `variant` ("JOBS_PREFETCH=0", from an entry "ours+JOBS_PREFETCH=0" of
 * BENCH_JOBS_ENGINES) runs its workers with that setting too, on the same table, so that a
 * setting's effect is measured within the same rounds.
 */
/**
 * The worker of our engine at another commit (an entry "ours@REF" of BENCH_JOBS_ENGINES): a
 * detached worktree of REF with this checkout's node_modules, so that a change to the engine is
 * measured against the engine before it in the same rounds. Removed at the end of the run.
 */
const worktrees: string[] = [];
function workerAt(ref: string): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = mkdtempSync(join(tmpdir(), `bench-jobs-${ref}-`));
  rmSync(dir, { recursive: true, force: true });
  git('worktree', 'add', '--detach', dir, ref);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  worktrees.push(dir);
  return join(dir, 'bench/ours-worker.ts');
}

async function ours(db: Db, url: string, variant = '', ref = ''): Promise<Engine> {
  const engine = new JobEngine(db, jobsSettings({}), quiet);
  engine.registerTask({ name: 'test.noop', visible: false, handler: async () => null });
  engine.registerTask({ name: 'test.sleep', visible: true, handler: async () => null });
  await db.query("INSERT INTO collections (id, name) VALUES ('bench', 'Bench') ON CONFLICT DO NOTHING");
  const extra = Object.fromEntries(variant ? [variant.split('=', 2)] : []);
  const entry = ref ? workerAt(ref) : 'bench/ours-worker.ts';
  return {
    key: ref ? `ours@${ref}` : variant ? `ours+${variant}` : 'ours',
    name: ref ? `ours at ${ref}` : variant ? `ours (${variant})` : 'ours',
    spawn: (env) =>
      startWorker(
        {
          ...env,
          DATABASE_URL: url,
          JOBS_CONCURRENCY: String(CONCURRENCY),
          JOBS_POLL_INTERVAL_MS: '2000',
          ...extra,
        },
        entry,
      ),
    enqueueNoop: () => engine.enqueue(db, 'bench', { task: 'test.noop' }),
    enqueueNoops: (n) =>
      engine.enqueueMany(
        db,
        'bench',
        Array.from({ length: n }, () => ({ task: 'test.noop' })),
      ),
    pending: async () =>
      (
        await db.query<{ any: boolean }>(
          // Two EXISTS, so that each reads its partial index instead of the finished jobs.
          `SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('queued', 'errored'))
             OR EXISTS (SELECT 1 FROM jobs WHERE status = 'running') AS any`,
        )
      ).rows[0].any,
    enqueuePickup: async () => (await engine.enqueue(db, 'bench', { task: 'test.sleep', payload: { ms: 0 } })).id,
    close: async () => {},
  };
}

async function graphile(schema: string): Promise<Engine> {
  const logger = new WorkerLogger(() => () => {});
  await runMigrations({ connectionString: PG_URL, schema, logger });
  const utils = await makeWorkerUtils({ connectionString: PG_URL, schema, logger, maxPoolSize: ENQUEUERS });
  const q = (text: string, values?: unknown[]) => utils.withPgClient((c) => c.query(text, values));
  return {
    key: 'graphile',
    name: 'graphile-worker 0.16.6',
    spawn: (env) =>
      startWorker(
        { ...env, PG_URL, GRAPHILE_SCHEMA: schema, JOBS_CONCURRENCY: String(CONCURRENCY) },
        'bench/graphile-worker.ts',
      ),
    enqueueNoop: () => utils.addJob('noop', {}),
    // Its bulk call is the SQL function add_jobs (0.16 has no addJobs in JavaScript).
    enqueueNoops: (n) =>
      q(
        `SELECT id FROM "${schema}".add_jobs(ARRAY(
           SELECT json_populate_record(NULL::"${schema}".job_spec, x) FROM json_array_elements($1::json) x))`,
        [JSON.stringify(Array.from({ length: n }, () => ({ identifier: 'noop', payload: {} })))],
      ),
    pending: async () => (await q(`SELECT EXISTS (SELECT 1 FROM "${schema}"._private_jobs) AS any`)).rows[0].any,
    enqueuePickup: async (i) => Number((await utils.addJob('sleep', { n: i })).id),
    close: async () => {
      await utils.release();
    },
  };
}

async function pgBoss(schema: string): Promise<Engine> {
  const boss = new PgBoss({ connectionString: PG_URL, schema, supervise: false, schedule: false, max: ENQUEUERS });
  boss.on('error', () => {});
  await boss.start();
  await boss.createQueue('noop');
  await boss.createQueue('sleep');
  const client = new pg.Pool({ connectionString: PG_URL, max: 2 });
  return {
    key: 'pgboss',
    name: `pg-boss 10.4 (polling 0.5 s, ${CONCURRENCY} staggered loops, batches up to 5,000)`,
    spawn: (env) =>
      startWorker(
        { ...env, PG_URL, PGBOSS_SCHEMA: schema, JOBS_CONCURRENCY: String(CONCURRENCY) },
        'bench/pgboss-worker.ts',
      ),
    enqueueNoop: () => boss.send('noop', {}),
    enqueueNoops: (n) => boss.insert(Array.from({ length: n }, () => ({ name: 'noop', data: {} }))),
    pending: async () =>
      (
        await client.query(
          `SELECT EXISTS (SELECT 1 FROM ${schema}.job WHERE name = 'noop' AND state IN ('created', 'retry', 'active')) AS any`,
        )
      ).rows[0].any as boolean,
    enqueuePickup: async (i) => {
      await boss.send('sleep', { n: i });
      return i;
    },
    close: async () => {
      await client.end();
      await boss.stop({ graceful: false, close: true, wait: true });
    },
  };
}

/**
 * CPU time of every PostgreSQL process so far (ms; Linux /proc, 0 elsewhere). A delta over a
 * run is the server's share of it, give or take what else uses the server meanwhile.
 */
function pgCpuMs(): Map<number, number> {
  const out = new Map<number, number>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if (!stat.slice(stat.indexOf('(') + 1, close).startsWith('postgres')) continue;
      const fields = stat.slice(close + 2).split(' ');
      // utime and stime: fields 14 and 15 of the line, in clock ticks (100 a second).
      out.set(Number(pid), ((Number(fields[11]) + Number(fields[12])) * 1000) / 100);
    } catch {}
  }
  return out;
}

function pgCpuSince(before: Map<number, number>): number {
  let ms = 0;
  for (const [pid, t] of pgCpuMs()) ms += t - (before.get(pid) ?? 0);
  return ms;
}

interface Run {
  jobs: number;
  jobsPerSecond: number;
  /** The enqueuing alone: jobs per second until the last enqueue returned. */
  enqueuePerSecond: number;
  /** Per job: round trips and commits by kind, CPU of the enqueuing process and of the workers. */
  workers: QueryCounts;
  enqueuer: QueryCounts;
  /** CPU time of the PostgreSQL server over the run, ms. */
  pgCpuMs: number;
}

async function readCounts(file: string): Promise<QueryCounts> {
  for (let i = 0; i < 500 && !existsSync(file); i++) await sleep(10);
  const counts = JSON.parse(readFileSync(file, 'utf8')) as QueryCounts;
  rmSync(file, { force: true });
  return counts;
}

let runNo = 0;
async function throughput(e: Engine, processes: number, mode: Mode): Promise<Run> {
  const files = Array.from({ length: processes }, (_, i) => join(countDir, `${++runNo}-${i}.json`));
  const workers = files.map((file) => e.spawn({ BENCH_COUNT_FILE: file }));
  await Promise.all(workers.map((w) => w.waitFor((ev) => ev.event === 'ready', 60_000)));
  await sleep(300);
  for (const w of workers) w.child.kill('SIGUSR2');
  const before = queryCounts();
  const pgBefore = pgCpuMs();
  const t0 = performance.now();
  const jobs = e.key === 'pgboss' ? PEER_JOBS : JOBS;
  if (mode === 'single') await inParallel(jobs, ENQUEUERS, () => e.enqueueNoop());
  else for (let done = 0; done < jobs; done += BULK_BATCH) await e.enqueueNoops(Math.min(BULK_BATCH, jobs - done));
  const enqueued = performance.now();
  const enqueuer = countsSince(before);
  while (await e.pending()) await sleep(20);
  const seconds = (performance.now() - t0) / 1000;
  const pgCpu = pgCpuSince(pgBefore);
  for (const w of workers) w.child.kill('SIGUSR2');
  const counts = await Promise.all(files.map(readCounts));
  await stopAll(workers);
  return {
    jobs,
    jobsPerSecond: jobs / seconds,
    enqueuePerSecond: jobs / ((enqueued - t0) / 1000),
    workers: sumCounts(counts),
    enqueuer,
    pgCpuMs: pgCpu,
  };
}

/** p50/p99 from enqueue committed to handler start, and the p50 including the enqueue call. */
async function pickup(e: Engine, count: number): Promise<{ p50: number; p99: number; withEnqueue: number }> {
  const w = e.spawn({});
  await w.waitFor((ev) => ev.event === 'ready', 60_000);
  await sleep(500);
  const pickups: number[] = [];
  const endToEnd: number[] = [];
  const now = () => performance.timeOrigin + performance.now();
  for (let i = 0; i < count; i++) {
    const t0 = now();
    const id = await e.enqueuePickup(i);
    const committed = now();
    const started = await w.waitFor((ev) => ev.event === 'start' && ev.id === id, 10_000);
    const at = started.atHr ?? (started.at as number);
    pickups.push(at - committed);
    endToEnd.push(at - t0);
    await sleep(5);
  }
  await stopAll([w]);
  return { p50: pct(pickups, 50), p99: pct(pickups, 99), withEnqueue: pct(endToEnd, 50) };
}

/** Single-row insert transactions per second with ENQUEUERS clients: pgbench, and node-postgres clients. */
async function ceiling(url: string, schema: string): Promise<{ pgbench?: number; node: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query('TRUNCATE ceiling');
  await c.end();
  let pgbench: number | undefined;
  const script = join(countDir, 'ceiling.sql');
  writeFileSync(script, "INSERT INTO ceiling (payload) VALUES ('{}');\n");
  const u = new URL(PG_URL);
  const r = spawnSync(
    'pgbench',
    [
      '-n',
      '-c',
      String(ENQUEUERS),
      '-j',
      '2',
      '-T',
      String(CEILING_SECONDS),
      '-f',
      script,
      '-h',
      u.hostname,
      '-p',
      u.port || '5432',
      '-U',
      decodeURIComponent(u.username),
      u.pathname.slice(1),
    ],
    { encoding: 'utf8', env: { ...process.env, PGOPTIONS: `-c search_path=${schema}` } },
  );
  const m = /tps = ([\d.]+) \(without initial connection time\)/.exec(r.stdout ?? '');
  if (m) pgbench = Number(m[1]);
  else if (runNo === 0) console.error(`pgbench unavailable: ${r.error ?? r.stderr}`);
  const clients = await Promise.all(
    Array.from({ length: ENQUEUERS }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    }),
  );
  let n = 0;
  const until = performance.now() + CEILING_SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < until) {
        await client.query("INSERT INTO ceiling (payload) VALUES ('{}')");
        n++;
      }
    }),
  );
  const node = n / ((performance.now() - t0) / 1000);
  await Promise.all(clients.map((client) => client.end()));
  return { pgbench, node };
}

const bench = await benchDatabase('postgres');
const schema = new URL(bench.url as string).searchParams.get('options')?.match(/search_path=([^,]+)/)?.[1] as string;
const suffix = randomBytes(4).toString('hex');
const bossSchema = `pgboss_${suffix}`;
const graphileSchema = `graphile_${suffix}`;
const db = await openPostgres({ connectionString: bench.url as string, max: ENQUEUERS });
const engines: Engine[] = [];
try {
  await migrate(db);
  await db.query(
    'CREATE TABLE ceiling (id bigserial PRIMARY KEY, payload jsonb, created_at timestamptz DEFAULT now())',
  );
  for (const key of ENGINES) {
    try {
      if (key === 'ours') engines.push(await ours(db, bench.url as string));
      if (key.startsWith('ours+')) engines.push(await ours(db, bench.url as string, key.slice(5)));
      if (key.startsWith('ours@')) engines.push(await ours(db, bench.url as string, '', key.slice(5)));
      if (key === 'graphile') engines.push(await graphile(graphileSchema));
      if (key === 'pgboss') engines.push(await pgBoss(bossSchema));
    } catch (err) {
      console.error(`${key} unavailable: ${String(err)}`);
    }
  }
  const ceilings: { pgbench?: number; node: number }[] = [];
  const runs = new Map<string, Run[]>();
  const pickups = new Map<string, { p50: number; p99: number; withEnqueue: number }[]>();
  const scenarioKey = (e: Engine, processes: number, mode: Mode) => `${e.key}/${processes}/${mode}`;
  for (let round = 1; round <= ROUNDS; round++) {
    const c = await ceiling(bench.url as string, schema);
    ceilings.push(c);
    console.error(`round ${round}: ceiling pgbench ${fmt(c.pgbench)} tx/s, node-postgres ${fmt(c.node)} tx/s`);
    for (const mode of MODES)
      for (const processes of PROCESSES)
        for (const e of engines) {
          const r = await throughput(e, processes, mode);
          runs.set(scenarioKey(e, processes, mode), [...(runs.get(scenarioKey(e, processes, mode)) ?? []), r]);
          console.error(
            `round ${round}: ${e.name}, ${mode}, ${processes} process(es): ${fmt(r.jobsPerSecond)} jobs/s (enqueue ${fmt(r.enqueuePerSecond)}/s)`,
          );
        }
    for (const e of engines) {
      const p = await pickup(e, e.key === 'pgboss' ? PEER_PICKUPS : PICKUPS);
      pickups.set(e.key, [...(pickups.get(e.key) ?? []), p]);
      console.error(`round ${round}: ${e.name} pickup p50 ${fmt(p.p50, 1)} ms p99 ${fmt(p.p99, 1)} ms`);
    }
  }

  const ceilingPg = ceilings.map((c) => c.pgbench).filter((x): x is number => x !== undefined);
  const ceilingNode = ceilings.map((c) => c.node);
  console.log(`\n## Jobs (PostgreSQL; ${ROUNDS} rounds, each subject once per round, in turns)\n`);
  console.log(
    `${JOBS} no-op jobs per run (pg-boss ${PEER_JOBS}), worker processes at concurrency ${CONCURRENCY}; one by one = ${ENQUEUERS} parallel enqueuers, each enqueue its own transaction; bulk = batches of ${BULK_BATCH}.`,
  );
  console.log('Ratios are taken within each round, then their median and range over rounds shown.\n');
  console.log(
    '| scenario | jobs/s (median) | range | vs graphile-worker | range | vs pg-boss | of ceiling (pgbench) | enqueues/s meanwhile |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  console.log(
    `| ceiling: single-row INSERT transactions, ${ENQUEUERS} clients, pgbench | ${fmt(median(ceilingPg))} tx/s | ${spread(ceilingPg)} | | | | | |`,
  );
  console.log(
    `| ceiling: the same from node-postgres, ${ENQUEUERS} clients | ${fmt(median(ceilingNode))} tx/s | ${spread(ceilingNode)} | | | | | |`,
  );
  const ratio = (a: Run[] | undefined, b: Run[] | undefined) =>
    a && b ? a.map((r, i) => r.jobsPerSecond / b[i].jobsPerSecond) : [];
  for (const mode of MODES)
    for (const processes of PROCESSES)
      for (const e of engines) {
        const rs = runs.get(scenarioKey(e, processes, mode)) ?? [];
        const g = e.key === 'graphile' ? [] : ratio(rs, runs.get(`graphile/${processes}/${mode}`));
        const b = e.key === 'pgboss' ? [] : ratio(rs, runs.get(`pgboss/${processes}/${mode}`));
        const ofCeiling = rs.map((r, i) => r.jobsPerSecond / (ceilings[i].pgbench ?? Number.NaN));
        const jps = rs.map((r) => r.jobsPerSecond);
        console.log(
          `| ${e.name}: ${mode === 'single' ? 'one by one' : 'in bulk'}, ${processes} worker process${processes > 1 ? 'es' : ''} | ${fmt(median(jps))} | ${spread(jps)} | ${g.length ? `**${fmt(median(g), 2)}**` : ''} | ${spread(g, 2)} | ${b.length ? fmt(median(b), 2) : ''} | ${fmt(median(ofCeiling) * 100, 1)} % | ${fmt(median(rs.map((r) => r.enqueuePerSecond)))} |`,
        );
      }
  const variants = engines.filter((e) => e.key.startsWith('ours+'));
  if (variants.length > 0) {
    console.log('\n| scenario | ours over the variant (median) | range |');
    console.log('|---|---:|---:|');
    for (const v of variants)
      for (const mode of MODES)
        for (const processes of PROCESSES) {
          const r = ratio(runs.get(`ours/${processes}/${mode}`), runs.get(scenarioKey(v, processes, mode)));
          console.log(
            `| ours over ${v.name}: ${mode === 'single' ? 'one by one' : 'in bulk'}, ${processes} proc | ${r.length ? `**${fmt(median(r), 2)}**` : ''} | ${spread(r, 2)} |`,
          );
        }
  }
  console.log(
    '\n| pickup latency (enqueue committed → handler started) | p50 ms | p99 ms | p50 incl. the enqueue call | p50 range |',
  );
  console.log('|---|---:|---:|---:|---:|');
  for (const e of engines) {
    const ps = pickups.get(e.key) ?? [];
    console.log(
      `| ${e.name}, ${e.key === 'pgboss' ? PEER_PICKUPS : PICKUPS} single jobs on an idle worker | ${fmt(median(ps.map((p) => p.p50)), 1)} | ${fmt(median(ps.map((p) => p.p99)), 1)} | ${fmt(median(ps.map((p) => p.withEnqueue)), 1)} | ${spread(
        ps.map((p) => p.p50),
        1,
      )} |`,
    );
  }

  console.log('\n### Where the cost goes (per job, median round; counted in each process)\n');
  console.log(
    '| scenario | worker round trips | worker commits | enqueuer round trips | enqueuer commits | CPU ms: workers | CPU ms: enqueuer | CPU ms: PostgreSQL | worker statements by kind |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const mode of MODES)
    for (const processes of PROCESSES)
      for (const e of engines) {
        const rs = runs.get(scenarioKey(e, processes, mode)) ?? [];
        if (rs.length === 0) continue;
        const m = [...rs].sort((x, y) => x.jobsPerSecond - y.jobsPerSecond)[Math.floor(rs.length / 2)];
        const per = (n: number) => fmt(n / m.jobs, 2);
        const kinds = Object.entries(m.workers.byKind)
          .sort((x, y) => y[1] - x[1])
          .filter(([, n]) => n / m.jobs >= 0.005)
          .map(([k, n]) => `${k} ${per(n)}`)
          .join(', ');
        const enq = { ...m.enqueuer.byKind };
        const enqTrips = Object.entries(enq)
          .filter(([k]) => !k.startsWith('bench:'))
          .reduce((s, [, n]) => s + n, 0);
        const enqCommits = m.enqueuer.commits - (enq['bench: progress poll'] ?? 0);
        console.log(
          `| ${e.name}: ${mode === 'single' ? 'one by one' : 'in bulk'}, ${processes} proc | ${per(m.workers.statements)} | ${per(m.workers.commits)} | ${per(enqTrips)} | ${per(enqCommits)} | ${fmt(m.workers.cpuMs / m.jobs, 3)} | ${fmt(m.enqueuer.cpuMs / m.jobs, 3)} | ${fmt(m.pgCpuMs / m.jobs, 3)} | ${kinds} |`,
        );
      }
} finally {
  for (const e of engines) await e.close().catch(() => {});
  await db.close();
  await bench.drop();
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS ${bossSchema} CASCADE`);
  await c.query(`DROP SCHEMA IF EXISTS ${graphileSchema} CASCADE`);
  await c.end();
  rmSync(countDir, { recursive: true, force: true });
  for (const dir of worktrees) execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT });
}
