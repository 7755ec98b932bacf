/**
 * Jobs under contention, nobody killed:
 * - three live worker processes (PostgreSQL only: PGlite has one owner process) drain 1,500
 *   jobs, three rounds: every job completes in exactly one attempt. Jobs finish out of claim
 *   order (random short handlers) and heartbeats run every 50 ms, so a worker's completion
 *   batch and its heartbeat meet on the same rows all the time: statements taking those rows
 *   in different orders deadlock, and a dropped completion shows up as a second attempt;
 * - a completion the database refuses for a while (a deadlock reported by a trigger) is kept
 *   and written later, while the claim stays alive: the job is not run again (both backends).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineLogger, JobEngine, jobsSettings } from '../../src/modules/jobs/index.ts';
import { startWorker, type WorkerProcess } from '../../support/job-worker-process.ts';
import { createTestDb, onPostgres, type TestDb } from '../helpers/db.ts';
import { waitFor } from '../helpers/jobs.ts';

const JOBS = 1500;
const ROUNDS = 3;

describe.skipIf(!onPostgres)('three live worker processes (PostgreSQL; skipped on PGlite)', () => {
  let testDb: TestDb;
  const workers: WorkerProcess[] = [];
  beforeAll(async () => {
    testDb = await createTestDb();
    await testDb.db.query("INSERT INTO collections (id, name) VALUES ('busy', 'Busy')");
    await testDb.db.query('CREATE TABLE test_job_runs (job_id bigint NOT NULL, worker text NOT NULL)');
    const env = {
      DATABASE_URL: testDb.url as string,
      RECORD_RUNS: '1',
      NOOP_MAX_MS: '20',
      JOBS_CONCURRENCY: '24',
      JOBS_POLL_INTERVAL_MS: '100',
      // Frequent heartbeats keep meeting the completions; the lock timeout stays far above
      // any stall of a loaded CI machine, so no live worker loses a claim by timeout.
      JOBS_HEARTBEAT_MS: '50',
      JOBS_LOCK_TIMEOUT_MS: '10000',
    };
    for (let i = 0; i < 3; i++) workers.push(startWorker(env));
    await Promise.all(workers.map((w) => w.waitFor((e) => e.event === 'ready', 60_000)));
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await testDb?.drop();
  });

  for (let round = 1; round <= ROUNDS; round++) {
    it(`round ${round}: 1,500 jobs, each completed in exactly one attempt`, async () => {
      const db = testDb.db;
      // Visible rows: their completions keep them (as `completed`, attempts counted), where an
      // internal job's completion deletes it (migration 0504) and its attempts with it.
      const { rows: made } = await db.query<{ first: number; last: number }>(
        `WITH ins AS (
           INSERT INTO jobs (collection_id, task, payload, max_attempts, visible)
           SELECT 'busy', 'test.noop', jsonb_build_object('round', ${round}, 'i', g), 5, true
           FROM generate_series(1, ${JOBS}) g RETURNING id)
         SELECT min(id)::int AS first, max(id)::int AS last FROM ins`,
      );
      const { first, last } = made[0];
      await db.notify('jobs_new', String(Date.now()));
      await waitFor(
        async () => {
          const { rows } = await db.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM jobs WHERE id BETWEEN $1 AND $2 AND status <> 'completed'",
            [first, last],
          );
          return rows[0].n === 0 ? true : undefined;
        },
        60_000,
        `the ${JOBS} jobs of round ${round} to complete`,
      );
      const { rows } = await db.query<{ jobs: number; runs: number; retried: number; max_runs: number }>(
        `SELECT
           (SELECT count(*)::int FROM jobs WHERE id BETWEEN $1 AND $2) AS jobs,
           (SELECT count(*)::int FROM test_job_runs WHERE job_id BETWEEN $1 AND $2) AS runs,
           (SELECT count(*)::int FROM jobs WHERE id BETWEEN $1 AND $2 AND attempts <> 1) AS retried,
           (SELECT coalesce(max(c), 0)::int FROM (
              SELECT count(*) AS c FROM test_job_runs WHERE job_id BETWEEN $1 AND $2 GROUP BY job_id) x) AS max_runs`,
        [first, last],
      );
      const logs = workers
        .map((w) => w.stderr.join(''))
        .join('\n')
        .slice(-3000);
      expect(rows[0], logs).toEqual({ jobs: JOBS, runs: JOBS, retried: 0, max_runs: 1 });
    });
  }

  it('no worker logged a failed database write (deadlock or otherwise)', () => {
    const errors = workers.flatMap((w) =>
      w.stderr
        .join('')
        .split('\n')
        .filter((l) => l.includes('"level":"error"')),
    );
    expect(errors).toEqual([]);
  });
});

describe('a completion write that fails is kept and retried', () => {
  let testDb: TestDb;
  const engines: JobEngine[] = [];
  const logged: { level: string; msg?: string }[] = [];
  const log = Object.fromEntries(
    ['debug', 'info', 'warn', 'error'].map((level) => [
      level,
      (_: unknown, msg?: string) => logged.push({ level, msg }),
    ]),
  ) as unknown as EngineLogger;
  beforeAll(async () => {
    testDb = await createTestDb();
    await testDb.db.query("INSERT INTO collections (id, name) VALUES ('busy', 'Busy')");
  });
  afterAll(async () => {
    for (const e of engines) await e.stop(100);
    await testDb?.drop();
  });

  it('the database refuses the first completions for longer than the lock timeout: one run, one attempt', async () => {
    const db = testDb.db;
    // The first 7 writes that complete a job fail as a deadlock would (a sequence counts them:
    // it is not rolled back with the refused write). The retries back off 25–50 ms, 50–100 ms,
    // … 1.6–3.2 s: 3.2 to 6.4 s in all, longer than the 3 s lock timeout. The heartbeat (every
    // 50 ms) must keep the claim meanwhile; a lock timeout much shorter than that would only
    // measure how loaded the machine is.
    await db.exec(`
      CREATE SEQUENCE test_refusals;
      CREATE FUNCTION test_refuse_completion() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('test_refusals') <= 7 THEN
          RAISE EXCEPTION 'deadlock detected (refused by the test)' USING ERRCODE = '40P01';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_refuse_completion BEFORE UPDATE ON jobs
        FOR EACH ROW WHEN (NEW.status = 'completed') EXECUTE FUNCTION test_refuse_completion();`);
    const settings = jobsSettings({
      JOBS_LOCK_TIMEOUT_MS: '3000',
      JOBS_HEARTBEAT_MS: '50',
      JOBS_POLL_INTERVAL_MS: '200',
    });
    const runs: number[] = [];
    // Two engines: whichever runs the job, the other sweeps for expired claims all along.
    for (let i = 0; i < 2; i++) {
      const e = new JobEngine(db, settings, log);
      // Visible: its completion rewrites the row as `completed` (the refused write); an internal
      // task's completion deletes the row instead (migration 0504).
      e.registerTask({ name: 'test.once', visible: true, handler: async (ctx) => void runs.push(ctx.job.id) });
      engines.push(e);
      await e.start();
    }
    const { id } = await engines[0].enqueue(db, 'busy', { task: 'test.once' });
    const row = await waitFor(
      async () => {
        const { rows } = await db.query<{ status: string; attempts: number }>(
          'SELECT status, attempts FROM jobs WHERE id = $1',
          [id],
        );
        return rows[0]?.status === 'completed' ? rows[0] : undefined;
      },
      30_000,
      'the job to complete',
    );
    const { rows: refused } = await db.query<{ n: number }>('SELECT last_value::int AS n FROM test_refusals');
    expect(refused[0].n).toBeGreaterThanOrEqual(8);
    expect(row).toEqual({ status: 'completed', attempts: 1 });
    expect(runs).toEqual([id]);
    expect(logged.filter((l) => l.msg?.startsWith('jobs: could not record completions; retrying'))).toHaveLength(7);
    expect(logged.filter((l) => l.msg?.includes('reclaimed') || l.msg?.includes('claim was lost'))).toEqual([]);
  });
});
