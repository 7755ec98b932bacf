/**
 * The peer baseline's worker process for bench/jobs.bench.ts: graphile-worker 0.16.6 (the
 * last release that runs on Node 20) on the same PostgreSQL, in its own schema, with the same
 * two tasks and the same stdout protocol as support/job-worker-main.ts. It is woken by LISTEN
 * "jobs:insert" (its enqueue NOTIFYs inside the inserting transaction) and polls every 2 s,
 * as ours does; it claims one job per statement and deletes each job when it completes.
 */
import { Logger, run } from 'graphile-worker';
import { installQueryCounter } from './query-count.ts';

installQueryCounter();
const say = (event: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(event)}\n`);
const runner = await run({
  connectionString: process.env.PG_URL,
  schema: process.env.GRAPHILE_SCHEMA,
  concurrency: Number(process.env.JOBS_CONCURRENCY ?? 8),
  pollInterval: 2000,
  noHandleSignals: true,
  logger: new Logger(() => (level, message) => {
    if (level === 'error') process.stderr.write(`${message}\n`);
  }),
  taskList: {
    noop: async () => {},
    sleep: async (_payload, helpers) => {
      say({
        event: 'start',
        id: Number(helpers.job.id),
        at: Date.now(),
        atHr: performance.timeOrigin + performance.now(),
      });
    },
  },
});
process.on('SIGTERM', () => {
  void runner.stop().then(() => process.exit(0));
});
say({ event: 'ready' });
