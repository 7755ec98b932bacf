/**
 * The peer baseline's worker process for bench/jobs.bench.ts: pg-boss 10 on the same
 * PostgreSQL, with the same two tasks and the same stdout protocol as
 * support/job-worker-main.ts.
 *
 * pg-boss 10 has no LISTEN: a worker loop fetches a batch, runs it, completes it in one
 * statement, and then waits out the rest of its polling interval before fetching again, even
 * when the queue is full. One loop therefore runs at most `batchSize` jobs per interval: the
 * settings of the first runs (one loop, batches of 100, 0.5 s) capped it at 200 jobs/s a
 * process, and the bench measured that cap, not pg-boss. So, for no-op throughput, pg-boss's
 * best settings:
 * - `pollingIntervalSeconds` 0.5, the lowest pg-boss allows (its MIN_POLLING_INTERVAL_MS);
 * - `batchSize` 5,000 (PGBOSS_BATCH): pg-boss sets no maximum (any integer ≥ 1), and 5,000 is
 *   more than the enqueuers can add in one interval here, so a fetch takes everything waiting;
 * - JOBS_CONCURRENCY loops on the queue (the concurrency the other engines' workers get), their
 *   first fetches staggered over one interval, so that some loop polls every 0.5 s / loops.
 * The pickup task keeps one loop taking one job per 0.5 s poll: its latency is what pg-boss's
 * polling gives a single job.
 */
import PgBoss from 'pg-boss';
import { installQueryCounter } from './query-count.ts';

installQueryCounter();

const POLL_SECONDS = 0.5;
const LOOPS = Number(process.env.JOBS_CONCURRENCY ?? 8);
const BATCH = Number(process.env.PGBOSS_BATCH ?? 5000);

const say = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);
const boss = new PgBoss({
  connectionString: process.env.PG_URL,
  schema: process.env.PGBOSS_SCHEMA,
  supervise: false,
  schedule: false,
  migrate: false,
  // A connection per loop's fetch or completion, and the pickup loop's.
  max: LOOPS + 2,
});
boss.on('error', (err) => process.stderr.write(`${String(err)}\n`));
await boss.start();
for (let loop = 0; loop < LOOPS; loop++) {
  await boss.work('noop', { batchSize: BATCH, pollingIntervalSeconds: POLL_SECONDS }, async () => {});
  await new Promise((r) => setTimeout(r, (POLL_SECONDS * 1000) / LOOPS));
}
await boss.work('sleep', { batchSize: 1, pollingIntervalSeconds: POLL_SECONDS }, async ([job]) => {
  say({
    event: 'start',
    id: (job.data as { n: number }).n,
    at: Date.now(),
    atHr: performance.timeOrigin + performance.now(),
  });
});
process.on('SIGTERM', () => {
  void boss.stop({ graceful: true, wait: true, close: true }).then(() => process.exit(0));
});
say({ event: 'ready' });
