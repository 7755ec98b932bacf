/**
 * The entry of a real job worker process (run by `startWorker` of job-worker-process.ts) for
 * the crash and multi-process tests and the jobs bench: opens the database named by
 * its environment (DATABASE_URL with a schema search path, or a PGlite DATA_DIR), starts a
 * JobEngine with two test tasks and reports on stdout, one JSON object per line:
 * {event:'ready'|'start'|'end'|'stopped', ...}. SIGTERM stops it gracefully.
 *
 * Tasks:
 * - test.sleep {ms, laterMs?}: sleeps `ms` on the first attempt (`laterMs` on later ones).
 * - test.noop: records (job id, worker id) in `test_job_runs` when RECORD_RUNS=1; with
 *   NOOP_MAX_MS it first waits a random 0..NOOP_MAX_MS ms, so jobs finish out of claim order.
 */
import { loadConfig } from '../src/config.ts';
import { migrate, openDatabase } from '../src/db/index.ts';
import { type EngineLogger, JobEngine, jobsSettings } from '../src/modules/jobs/index.ts';

const say = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);
/** Epoch ms with a fraction, for the bench's pickup latency (`at` stays Date.now() for the tests). */
const hrNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const config = loadConfig(process.env);
const db = await openDatabase(config);
await migrate(db);
const logAt = (level: string) => (obj: unknown, msg?: string) => {
  if (level === 'error' || level === 'warn') process.stderr.write(`${JSON.stringify({ level, obj, msg })}\n`);
};
const log = { debug: logAt('debug'), info: logAt('info'), warn: logAt('warn'), error: logAt('error') } as EngineLogger;
const engine = new JobEngine(db, jobsSettings(config.env, config.shutdownTimeoutMs), log);
const recordRuns = process.env.RECORD_RUNS === '1';
const noopMaxMs = Number(process.env.NOOP_MAX_MS ?? 0);

engine.registerTask({
  name: 'test.sleep',
  visible: true,
  async handler(ctx) {
    const p = ctx.job.payload as { ms: number; laterMs?: number };
    say({
      event: 'start',
      id: ctx.job.id,
      attempt: ctx.job.attempt,
      worker: engine.workerId,
      at: Date.now(),
      atHr: hrNow(),
    });
    await sleep(ctx.job.attempt === 1 ? p.ms : (p.laterMs ?? p.ms));
    say({ event: 'end', id: ctx.job.id, attempt: ctx.job.attempt, worker: engine.workerId, at: Date.now() });
    return { worker: engine.workerId, attempt: ctx.job.attempt };
  },
});
engine.registerTask({
  name: 'test.noop',
  visible: false,
  async handler(ctx) {
    if (noopMaxMs > 0) await sleep(Math.random() * noopMaxMs);
    if (recordRuns)
      await ctx.db.query('INSERT INTO test_job_runs (job_id, worker) VALUES ($1, $2)', [ctx.job.id, engine.workerId]);
    return null;
  },
});

process.on('SIGTERM', () => {
  void (async () => {
    await engine.stop(Number(process.env.STOP_TIMEOUT_MS ?? 5000));
    await db.close();
    say({ event: 'stopped' });
    process.exit(0);
  })();
});

await engine.start();
say({ event: 'ready', worker: engine.workerId, pid: process.pid });
