/**
 * Fair work under a backlog (issue 27): how long a job of collection B waits to start while
 * collection A has 100,000 `http` jobs queued against a slow receiver, against the same wait
 * with nothing of A's queued, in the same run on the same service (the baseline does the same
 * work: the same 100 jobs of B, enqueued the same way).
 *
 *   npm run bench -- jobs-fairness
 *
 * The service runs as a child process on PostgreSQL (a schema of its own) with 8 job slots, a
 * 500 ms poll and HTTP jobs allowed to reach loopback. A's receiver answers after 50 ms, so
 * A's jobs hold every slot A may hold all the time. Each of B's 100 jobs is enqueued alone,
 * 50 ms apart, as an app would; its wait is from the enqueue's answer to the moment the
 * receiver sees its request. 100 samples a phase: the "99th" is the 99th smallest of 100, and
 * the largest is the max.
 *
 * Env: BENCH_BACKLOG (100000), BENCH_B_JOBS (100).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { benchDatabase, call, fmt, seedCollection, startService } from './lib.ts';

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 100_000);
const B_JOBS = Number(process.env.BENCH_B_JOBS ?? 100);

const seen = new Map<string, number>();
let aSeen = 0;
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = Date.now();
    if (req.url === '/a') {
      aSeen++;
      setTimeout(() => res.end('ok'), 50);
      return;
    }
    seen.set(JSON.parse(Buffer.concat(chunks).toString()).tag, at);
    res.end('ok');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

const database = await benchDatabase('postgres');
const service = await startService({
  ...database.env,
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  JOBS_CONCURRENCY: '8',
  JOBS_POLL_INTERVAL_MS: '500',
  LOG_LEVEL: 'warn',
});
const sql = new pg.Client({ connectionString: database.url });
await sql.connect();

const httpJob = (path: string, tag: string) => ({
  task: 'http',
  payload: { url: `${rxUrl}${path}`, method: 'POST', body: { tag } },
});

/** B's jobs one by one, 50 ms apart; the waits, sorted. */
async function waitsOfB(key: string, phase: string): Promise<number[]> {
  const enqueued = new Map<string, number>();
  for (let n = 0; n < B_JOBS; n++) {
    const tag = `${phase}-${n}`;
    await call(service.url, 'POST', '/admin/collection/b/async/jobs', httpJob('/b', tag), key);
    enqueued.set(tag, Date.now());
    await new Promise((r) => setTimeout(r, 50));
  }
  const deadline = Date.now() + 120_000;
  while ([...enqueued.keys()].some((tag) => !seen.has(tag))) {
    if (Date.now() > deadline) throw new Error(`${phase}: B's jobs did not all start within 120 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return [...enqueued].map(([tag, at]) => (seen.get(tag) as number) - at).sort((x, y) => x - y);
}

try {
  const a = await seedCollection(service.url, 'a');
  const b = await seedCollection(service.url, 'b');
  const quiet = await waitsOfB(b.key, 'quiet');

  const started = Date.now();
  for (let i = 0; i < BACKLOG; i += 1000) {
    const jobs = Array.from({ length: Math.min(1000, BACKLOG - i) }, (_, j) => httpJob('/a', `a${i + j}`));
    await call(service.url, 'POST', '/admin/collection/a/async/jobs/bulk', { jobs }, a.key);
  }
  const enqueueS = (Date.now() - started) / 1000;
  const queuedBefore = (
    await sql.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM jobs WHERE collection_id = 'a' AND status = 'queued'",
    )
  ).rows[0].n;
  const aBefore = aSeen;
  const busy = await waitsOfB(b.key, 'backlog');
  const queuedAfter = (
    await sql.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM jobs WHERE collection_id = 'a' AND status = 'queued'",
    )
  ).rows[0].n;

  const at = (xs: number[], k: number) => xs[Math.min(xs.length, k) - 1];
  const line = (name: string, xs: number[]) =>
    `| ${name} | ${fmt(at(xs, Math.ceil(xs.length / 2)))} | ${fmt(at(xs, Math.ceil(0.99 * xs.length)))} | ${fmt(xs[xs.length - 1])} |`;
  console.log(`\n## Jobs: B's wait to start with A's backlog (${new Date().toISOString()})\n`);
  console.log(
    `A: ${BACKLOG.toLocaleString('en')} http jobs enqueued in ${enqueueS.toFixed(1)} s; ${queuedBefore.toLocaleString('en')} queued when B began, ${queuedAfter.toLocaleString('en')} after; A's requests served meanwhile: ${aSeen - aBefore}\n`,
  );
  console.log(`| B's ${B_JOBS} jobs, wait to start (ms) | p50 | 99th of ${B_JOBS} | max |`);
  console.log('|---|---:|---:|---:|');
  console.log(line('nothing of A queued (baseline)', quiet));
  console.log(line(`A's ${BACKLOG.toLocaleString('en')} queued`, busy));
  const p99 = (xs: number[]) => at(xs, Math.ceil(0.99 * xs.length));
  console.log(
    `\nratio, backlog / baseline: p50 ${(busy[Math.ceil(busy.length / 2) - 1] / quiet[Math.ceil(quiet.length / 2) - 1]).toFixed(2)}, 99th ${(p99(busy) / p99(quiet)).toFixed(2)}`,
  );
} finally {
  await sql.end();
  await service.stop();
  receiver.close();
  await database.drop();
}
