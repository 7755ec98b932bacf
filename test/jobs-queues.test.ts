/**
 * Flow control of named queues (concurrency, rate, pause and resume), retries of finished
 * jobs, and bulk enqueue: happy paths, refusals, and each from the wrong collection's side
 * with data on both sides.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, sleep, waitFor, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
/** Per job id: when it started and ended (ms). */
const runs = new Map<number, { start: number; end?: number; claimedAt?: number }>();
const failUntil = new Map<number, boolean>();
const holdMs = 0;

beforeAll(async () => {
  t = await createTestApp({ JOBS_BACKOFF_BASE_MS: '20', JOBS_POLL_INTERVAL_MS: '200', JOBS_CONCURRENCY: '8' });
  const engine = t.app.services.jobs.engine;
  engine.registerTask({
    name: 'test.step',
    visible: true,
    async handler(ctx) {
      runs.set(ctx.job.id, { start: Date.now() });
      if ((ctx.job.payload as { claimedAt?: boolean })?.claimedAt) {
        // When the claim started it, by the database's clock (the pace's own clock).
        const { rows } = await ctx.db.query<{ at: number }>(
          'SELECT (extract(epoch FROM locked_at) * 1000)::float8 AS at FROM jobs WHERE id = $1',
          [ctx.job.id],
        );
        (runs.get(ctx.job.id) as { claimedAt?: number }).claimedAt = rows[0].at;
      }
      await sleep((ctx.job.payload as { ms?: number })?.ms ?? holdMs);
      (runs.get(ctx.job.id) as { end?: number }).end = Date.now();
      return { ok: true };
    },
  });
  engine.registerTask({
    name: 'test.failing',
    visible: true,
    maxAttempts: 1,
    async handler(ctx) {
      if (failUntil.get(ctx.job.id) !== false) throw new Error('broken until fixed');
      return { fixed: true };
    },
  });
  ({ a, b } = await twoCollections(t));
});
afterAll(() => t.close());

const api = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  t.inject({ method, url: `/admin/collection/${c.id}${path}`, headers: c.auth, payload: payload as object });

async function bulk(c: TestCollection, jobs: Record<string, unknown>[]): Promise<number[]> {
  const res = await api(c, 'POST', '/async/jobs/bulk', { jobs });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().items.map((i: { id: number }) => i.id);
}

/** The most jobs of `ids` that ran at the same time. */
function peakOverlap(ids: number[]): number {
  const edges = ids.flatMap((id) => {
    const r = runs.get(id) as { start: number; end: number };
    return [
      [r.start, 1],
      [r.end, -1],
    ];
  });
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of edges) {
    now += d;
    peak = Math.max(peak, now);
  }
  return peak;
}

const allDone = (c: TestCollection, ids: number[], timeoutMs = 30_000) =>
  Promise.all(ids.map((id) => waitForStatus(t, c, id, ['completed'], timeoutMs)));

describe('queues: concurrency', () => {
  it('runs a queue one at a time by default, and N at a time once PATCHed, in enqueue order', async () => {
    const one = await bulk(
      a,
      Array.from({ length: 4 }, () => ({ task: 'test.step', payload: { ms: 40 }, queueName: 'solo' })),
    );
    await allDone(a, one);
    expect(peakOverlap(one)).toBe(1);

    const patched = await api(a, 'PATCH', '/queues/wide', { concurrency: 3 });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ name: 'wide', concurrency: 3, ratePerSecond: null, paused: false });
    // The same queue name in B, with its own jobs: B's settings are its own (default 1).
    const other = await bulk(
      b,
      Array.from({ length: 4 }, () => ({ task: 'test.step', payload: { ms: 40 }, queueName: 'wide' })),
    );
    const wide = await bulk(
      a,
      Array.from({ length: 9 }, () => ({ task: 'test.step', payload: { ms: 60 }, queueName: 'wide' })),
    );
    await allDone(a, wide);
    await allDone(b, other);
    expect(peakOverlap(wide)).toBe(3);
    expect(peakOverlap(other)).toBe(1);
    // In enqueue order: each job starts no earlier than the one before it.
    const starts = wide.map((id) => runs.get(id)?.start as number);
    expect([...starts].sort((x, y) => x - y)).toEqual(starts);
  });

  it('lists the collection’s queues with depth and settings, and only its own', async () => {
    const res = await api(a, 'GET', '/queues');
    expect(res.statusCode).toBe(200);
    const names = res.json().items.map((q: { name: string }) => q.name);
    // A queue is listed while it has unfinished jobs or settings of its own: 'solo' has neither now.
    expect(names).toContain('wide');
    expect(names).not.toContain('solo');
    const wide = res.json().items.find((q: { name: string }) => q.name === 'wide');
    expect(wide).toMatchObject({ concurrency: 3, pending: 0, running: 0 });
    expect(wide.finishedLastMinute).toBe(9);
    // B's queue of the same name has finished its jobs and has no settings: not listed until
    // it has a job again, and then with B's own settings and depth.
    expect((await api(b, 'GET', '/queues')).json().items).toEqual([]);
    const later = await enqueue(t, b, { task: 'test.step', queueName: 'wide', runAt: '2999-01-01T00:00:00Z' });
    const fromB = (await api(b, 'GET', '/queues')).json().items;
    expect(fromB).toEqual([expect.objectContaining({ name: 'wide', concurrency: 1, pending: 1, due: 0 })]);
    expect((await api(b, 'GET', '/queues/solo')).statusCode).toBe(404);
    await api(b, 'POST', `/jobs/${later.id}/cancel`);
  });
});

describe('queues: pause and resume', () => {
  it('starts none of a paused queue’s jobs until resumed; other queues and collections run on', async () => {
    const paused = await api(a, 'POST', '/queues/held/pause');
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({ name: 'held', paused: true, pending: 0 });
    const held = await bulk(
      a,
      Array.from({ length: 3 }, () => ({ task: 'test.step', payload: { ms: 1 }, queueName: 'held' })),
    );
    // B's queue of the same name is not paused.
    const [free] = await bulk(b, [{ task: 'test.step', payload: { ms: 1 }, queueName: 'held' }]);
    await waitForStatus(t, b, free, ['completed']);
    await sleep(400);
    const q = (await api(a, 'GET', '/queues/held')).json();
    expect(q).toMatchObject({ paused: true, pending: 3, running: 0 });
    for (const id of held) expect(runs.has(id)).toBe(false);
    const resumed = await api(a, 'POST', '/queues/held/resume');
    expect(resumed.json()).toMatchObject({ paused: false });
    await allDone(a, held, 10_000);
  });
});

describe('queues: rate limit', () => {
  it('a queue limited to 10 a second runs 100 jobs in no less than 9.9 s', async () => {
    const set = await api(a, 'PATCH', '/queues/paced', { ratePerSecond: 10, concurrency: 5 });
    expect(set.json()).toMatchObject({ ratePerSecond: 10, concurrency: 5 });
    const ids = await bulk(
      a,
      Array.from({ length: 100 }, () => ({
        task: 'test.step',
        payload: { ms: 0, claimedAt: true },
        queueName: 'paced',
      })),
    );
    await allDone(a, ids, 40_000);
    const spanOf = (at: (id: number) => number) => {
      const xs = ids.map(at).sort((x, y) => x - y);
      return xs[99] - xs[0];
    };
    // The pace decides the claims' times (the database's now() at each claim); the handlers
    // start a few ms after their claim, and that lag varies with the machine's load (9,894 ms
    // measured at the handlers once, under load, over claims 9.9 s apart), so the bound is on
    // the claims and the handlers' span is shown beside it.
    const claims = spanOf((id) => runs.get(id)?.claimedAt as number);
    const handlers = spanOf((id) => runs.get(id)?.start as number);
    console.log(`a queue at 10 a second: 100 jobs claimed over ${claims} ms, handlers started over ${handlers} ms`);
    // The rate is the contract: no faster than 10 a second. How much slower than the rate a
    // loaded machine runs them is printed above, not asserted (no test asserts a timing).
    expect(claims).toBeGreaterThanOrEqual(9_900);
  }, 60_000);

  it('null removes the limit; bad settings are refused naming the field', async () => {
    const cleared = await api(a, 'PATCH', '/queues/paced', { ratePerSecond: null });
    expect(cleared.json()).toMatchObject({ ratePerSecond: null, concurrency: 5 });
    for (const body of [{ concurrency: 0 }, { concurrency: 1001 }, { ratePerSecond: 0 }, { ratePerSecond: 'fast' }]) {
      const res = await api(a, 'PATCH', '/queues/paced', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(res.json().details.errors)).toMatch(/concurrency|ratePerSecond/);
    }
    const own = await api(a, 'PATCH', `/queues/${encodeURIComponent('journeys.rebuild:j1')}`, { concurrency: 2 });
    expect(own.statusCode).toBe(400);
    expect(own.json().message).toMatch(/service's own/);
  });
});

describe('retry', () => {
  it('queues a failed job again as new, and refuses other states', async () => {
    const { id } = await enqueue(t, a, { task: 'test.failing' });
    const failed = await waitForStatus(t, a, id, ['failed']);
    expect(failed.lastError).toMatch(/broken/);
    // From the wrong side: B cannot see or retry A's job.
    expect((await api(b, 'POST', `/jobs/${id}/retry`)).statusCode).toBe(404);
    failUntil.set(id, false);
    const res = await api(a, 'POST', `/jobs/${id}/retry`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, status: 'queued', attempts: 0, lastError: null, finishedAt: null });
    const done = await waitForStatus(t, a, id, ['completed']);
    expect(done.result).toEqual({ fixed: true });
    const again = await api(a, 'POST', `/jobs/${id}/retry`);
    expect(again.statusCode).toBe(409);
    expect(again.json().message).toMatch(/completed job cannot be retried/);
    expect((await api(a, 'POST', '/jobs/999999999/retry')).statusCode).toBe(404);
  });

  it('refuses a retry while another pending job holds its key', async () => {
    const { id } = await enqueue(t, a, { task: 'test.failing', key: 'k-retry' });
    await waitForStatus(t, a, id, ['failed']);
    const pending = await enqueue(t, a, { task: 'test.step', key: 'k-retry', runAt: '2999-01-01T00:00:00Z' });
    const res = await api(a, 'POST', `/jobs/${id}/retry`);
    expect(res.statusCode).toBe(409);
    expect(res.json().message).toMatch(/key "k-retry" is pending; cancel it/);
    await api(a, 'POST', `/jobs/${pending.id}/cancel`);
    expect((await api(a, 'POST', `/jobs/${id}/retry`)).statusCode).toBe(200);
  });

  it('retries the failed jobs a filter matches, in pages, and only the caller’s', async () => {
    const idsA = await bulk(
      a,
      Array.from({ length: 5 }, () => ({ task: 'test.failing', queueName: 'broken' })),
    );
    const idsB = await bulk(
      b,
      Array.from({ length: 3 }, () => ({ task: 'test.failing', queueName: 'broken' })),
    );
    await Promise.all(idsA.map((id) => waitForStatus(t, a, id, ['failed'])));
    await Promise.all(idsB.map((id) => waitForStatus(t, b, id, ['failed'])));
    for (const id of idsA) failUntil.set(id, false);
    const first = await api(a, 'POST', '/jobs/retry', { queueName: 'broken', limit: 3 });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ retried: 3, ids: idsA.slice(0, 3), more: true });
    const rest = await api(a, 'POST', '/jobs/retry', { queueName: 'broken' });
    expect(rest.json()).toEqual({ retried: 2, ids: idsA.slice(3), more: false });
    await allDone(a, idsA);
    // B's failed jobs were not touched.
    for (const id of idsB) expect((await api(b, 'GET', `/jobs/${id}`)).json().status).toBe('failed');
    const bad = await api(a, 'POST', '/jobs/retry', { status: 'completed' });
    expect(bad.statusCode).toBe(400);
    const order = await api(a, 'POST', '/jobs/retry', {
      from: '2026-02-01T00:00:00Z',
      to: '2026-01-01T00:00:00Z',
    });
    expect(order.statusCode).toBe(400);
  });
});

describe('bulk enqueue', () => {
  it('queues up to 1,000 jobs in one request, answering ids in order', async () => {
    const jobs = Array.from({ length: 1000 }, (_, i) => ({ task: 'test.step', payload: { ms: 0, i } }));
    const res = await api(a, 'POST', '/async/jobs/bulk', { jobs });
    expect(res.statusCode).toBe(202);
    const items = res.json().items;
    expect(items).toHaveLength(1000);
    const ids = items.map((i: { id: number }) => i.id);
    expect(new Set(ids).size).toBe(1000);
    await waitFor(async () => {
      const { rows } = await t.testDb.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::bigint[]) AND status = 'completed'",
        [ids],
      );
      return rows[0].n === 1000 ? true : undefined;
    }, 60_000);
  }, 90_000);

  it('refuses the whole list naming the first bad item, and queues nothing', async () => {
    const before = await t.testDb.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM jobs WHERE collection_id = $1',
      [a.id],
    );
    const res = await api(a, 'POST', '/async/jobs/bulk', {
      jobs: [{ task: 'test.step' }, { task: 'test.step' }, { task: 'no.such' }],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/^jobs\[2\]: Unknown task "no.such"; known tasks: .*test\.step/);
    const queue = await api(a, 'POST', '/async/jobs/bulk', { jobs: [{ task: 'test.step', queueName: 'x:y' }] });
    expect(queue.json().message).toMatch(/^jobs\[0\]: queueName "x:y"/);
    const after = await t.testDb.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM jobs WHERE collection_id = $1',
      [a.id],
    );
    expect(after.rows[0].n).toBe(before.rows[0].n);
    const tooMany = await api(a, 'POST', '/async/jobs/bulk', {
      jobs: Array.from({ length: 1001 }, () => ({ task: 'test.step' })),
    });
    expect(tooMany.statusCode).toBe(400);
    expect(JSON.stringify(tooMany.json().details.errors)).toMatch(/jobs/);
    expect((await api(a, 'POST', '/async/jobs/bulk', { jobs: [] })).statusCode).toBe(400);
    // B's key cannot reach A's collection.
    expect(
      (
        await t.inject({
          method: 'POST',
          url: `/admin/collection/${a.id}/async/jobs/bulk`,
          headers: b.auth,
          payload: { jobs: [{ task: 'test.step' }] },
        })
      ).statusCode,
    ).toBe(401);
  });
});
