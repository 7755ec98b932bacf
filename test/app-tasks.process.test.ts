/**
 * An app's workers as real processes (docs/workers.md): a service process (PGlite in a data
 * directory of its own, or a schema of TEST_DATABASE_URL) and worker processes that are HTTP
 * clients only, each the typed client's `runWorker` (support/app-worker-main.ts).
 * - Three workers drain 3,000 jobs of an app task: each job runs once and completes at its
 *   first attempt.
 * - A worker killed with SIGKILL while it holds a lease: the job is leased again once the lease
 *   has expired (5 s, the shortest) and completes once, on another worker, at attempt 2.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, type WorkerProcess } from '../support/job-worker-process.ts';
import { type RunningProcess, spawnTs } from '../support/service-process.ts';
import { callService as call, SUPER_KEY } from './helpers/app.ts';
import { type ChildStorage, childStorage } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';

let storage: ChildStorage | undefined;
let service: RunningProcess | undefined;
const workers: WorkerProcess[] = [];
const collection = 'appworkers';
let key = '';

beforeAll(async () => {
  storage = await childStorage('app-workers');
  service = await spawnTs('src/server.ts', {
    env: {
      ...storage.env,
      SUPER_ADMIN_KEY: SUPER_KEY,
      RATE_LIMIT_MAX: '1000000',
      RATE_LIMIT_COLLECTION_MAX: '1000000',
      // The sweep that hands expired leases back runs on each poll.
      JOBS_POLL_INTERVAL_MS: '200',
    },
    readyPath: '/readyz',
  });
  expect((await call(service.url, 'POST', '/platform/collections', { id: collection, name: 'Workers' })).status).toBe(
    200,
  );
  key = (await call(service.url, 'POST', `/admin/collection/${collection}/api-keys`, { name: 'k' })).body.key as string;
}, 120_000);
afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  await service?.stop();
  await storage?.release();
});

const admin = (method: string, path: string, body?: unknown) =>
  call(service?.url as string, method, `/admin/collection/${collection}${path}`, body, key);

function spawnWorker(tasks: string, concurrency: number): WorkerProcess {
  const w = startWorker(
    {
      BASE_URL: service?.url as string,
      API_KEY: key,
      COLLECTION_ID: collection,
      TASKS: tasks,
      CONCURRENCY: String(concurrency),
      WAIT_SECONDS: '5',
    },
    'support/app-worker-main.ts',
  );
  workers.push(w);
  return w;
}

interface JobView {
  id: number;
  status: string;
  attempts: number;
  result: { worker: string; n: number } | null;
}

/** Every job of `task`, through the list API, 100 a page. */
async function jobsOf(task: string): Promise<JobView[]> {
  const all: JobView[] = [];
  for (let offset = 0; ; offset += 100) {
    const page = await admin('GET', `/jobs?task=${task}&limit=100&offset=${offset}`);
    const items = page.body.items as JobView[];
    all.push(...items);
    if (items.length < 100) return all;
  }
}

describe('app workers as processes', () => {
  it('three workers drain 3,000 jobs, each run once and completed at its first attempt', async () => {
    expect((await admin('POST', '/tasks', { name: 'drain.task', leaseSeconds: 60 })).status).toBe(201);
    const ws = [spawnWorker('drain.task', 8), spawnWorker('drain.task', 8), spawnWorker('drain.task', 8)];
    await Promise.all(ws.map((w) => w.waitFor((e) => e.event === 'ready')));
    const ids: number[] = [];
    for (let batch = 0; batch < 3; batch++) {
      const res = await admin('POST', '/async/jobs/bulk', {
        jobs: Array.from({ length: 1000 }, (_, i) => ({ task: 'drain.task', payload: { n: batch * 1000 + i } })),
      });
      expect(res.status).toBe(202);
      ids.push(...(res.body.items as { id: number }[]).map((x) => x.id));
    }
    // The workers' own reports say when all have run; the service is read once they have.
    const ended = () => ws.reduce((n, w) => n + w.events.filter((e) => e.event === 'end').length, 0);
    await waitFor(async () => (ended() >= 3000 ? true : undefined), 50_000, '3,000 handlers to end');
    const jobs = await waitFor(
      async () => {
        const list = await jobsOf('drain.task');
        return list.length === 3000 && list.every((j) => j.status === 'completed') ? list : undefined;
      },
      10_000,
      '3,000 jobs completed',
    );
    expect(new Set(jobs.map((j) => j.id))).toEqual(new Set(ids));
    expect(jobs.filter((j) => j.attempts !== 1)).toEqual([]);
    // Each job's handler ran once, on one worker, and that worker's answer is the result.
    const starts = ws.flatMap((w) => w.events.filter((e) => e.event === 'start'));
    expect(starts).toHaveLength(3000);
    expect(new Set(starts.map((e) => e.id)).size).toBe(3000);
    const ranOn = new Map(starts.map((e) => [e.id, e.worker]));
    expect(jobs.filter((j) => j.result?.worker !== ranOn.get(j.id))).toEqual([]);
    // All three took part.
    expect(new Set(starts.map((e) => e.worker)).size).toBe(3);
    for (const w of ws) w.child.kill('SIGTERM');
    expect(await Promise.all(ws.map((w) => w.exited))).toEqual([0, 0, 0]);
  }, 90_000);

  it('a worker killed with SIGKILL mid-lease: the job is leased again after the lease and completed once', async () => {
    expect((await admin('POST', '/tasks', { name: 'kill.task', leaseSeconds: 5, maxAttempts: 3 })).status).toBe(201);
    const first = spawnWorker('kill.task', 1);
    await first.waitFor((e) => e.event === 'ready');
    const job = await admin('POST', '/async/jobs', { task: 'kill.task', payload: { hangOnAttempt: 1 } });
    expect(job.status).toBe(202);
    const id = job.body.id as number;
    await first.waitFor((e) => e.event === 'start' && e.id === id);
    first.child.kill('SIGKILL');
    await first.exited;
    const killedAt = Date.now();

    const second = spawnWorker('kill.task', 1);
    const end = await second.waitFor((e) => e.event === 'end' && e.id === id, 30_000);
    expect(end.attempt).toBe(2);
    const done = await waitFor(async () => {
      const r = await admin('GET', `/jobs/${id}`);
      return r.body.status === 'completed' ? r.body : undefined;
    });
    expect(done).toMatchObject({ status: 'completed', attempts: 2, result: { worker: end.worker } });
    expect(String(done.lastError)).toContain('stopped responding');
    expect(first.events.filter((e) => e.event === 'start' && e.id === id)).toHaveLength(1);
    expect(first.events.filter((e) => e.event === 'end')).toHaveLength(0);
    const onSecond = second.events.filter((e) => e.event === 'start' && e.id === id);
    expect(onSecond).toHaveLength(1);
    expect(onSecond[0].at).toBeGreaterThanOrEqual(killedAt);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 60_000);
});
