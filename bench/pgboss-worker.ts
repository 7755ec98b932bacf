/**
 * The peer baseline's worker process for bench/jobs.bench.ts: pg-boss 10 on the same
 * PostgreSQL, with the same two tasks and the same stdout protocol as
 * support/job-worker-main.ts. pg-boss polls (its minimum interval is 0.5 s) and fetches
 * batches: `batchSize` 100 for no-op throughput (PGBOSS_BATCH), 1 for pickup latency.
 */
import PgBoss from 'pg-boss';
import { installQueryCounter } from './query-count.ts';

installQueryCounter();

const say = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);
const boss = new PgBoss({
  connectionString: process.env.PG_URL,
  schema: process.env.PGBOSS_SCHEMA,
  supervise: false,
  schedule: false,
  migrate: false,
  max: 10,
});
boss.on('error', (err) => process.stderr.write(`${String(err)}\n`));
await boss.start();
// pg-boss's lever for throughput is the batch (one fetch, one completion per batch).
await boss.work(
  'noop',
  { batchSize: Number(process.env.PGBOSS_BATCH ?? 100), pollingIntervalSeconds: 0.5 },
  async () => {},
);
await boss.work('sleep', { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => {
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
