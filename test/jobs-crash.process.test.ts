/**
 * Real worker processes: a worker killed with `kill -9` in the middle of jobs; after the lock
 * timeout another worker completes them (none lost, none run by two workers at once). On
 * PostgreSQL also: two worker processes drain 10,000 jobs, each run exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Db, migrate, openPglite } from '../src/db/index.ts';
import { type EngineLogger, JobEngine, jobsSettings } from '../src/modules/jobs/index.ts';
import { startWorker, type WorkerProcess } from '../support/job-worker-process.ts';
import { createTestDb, onPostgres, type TestDb } from './helpers/db.ts';
import { sleep, waitFor } from './helpers/jobs.ts';

const LOCK_TIMEOUT_MS = 1500;
const workerEnv = {
  JOBS_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
  JOBS_POLL_INTERVAL_MS: '200',
  JOBS_CONCURRENCY: '4',
};
const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as EngineLogger;
const started: WorkerProcess[] = [];
const spawnWorker = (env: Record<string, string>) => {
  const w = startWorker({ ...workerEnv, ...env });
  started.push(w);
  return w;
};
afterAll(() => {
  for (const w of started) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
});

/** An engine that only enqueues (never started), knowing the worker's task names. */
function enqueuer(db: Db): JobEngine {
  const engine = new JobEngine(db, jobsSettings({}), quiet);
  for (const name of ['test.sleep', 'test.noop'])
    engine.registerTask({ name, visible: name === 'test.sleep', handler: async () => null });
  return engine;
}

async function jobRows(db: Db, ids: number[]) {
  const { rows } = await db.query<{ id: number; status: string; attempts: number; result: { worker: string } | null }>(
    'SELECT id, status, attempts, result FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows;
}

describe.skipIf(!onPostgres)('worker processes on PostgreSQL (skipped unless TEST_DATABASE_URL is set)', () => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await createTestDb();
    await testDb.db.query("INSERT INTO collections (id, name) VALUES ('crash', 'Crash')");
  });
  afterAll(async () => testDb?.drop());

  it('a job of a worker killed with kill -9 is completed by another worker after the lock timeout', async () => {
    const db = testDb.db;
    const env = { DATABASE_URL: testDb.url as string };
    const a = spawnWorker(env);
    const ready = await a.waitFor((e) => e.event === 'ready');
    const engine = enqueuer(db);
    const ids: number[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await engine.enqueue(db, 'crash', { task: 'test.sleep', payload: { ms: 600_000, laterMs: 20 } })).id);
    for (const id of ids) await a.waitFor((e) => e.event === 'start' && e.id === id);

    // A second worker runs beside the live first one: heartbeats keep the claims with A.
    const b = spawnWorker(env);
    const readyB = await b.waitFor((e) => e.event === 'ready');
    await sleep(LOCK_TIMEOUT_MS * 2);
    expect(b.events.filter((e) => e.event === 'start')).toEqual([]);
    expect((await jobRows(db, ids)).map((r) => r.status)).toEqual(['running', 'running', 'running']);

    a.child.kill('SIGKILL');
    await a.exited;
    const killedAt = Date.now();
    for (const id of ids) await b.waitFor((e) => e.event === 'end' && e.id === id, 30_000);
    const rows = await waitFor(async () => {
      const r = await jobRows(db, ids);
      return r.every((x) => x.status === 'completed') ? r : undefined;
    });
    for (const r of rows) {
      expect(r.attempts).toBe(2);
      expect(r.result?.worker).toBe(readyB.worker);
    }
    // Each job started once on A and once on B, and B only after A was dead.
    for (const id of ids) {
      expect(a.events.filter((e) => e.event === 'start' && e.id === id)).toHaveLength(1);
      expect(a.events.filter((e) => e.event === 'end' && e.id === id)).toHaveLength(0);
      const onB = b.events.filter((e) => e.event === 'start' && e.id === id);
      expect(onB).toHaveLength(1);
      expect(onB[0].at).toBeGreaterThanOrEqual(killedAt);
    }
    expect(ready.worker).not.toBe(readyB.worker);
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  });

  it('a named queue runs one job at a time, in order, across worker processes', async () => {
    const db = testDb.db;
    const env = { DATABASE_URL: testDb.url as string, JOBS_LOCK_TIMEOUT_MS: '60000' };
    const workers = [spawnWorker(env), spawnWorker(env)];
    await Promise.all(workers.map((w) => w.waitFor((e) => e.event === 'ready')));
    const engine = enqueuer(db);
    const ids: number[] = [];
    for (let i = 0; i < 8; i++)
      ids.push(
        (await engine.enqueue(db, 'crash', { task: 'test.sleep', queueName: 'serial', payload: { ms: 30 } })).id,
      );
    const events = async () => {
      for (const id of ids) await Promise.race(workers.map((w) => w.waitFor((e) => e.event === 'end' && e.id === id)));
      return workers.flatMap((w) => w.events.filter((e) => ids.includes(e.id as number)));
    };
    const all = await events();
    const starts = all.filter((e) => e.event === 'start').sort((x, y) => (x.at as number) - (y.at as number));
    expect(starts.map((e) => e.id)).toEqual(ids);
    for (let i = 1; i < starts.length; i++) {
      const previousEnd = all.find((e) => e.event === 'end' && e.id === starts[i - 1].id);
      expect(previousEnd?.at as number).toBeLessThanOrEqual(starts[i].at as number);
    }
    for (const w of workers) w.child.kill('SIGTERM');
    for (const w of workers) expect(await w.exited).toBe(0);
  });

  it('two worker processes drain 10,000 jobs: each runs, none twice', async () => {
    const db = testDb.db;
    await db.query('CREATE TABLE test_job_runs (job_id bigint NOT NULL, worker text NOT NULL)');
    // A lock timeout far above any heartbeat stall of a loaded CI box: this test is about
    // sharing work between live workers, not about taking over from dead ones.
    const env = {
      DATABASE_URL: testDb.url as string,
      RECORD_RUNS: '1',
      JOBS_CONCURRENCY: '8',
      JOBS_LOCK_TIMEOUT_MS: '60000',
    };
    const workers = [spawnWorker(env), spawnWorker(env)];
    const names = await Promise.all(workers.map((w) => w.waitFor((e) => e.event === 'ready')));
    await db.query(
      `INSERT INTO jobs (collection_id, task, payload, max_attempts, visible)
       SELECT 'crash', 'test.noop', jsonb_build_object('i', g), 5, false FROM generate_series(1, 10000) g`,
    );
    await db.notify('jobs_new', String(Date.now()));
    await waitFor(
      async () => {
        const { rows } = await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobs WHERE task = 'test.noop' AND status <> 'completed'",
        );
        return rows[0].n === 0 ? true : undefined;
      },
      120_000,
      'the 10,000 jobs to complete',
    );
    const { rows } = await db.query<{ runs: number; jobs: number; max_runs: number }>(
      `SELECT count(*)::int AS runs, count(DISTINCT job_id)::int AS jobs,
         (SELECT max(c)::int FROM (SELECT count(*) AS c FROM test_job_runs GROUP BY job_id) x) AS max_runs
       FROM test_job_runs`,
    );
    expect(
      rows[0],
      workers
        .map((w) => w.stderr.join(''))
        .join('\n')
        .slice(-3000),
    ).toEqual({
      runs: 10_000,
      jobs: 10_000,
      max_runs: 1,
    });
    const perWorker = await db.query<{ worker: string; n: number }>(
      'SELECT worker, count(*)::int AS n FROM test_job_runs GROUP BY worker ORDER BY worker',
    );
    // Both processes took part.
    expect(perWorker.rows.map((r) => r.worker).sort()).toEqual(names.map((n) => n.worker).sort());
    const attempts = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM jobs WHERE task = 'test.noop' AND attempts <> 1",
    );
    expect(attempts.rows[0].n).toBe(0);
    for (const w of workers) w.child.kill('SIGTERM');
    for (const w of workers) expect(await w.exited).toBe(0);
  });
});

describe.skipIf(onPostgres)('worker processes on PGlite (one owner process at a time; skipped on PostgreSQL)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'jobs-crash-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a worker killed with kill -9 mid-job; the next owner completes the job after the lock timeout', async () => {
    let db = await openPglite({ dataDir: dir });
    await migrate(db);
    await db.query("INSERT INTO collections (id, name) VALUES ('crash', 'Crash')");
    const { id } = await enqueuer(db).enqueue(db, 'crash', {
      task: 'test.sleep',
      payload: { ms: 600_000, laterMs: 20 },
    });
    await db.close();

    const a = spawnWorker({ DATA_DIR: dir });
    await a.waitFor((e) => e.event === 'start' && e.id === id, 60_000);
    a.child.kill('SIGKILL');
    await a.exited;

    const b = spawnWorker({ DATA_DIR: dir });
    const readyB = await b.waitFor((e) => e.event === 'ready', 60_000);
    const end = await b.waitFor((e) => e.event === 'end' && e.id === id, 30_000);
    expect(end.attempt).toBe(2);
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);

    db = await openPglite({ dataDir: dir });
    const [row] = await jobRows(db, [id]);
    await db.close();
    expect(row).toMatchObject({ id, status: 'completed', attempts: 2, result: { worker: readyB.worker } });
    expect(a.events.filter((e) => e.event === 'end')).toEqual([]);
  });
});
