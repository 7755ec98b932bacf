/**
 * The entry of an app's worker process (test/app-tasks.process.test.ts): an HTTP client only,
 * the typed client's `runWorker` against a running service. Reports on stdout, one JSON object
 * per line: {event: 'ready' | 'start' | 'end' | 'stopped', id?, attempt?, worker}. SIGTERM
 * stops it gracefully (no new lease; running handlers finish and are reported).
 *
 * Environment: BASE_URL, API_KEY, COLLECTION_ID, TASKS (comma-separated), CONCURRENCY,
 * WAIT_SECONDS. A job whose payload has `hangOnAttempt: n` never finishes its attempt n (the
 * process is killed meanwhile); any other job finishes after a turn of the event loop and
 * answers `{worker, n}`.
 */
import { runWorker } from '../clients/typescript/src/index.ts';

const say = (event: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ ...event, at: Date.now() })}\n`);
const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const worker = `app_${process.pid}`;

const running = runWorker({
  baseUrl: env('BASE_URL'),
  apiKey: env('API_KEY'),
  collectionId: env('COLLECTION_ID'),
  tasks: env('TASKS').split(','),
  concurrency: Number(process.env.CONCURRENCY ?? 4),
  waitSeconds: Number(process.env.WAIT_SECONDS ?? 5),
  handler: async (job) => {
    say({ event: 'start', id: job.id, attempt: job.attempt, worker });
    const payload = job.payload as { hangOnAttempt?: number; n?: number };
    if (payload.hangOnAttempt === job.attempt) await new Promise(() => {});
    await new Promise((resolve) => setImmediate(resolve));
    say({ event: 'end', id: job.id, attempt: job.attempt, worker });
    return { worker, n: payload.n ?? null };
  },
  onError: (err, where) =>
    process.stderr.write(`${JSON.stringify({ worker, stage: where.stage, job: where.job?.id, err: String(err) })}\n`),
});
process.on('SIGTERM', () => {
  void running.stop().then(() => {
    say({ event: 'stopped', worker });
    process.exit(0);
  });
});
running.finished.catch((err: unknown) => {
  process.stderr.write(`worker stopped: ${String(err)}\n`);
  process.exit(1);
});
say({ event: 'ready', worker });
