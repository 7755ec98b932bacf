import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, getJob, sleep, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
const attemptsSeen = new Map<number, number>();
const queueLog: { id: number; event: 'start' | 'end' }[] = [];
const startedAt = new Map<number, number>();

beforeAll(async () => {
  t = await createTestApp({ JOBS_BACKOFF_BASE_MS: '20', JOBS_POLL_INTERVAL_MS: '200', JOBS_CONCURRENCY: '4' });
  const engine = t.app.services.jobs.engine;
  engine.registerTask({
    name: 'test.echo',
    visible: true,
    async handler(ctx) {
      startedAt.set(ctx.job.id, Date.now());
      await ctx.progress({ done: 1, total: 2, message: 'half way' });
      await ctx.progress({ done: 2, total: 2 });
      return { echo: ctx.job.payload, attempt: ctx.job.attempt };
    },
  });
  engine.registerTask({
    name: 'test.flaky',
    visible: true,
    async handler(ctx) {
      const n = (attemptsSeen.get(ctx.job.id) ?? 0) + 1;
      attemptsSeen.set(ctx.job.id, n);
      const failures = (ctx.job.payload as { failures: number }).failures;
      if (n <= failures) throw new Error(`boom ${n}`);
      return { succeededOnAttempt: ctx.job.attempt };
    },
  });
  engine.registerTask({
    name: 'test.queued',
    visible: true,
    async handler(ctx) {
      queueLog.push({ id: ctx.job.id, event: 'start' });
      await sleep(15);
      queueLog.push({ id: ctx.job.id, event: 'end' });
      return null;
    },
  });
  engine.registerTask({
    name: 'test.strict',
    visible: true,
    parsePayload(payload) {
      const p = payload as { n?: unknown };
      if (typeof p.n !== 'number') throw Object.assign(new Error('payload.n must be a number'), { statusCode: 400 });
      return { n: p.n };
    },
    async handler(ctx) {
      return ctx.job.payload;
    },
  });
  engine.registerTask({ name: 'test.internal', visible: false, handler: async () => 'hidden' });
  ({ a, b } = await twoCollections(t));
});
afterAll(() => t.close());

describe('lifecycle', () => {
  it('runs a job to completed with its result and progress', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/async/jobs`,
      headers: a.auth,
      payload: { task: 'test.echo', payload: { hello: 'world' } },
    });
    expect(res.statusCode).toBe(202);
    const created = res.json();
    expect(created).toMatchObject({ task: 'test.echo' });
    // No key was sent: the answer has none (absent, not null), as the original's type says.
    expect(Object.keys(created).sort()).toEqual(['id', 'runAt', 'task']);
    expect(typeof created.id).toBe('number');
    expect(Number.isNaN(Date.parse(created.runAt))).toBe(false);
    const job = await waitForStatus(t, a, created.id, ['completed']);
    expect(job).toMatchObject({
      id: created.id,
      task: 'test.echo',
      payload: { hello: 'world' },
      priority: 0,
      attempts: 1,
      maxAttempts: 5,
      lastError: null,
      lockedAt: null,
      key: null,
      queueName: null,
      status: 'completed',
      progress: { done: 2, total: 2 },
      result: { echo: { hello: 'world' }, attempt: 1 },
    });
    expect(Date.parse(job.finishedAt)).toBeGreaterThanOrEqual(Date.parse(job.createdAt));
    const viaAsync = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/async/jobs/${created.id}`,
      headers: a.auth,
    });
    expect(viaAsync.statusCode).toBe(200);
    expect(viaAsync.json()).toEqual(job);
  });

  it('retries an errored job with backoff, then completes it', async () => {
    const { id } = await enqueue(t, a, { task: 'test.flaky', payload: { failures: 2 } });
    const job = await waitForStatus(t, a, id, ['completed']);
    expect(job.attempts).toBe(3);
    expect(job.result).toEqual({ succeededOnAttempt: 3 });
    expect(job.lastError).toBe('boom 2');
    expect(attemptsSeen.get(id)).toBe(3);
  });

  it('fails after maxAttempts, keeping the last error', async () => {
    const { id } = await enqueue(t, a, { task: 'test.flaky', payload: { failures: 99 }, maxAttempts: 3 });
    const job = await waitForStatus(t, a, id, ['failed']);
    expect(job).toMatchObject({ status: 'failed', attempts: 3, maxAttempts: 3, lastError: 'boom 3', result: null });
    expect(job.finishedAt).not.toBeNull();
    expect(attemptsSeen.get(id)).toBe(3);
  });

  it('cancels a queued job, which then never runs; a finished job cannot be cancelled', async () => {
    const runAt = new Date(Date.now() + 60_000).toISOString();
    const { id } = await enqueue(t, a, { task: 'test.echo', payload: {}, runAt });
    const cancel = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/jobs/${id}/cancel`,
      headers: a.auth,
    });
    expect(cancel.statusCode).toBe(200);
    expect(cancel.json()).toMatchObject({ id, status: 'cancelled' });
    expect(cancel.json().finishedAt).not.toBeNull();
    const again = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/jobs/${id}/cancel`,
      headers: a.auth,
    });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ errorCode: 'CONFLICT', details: { status: 'cancelled' } });
    expect(startedAt.has(id)).toBe(false);
  });
});

describe('enqueue options', () => {
  it('key: a second enqueue with the same key updates the queued job', async () => {
    const runAt = new Date(Date.now() + 60_000).toISOString();
    const first = await enqueue(t, a, { task: 'test.echo', payload: { v: 1 }, key: 'k-1', runAt });
    const second = await enqueue(t, a, { task: 'test.echo', payload: { v: 2 }, key: 'k-1', runAt, priority: 5 });
    expect(second.id).toBe(first.id);
    expect(second.key).toBe('k-1');
    const job = await getJob(t, a, first.id);
    expect(job).toMatchObject({ payload: { v: 2 }, priority: 5, key: 'k-1', status: 'queued' });
    // The same key in another collection is another job.
    const other = await enqueue(t, b, { task: 'test.echo', payload: { v: 3 }, key: 'k-1', runAt });
    expect(other.id).not.toBe(first.id);
    // Once it has run, the key is free again: a new job.
    const now = await enqueue(t, a, { task: 'test.echo', payload: { v: 4 }, key: 'k-1' });
    expect(now.id).toBe(first.id);
    await waitForStatus(t, a, first.id, ['completed']);
    const fresh = await enqueue(t, a, { task: 'test.echo', payload: { v: 5 }, key: 'k-1' });
    expect(fresh.id).not.toBe(first.id);
    expect((await waitForStatus(t, a, fresh.id, ['completed'])).result.echo).toEqual({ v: 5 });
  });

  it('queueName: jobs of one queue run one at a time, in enqueue order', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 6; i++) ids.push((await enqueue(t, a, { task: 'test.queued', queueName: 'serial' })).id);
    await waitForStatus(t, a, ids[5], ['completed']);
    for (const id of ids) expect((await getJob(t, a, id)).status).toBe('completed');
    const expected = ids.flatMap((id) => [
      { id, event: 'start' },
      { id, event: 'end' },
    ]);
    expect(queueLog).toEqual(expected);
  });

  it('runAt: a job does not start before its time', async () => {
    const runAt = new Date(Date.now() + 400);
    const { id } = await enqueue(t, a, { task: 'test.echo', runAt: runAt.toISOString() });
    expect((await getJob(t, a, id)).status).toBe('queued');
    const job = await waitForStatus(t, a, id, ['completed']);
    expect(startedAt.get(id)).toBeGreaterThanOrEqual(runAt.getTime());
    expect(job.runAt).toBe(runAt.toISOString());
  });
});

describe('validation and access', () => {
  it('refuses an unknown or internal task with 400 naming the known ones', async () => {
    for (const task of ['nope.task', 'test.internal']) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/async/jobs`,
        headers: a.auth,
        payload: { task },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain('test.echo');
      expect(res.json().details.knownTasks).toEqual(expect.arrayContaining(['test.echo', 'test.flaky']));
      expect(res.json().details.knownTasks).not.toContain('test.internal');
    }
  });
});

describe('access and isolation', () => {
  let jobOfA: number;
  beforeAll(async () => {
    jobOfA = (await enqueue(t, a, { task: 'test.echo', runAt: new Date(Date.now() + 600_000).toISOString() })).id;
  });

  const routes = (collectionId: string, id: number) => [
    { method: 'POST' as const, url: `/admin/collection/${collectionId}/async/jobs`, payload: { task: 'test.echo' } },
    { method: 'GET' as const, url: `/admin/collection/${collectionId}/async/jobs/${id}` },
    { method: 'GET' as const, url: `/admin/collection/${collectionId}/jobs/${id}` },
    { method: 'GET' as const, url: `/admin/collection/${collectionId}/jobs` },
    { method: 'POST' as const, url: `/admin/collection/${collectionId}/jobs/${id}/cancel` },
  ];

  it('answers 401 without a credential and with another collection’s key', async () => {
    for (const r of routes(a.id, jobOfA)) {
      const none = await t.inject(r);
      expect(none.statusCode, `${r.method} ${r.url}`).toBe(401);
      const other = await t.inject({ ...r, headers: b.auth });
      expect(other.statusCode, `${r.method} ${r.url}`).toBe(401);
    }
    expect((await getJob(t, a, jobOfA)).status).toBe('queued');
  });

  it('never shows or touches another collection’s job (404), nor lists it', async () => {
    for (const r of routes(b.id, jobOfA).slice(1)) {
      if (r.url.endsWith('/jobs')) continue;
      const res = await t.inject({ ...r, headers: b.auth });
      expect(res.statusCode, `${r.method} ${r.url}`).toBe(404);
    }
    const list = await t.inject({ method: 'GET', url: `/admin/collection/${b.id}/jobs?limit=100`, headers: b.auth });
    expect(list.statusCode).toBe(200);
    expect(list.json().items.map((j: { id: number }) => j.id)).not.toContain(jobOfA);
    expect((await getJob(t, a, jobOfA)).status).toBe('queued');
  });

  it('does not list or show internal jobs', async () => {
    const { id } = await t.app.services.jobs.engine.enqueue(t.testDb.db, a.id, { task: 'test.internal' });
    const res = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs/${id}`, headers: a.auth });
    expect(res.statusCode).toBe(404);
    const list = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs?limit=100`, headers: a.auth });
    expect(list.json().items.map((j: { id: number }) => j.id)).not.toContain(id);
    expect(list.json().items.every((j: { task: string }) => j.task !== 'test.internal')).toBe(true);
  });
});

describe('bad input', () => {
  it('refuses malformed enqueue bodies with 400 and enqueues nothing', async () => {
    const before = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs?limit=100`, headers: a.auth });
    for (const payload of [
      {},
      { task: 'test.echo', extra: 1 },
      { task: 'test.echo', runAt: 'tomorrow' },
      { task: 'test.echo', priority: 1.5 },
      { task: 'test.echo', payload: [1, 2] },
      { task: 'test.echo', maxAttempts: 0 },
      { task: 'test.echo', key: '' },
      { task: 'test.echo', queueName: 'x'.repeat(201) },
      { task: 'test.strict', payload: { n: 'not a number' } },
    ]) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/async/jobs`,
        headers: a.auth,
        payload,
      });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    const after = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs?limit=100`, headers: a.auth });
    expect(after.json().items.length).toBe(before.json().items.length);
  });

  it('a task’s parsePayload normalises an accepted payload', async () => {
    const { id } = await enqueue(t, a, { task: 'test.strict', payload: { n: 7, dropped: true } });
    expect((await waitForStatus(t, a, id, ['completed'])).result).toEqual({ n: 7 });
  });

  it('refuses bad ids and query strings with 400', async () => {
    for (const url of [
      `/admin/collection/${a.id}/jobs/abc`,
      `/admin/collection/${a.id}/async/jobs/-1`,
      `/admin/collection/${a.id}/jobs/1234567890123456789`,
      `/admin/collection/${a.id}/jobs?state=done`,
      `/admin/collection/${a.id}/jobs?limit=0`,
      `/admin/collection/${a.id}/jobs?limit=101`,
      `/admin/collection/${a.id}/jobs?offset=-1`,
      `/admin/collection/${a.id}/jobs?from=yesterday`,
      `/admin/collection/${a.id}/jobs?from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z`,
      `/admin/collection/${a.id}/jobs?unknown=1`,
    ]) {
      const res = await t.inject({ method: 'GET', url, headers: a.auth });
      expect(res.statusCode, url).toBe(400);
    }
    const missing = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs/999999999`, headers: a.auth });
    expect(missing.statusCode).toBe(404);
  });
});

describe('list', () => {
  it('filters by state, task and creation window, newest first, with limit and offset', async () => {
    const c = await t.createCollection();
    const done = await enqueue(t, c, { task: 'test.echo', payload: { i: 1 } });
    await waitForStatus(t, c, done.id, ['completed']);
    const failed = await enqueue(t, c, { task: 'test.flaky', payload: { failures: 9 }, maxAttempts: 1 });
    await waitForStatus(t, c, failed.id, ['failed']);
    const later = new Date(Date.now() + 600_000).toISOString();
    const queued = await enqueue(t, c, { task: 'test.echo', runAt: later });
    const list = async (qs: string) => {
      const res = await t.inject({ method: 'GET', url: `/admin/collection/${c.id}/jobs${qs}`, headers: c.auth });
      expect(res.statusCode, qs).toBe(200);
      return res.json();
    };
    const all = await list('');
    expect(all).toMatchObject({ limit: 20, offset: 0 });
    expect(all.items.map((j: { id: number }) => j.id)).toEqual([queued.id, failed.id, done.id]);
    expect((await list('?state=completed')).items.map((j: { id: number }) => j.id)).toEqual([done.id]);
    expect((await list('?state=failed')).items[0]).toMatchObject({ id: failed.id, lastError: 'boom 1', attempts: 1 });
    expect((await list('?task=test.flaky')).items.map((j: { id: number }) => j.id)).toEqual([failed.id]);
    expect((await list('?state=queued&task=test.echo')).items.map((j: { id: number }) => j.id)).toEqual([queued.id]);
    const page = await list('?limit=1&offset=1');
    expect(page).toMatchObject({ limit: 1, offset: 1 });
    expect(page.items.map((j: { id: number }) => j.id)).toEqual([failed.id]);
    const created = (await getJob(t, c, failed.id)).createdAt;
    const from = await list(`?from=${encodeURIComponent(created)}`);
    expect(from.items.map((j: { id: number }) => j.id)).toEqual([queued.id, failed.id]);
    const to = await list(`?to=${encodeURIComponent(created)}`);
    expect(to.items.map((j: { id: number }) => j.id)).toEqual([done.id]);
    expect((await list('?from=2999-01-01T00:00:00Z')).items).toEqual([]);
  });
});

describe('roles', () => {
  it('ROLE=api runs no workers: jobs stay queued for a worker process', async () => {
    const api = await createTestApp({ ROLE: 'api' });
    try {
      let ran = false;
      api.app.services.jobs.engine.registerTask({
        name: 'test.echo',
        visible: true,
        handler: async () => {
          ran = true;
        },
      });
      const c = await api.createCollection();
      const { id } = await enqueue(api, c, { task: 'test.echo' });
      await sleep(300);
      expect((await getJob(api, c, id)).status).toBe('queued');
      expect(ran).toBe(false);
      expect(api.app.services.jobs.engine.activeCount).toBe(0);
    } finally {
      await api.close();
    }
  });
});
