/**
 * An app's own tasks and their workers over HTTP (issue 27, item 3): declaring tasks (names,
 * bounds, payload schemas), enqueuing them through the jobs API, leasing (tenancy, long poll,
 * a backlog of another task), heartbeats, progress, completion and failure with their events,
 * and leases that expired and were taken again. Every call goes through the real app and its
 * database; time passes for real (a lease of the shortest length, 5 s, is let expire once).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, subscribe, twoCollections } from './helpers/fixtures.ts';
import { enqueue, getJob, sleep, waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    JOBS_BACKOFF_BASE_MS: '20',
    JOBS_POLL_INTERVAL_MS: '200',
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
  await subscribe(t, a, `${rx.url}/a`, ['job.*']);
  await subscribe(t, b, `${rx.url}/b`, ['job.*']);
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

const call = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  t.inject({
    method,
    url: `/admin/collection/${c.id}${path}`,
    headers: c.auth,
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });

async function declare(c: TestCollection, body: Record<string, unknown>) {
  const res = await call(c, 'POST', '/tasks', body);
  expect([200, 201], res.body).toContain(res.statusCode);
  return res.json();
}

interface Leased {
  id: number;
  task: string;
  payload: Record<string, unknown>;
  attempt: number;
  maxAttempts: number;
  leaseId: string;
  leaseExpiresAt: string;
  lastError: string | null;
}

async function lease(c: TestCollection, body: Record<string, unknown>): Promise<Leased[]> {
  const res = await call(c, 'POST', '/jobs/lease', body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items;
}

const report = (c: TestCollection, id: number, what: string, body: Record<string, unknown>) =>
  call(c, 'POST', `/jobs/${id}/${what}`, body);

/** The job events at `path` about job `id`. */
const eventsOf = (path: string, id: number) => rx.on(path).filter((r) => r.body.data.job_id === id);

describe('declaring tasks', () => {
  it('declares (201), replaces (200), lists, reads and deletes a task', async () => {
    const first = await call(a, 'POST', '/tasks', { name: 'img.resize', description: 'Resize an image' });
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json()).toMatchObject({
      name: 'img.resize',
      description: 'Resize an image',
      maxAttempts: 5,
      leaseSeconds: 60,
      payloadSchema: null,
      example: null,
    });
    const again = await call(a, 'POST', '/tasks', { name: 'img.resize', maxAttempts: 3, leaseSeconds: 120 });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({ name: 'img.resize', description: '', maxAttempts: 3, leaseSeconds: 120 });
    const list = await call(a, 'GET', '/tasks');
    expect(list.json().items.map((x: { name: string }) => x.name)).toContain('img.resize');
    expect((await call(a, 'GET', '/tasks/img.resize')).json()).toMatchObject({ maxAttempts: 3 });
    const gone = await call(a, 'DELETE', '/tasks/img.resize');
    expect(gone.statusCode, gone.body).toBe(200);
    expect((await call(a, 'GET', '/tasks/img.resize')).statusCode).toBe(404);
    expect((await call(a, 'DELETE', '/tasks/img.resize')).statusCode).toBe(404);
  });

  it('refuses the name of one of the service’s tasks (409), naming a way out', async () => {
    for (const name of ['http', 'records.import']) {
      const res = await call(a, 'POST', '/tasks', { name });
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json().message).toContain(`"app.${name}"`);
    }
  });

  it('refuses bad names and out-of-bounds fields (400)', async () => {
    for (const body of [
      { name: '1abc' },
      { name: 'has space' },
      { name: 'x'.repeat(101) },
      { name: 'ok', leaseSeconds: 4 },
      { name: 'ok', leaseSeconds: 3601 },
      { name: 'ok', maxAttempts: 0 },
      { name: 'ok', maxAttempts: 26 },
      { name: 'ok', description: 'd'.repeat(2001) },
      { name: 'ok', extra: true },
    ]) {
      const res = await call(a, 'POST', '/tasks', body);
      expect(res.statusCode, `${JSON.stringify(body)}: ${res.body}`).toBe(400);
    }
  });

  it('checks a payload schema when declared: keywords, size, depth, that it compiles, the example', async () => {
    const refused = async (payloadSchema: unknown, text: string, extra: Record<string, unknown> = {}) => {
      const res = await call(a, 'POST', '/tasks', { name: 'schema.check', payloadSchema, ...extra });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().message).toContain(text);
    };
    await refused(
      { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } },
      '/properties/s/pattern',
    );
    await refused({ patternProperties: { '^x': {} } }, 'patternProperties');
    await refused({ $ref: '#' }, '$ref');
    await refused({ type: 'object', properties: { a: { oneOf: [{ frobnicate: 1 }] } } }, 'keyword "frobnicate"');
    await refused({ type: 'array', uniqueItems: true }, 'maxItems');
    await refused({ type: 'nope' }, 'does not compile');
    await refused({ type: 'string', format: 'no-such-format' }, 'does not compile');
    await refused({ description: 'x'.repeat(17_000) }, '16384 bytes');
    let deep: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < 10; i++) deep = { type: 'object', properties: { n: deep } };
    await refused(deep, 'deeper than 16');
    await refused(
      { type: 'object', required: ['url'] },
      'example does not match payloadSchema: / must have required property',
      {
        example: { other: 1 },
      },
    );
    // Nothing was stored by any of them.
    expect((await call(a, 'GET', '/tasks/schema.check')).statusCode).toBe(404);
  });

  it('keeps each collection’s tasks its own', async () => {
    await declare(a, { name: 'mine.only' });
    expect((await call(b, 'GET', '/tasks/mine.only')).statusCode).toBe(404);
    expect((await call(b, 'GET', '/tasks')).json().items.map((x: { name: string }) => x.name)).not.toContain(
      'mine.only',
    );
    expect((await call(b, 'DELETE', '/tasks/mine.only')).statusCode).toBe(404);
    // b's key on a's path: refused by the guard.
    const cross = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/tasks`, headers: b.auth });
    expect(cross.statusCode).toBe(401);
    expect((await call(a, 'GET', '/tasks/mine.only')).statusCode).toBe(200);
  });

  it('bounds the tasks of a collection (409 past 200, naming the way out); a replace still goes through', async () => {
    const c = await t.createCollection();
    for (let i = 0; i < 200; i++) await declare(c, { name: `bulk.t${i}` });
    const over = await call(c, 'POST', '/tasks', { name: 'bulk.one-more' });
    expect(over.statusCode, over.body).toBe(409);
    expect(over.json().message).toContain('DELETE');
    expect((await call(c, 'POST', '/tasks', { name: 'bulk.t7', description: 'replaced' })).statusCode).toBe(200);
  });
});

describe('enqueuing an app task', () => {
  beforeAll(async () => {
    await declare(a, {
      name: 'orders.ship',
      payloadSchema: {
        type: 'object',
        required: ['orderId'],
        properties: { orderId: { type: 'string', maxLength: 20 }, rush: { type: 'boolean' } },
        additionalProperties: false,
      },
      example: { orderId: 'o-1' },
      description: 'Ship an order',
    });
  });

  it('checks the payload against the schema (400 naming the first problem); a good one is queued and listed', async () => {
    const bad = await call(a, 'POST', '/async/jobs', { task: 'orders.ship', payload: { orderId: 7 } });
    expect(bad.statusCode, bad.body).toBe(400);
    expect(bad.json().message).toBe('Invalid payload for orders.ship: /orderId must be string');
    const missing = await call(a, 'POST', '/async/jobs', { task: 'orders.ship', payload: {} });
    expect(missing.json().message).toContain("must have required property 'orderId'");
    const bulkBad = await call(a, 'POST', '/async/jobs/bulk', {
      jobs: [
        { task: 'orders.ship', payload: { orderId: 'o-1' } },
        { task: 'orders.ship', payload: { orderId: 'o-2', extra: 1 } },
      ],
    });
    expect(bulkBad.statusCode, bulkBad.body).toBe(400);
    expect(bulkBad.json().message).toContain('jobs[1]: Invalid payload for orders.ship');
    const job = await enqueue(t, a, { task: 'orders.ship', payload: { orderId: 'o-1' } });
    expect(await getJob(t, a, job.id)).toMatchObject({ task: 'orders.ship', status: 'queued', maxAttempts: 5 });
  });

  it('lists the app’s tasks with the service’s (GET .../job-tasks), and names them when a task is unknown', async () => {
    const tasks = (await call(a, 'GET', '/job-tasks')).json().items as { name: string; source: string }[];
    expect(tasks.find((x) => x.name === 'orders.ship')).toMatchObject({
      source: 'app',
      description: 'Ship an order',
      example: { orderId: 'o-1' },
    });
    expect(tasks.find((x) => x.name === 'http')).toMatchObject({ source: 'service' });
    expect((await call(b, 'GET', '/job-tasks')).json().items.map((x: { name: string }) => x.name)).not.toContain(
      'orders.ship',
    );
    const unknown = await call(a, 'POST', '/async/jobs', { task: 'orders.shipp' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().details.knownTasks).toEqual(expect.arrayContaining(['orders.ship', 'http']));
    // Another collection has not declared it: unknown there.
    const elsewhere = await call(b, 'POST', '/async/jobs', { task: 'orders.ship', payload: { orderId: 'o-1' } });
    expect(elsewhere.statusCode).toBe(400);
    expect(elsewhere.json().details.knownTasks).not.toContain('orders.ship');
  });

  it('is never run by the service’s own workers', async () => {
    await declare(a, { name: 'never.run' });
    const job = await enqueue(t, a, { task: 'never.run' });
    await sleep(600); // three polls of the engine
    expect(await getJob(t, a, job.id)).toMatchObject({ status: 'queued', attempts: 0 });
  });
});

describe('leasing', () => {
  it('leases a due job, keeps it with heartbeat and progress, completes it once (job.completed)', async () => {
    await declare(a, { name: 'lease.basic', leaseSeconds: 30 });
    const job = await enqueue(t, a, { task: 'lease.basic', payload: { n: 1 } });
    const [got] = await lease(a, { tasks: ['lease.basic'] });
    expect(got).toMatchObject({ id: job.id, task: 'lease.basic', payload: { n: 1 }, attempt: 1, maxAttempts: 5 });
    expect(got.leaseId).toMatch(/^lease:/);
    expect(await getJob(t, a, job.id)).toMatchObject({ status: 'running', attempts: 1 });
    expect(await lease(a, { tasks: ['lease.basic'] })).toEqual([]);

    const beat = await report(a, job.id, 'heartbeat', { leaseId: got.leaseId, leaseSeconds: 600 });
    expect(beat.statusCode, beat.body).toBe(200);
    expect(Date.parse(beat.json().leaseExpiresAt)).toBeGreaterThan(Date.parse(got.leaseExpiresAt));
    const progress = await report(a, job.id, 'progress', { leaseId: got.leaseId, done: 3, total: 10, message: 'half' });
    expect(progress.statusCode, progress.body).toBe(200);
    expect((await getJob(t, a, job.id)).progress).toEqual({ done: 3, total: 10, message: 'half' });

    const done = await report(a, job.id, 'complete', { leaseId: got.leaseId, result: { ok: true } });
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ id: job.id, status: 'completed', result: { ok: true }, attempts: 1 });
    const twice = await report(a, job.id, 'complete', { leaseId: got.leaseId, result: { ok: true } });
    expect(twice.statusCode).toBe(409);
    expect(twice.json().details.reason).toBe('finished');

    const [event] = await waitFor(async () => {
      const seen = eventsOf('/a', job.id);
      return seen.length ? seen : undefined;
    });
    expect(event.body).toMatchObject({
      type: 'job.completed',
      data: { job_id: job.id, task: 'lease.basic', attempts: 1, result: { ok: true } },
    });
    // Published to the job's collection only.
    expect(eventsOf('/b', job.id)).toEqual([]);
  });

  it('takes the most urgent jobs first, up to max, of the tasks named', async () => {
    await declare(a, { name: 'lease.order' });
    await declare(a, { name: 'lease.other' });
    const low = await enqueue(t, a, { task: 'lease.order', priority: 0 });
    const high = await enqueue(t, a, { task: 'lease.order', priority: 5 });
    const other = await enqueue(t, a, { task: 'lease.other', priority: 1 });
    const got = await lease(a, { tasks: ['lease.order', 'lease.other'], max: 2 });
    expect(got.map((x) => x.id)).toEqual([high.id, other.id]);
    expect((await lease(a, { tasks: ['lease.order'], max: 10 })).map((x) => x.id)).toEqual([low.id]);
  });

  it('refuses tasks the collection has not declared, listing those it has, and bounds the request', async () => {
    const res = await call(a, 'POST', '/jobs/lease', { tasks: ['lease.basic', 'not.declared'] });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().message).toContain('"not.declared" is not declared');
    expect(res.json().details.declaredTasks).toContain('lease.basic');
    for (const body of [
      { tasks: [] },
      { tasks: Array.from({ length: 51 }, (_, i) => `t${i}`) },
      { tasks: ['lease.basic'], max: 0 },
      { tasks: ['lease.basic'], max: 101 },
      { tasks: ['lease.basic'], waitSeconds: 31 },
      { tasks: ['lease.basic'], waitSeconds: -1 },
      { tasks: ['bad name'] },
    ]) {
      const bad = await call(a, 'POST', '/jobs/lease', body);
      expect(bad.statusCode, `${JSON.stringify(body)}: ${bad.body}`).toBe(400);
    }
  });

  it('leases only the caller’s collection’s jobs; another collection’s job is a 404 to every lease call', async () => {
    await declare(a, { name: 'shared.name' });
    await declare(b, { name: 'shared.name' });
    const ja = await enqueue(t, a, { task: 'shared.name', payload: { side: 'a' } });
    const jb = await enqueue(t, b, { task: 'shared.name', payload: { side: 'b' } });
    const [gotB] = await lease(b, { tasks: ['shared.name'], max: 10 });
    expect(gotB).toMatchObject({ id: jb.id, payload: { side: 'b' } });
    const [gotA] = await lease(a, { tasks: ['shared.name'], max: 10 });
    expect(gotA).toMatchObject({ id: ja.id, payload: { side: 'a' } });
    // b, holding a's lease id, reaches nothing of a's.
    for (const [what, body] of [
      ['heartbeat', { leaseId: gotA.leaseId }],
      ['progress', { leaseId: gotA.leaseId, done: 1 }],
      ['complete', { leaseId: gotA.leaseId }],
      ['fail', { leaseId: gotA.leaseId, error: 'x' }],
    ] as const) {
      const res = await report(b, ja.id, what, body);
      expect(res.statusCode, `${what}: ${res.body}`).toBe(404);
    }
    // a's job is untouched, and a's own lease still works.
    expect(await getJob(t, a, ja.id)).toMatchObject({ status: 'running', attempts: 1 });
    expect((await report(a, ja.id, 'complete', { leaseId: gotA.leaseId })).statusCode).toBe(200);
    expect((await report(b, jb.id, 'complete', { leaseId: gotB.leaseId })).statusCode).toBe(200);
  });

  it('refuses a lease id that is not the job’s (409), and a service task’s job (409)', async () => {
    await declare(a, { name: 'lease.wrong' });
    const job = await enqueue(t, a, { task: 'lease.wrong' });
    const [got] = await lease(a, { tasks: ['lease.wrong'] });
    const wrong = await report(a, job.id, 'heartbeat', { leaseId: 'lease:not-this-one' });
    expect(wrong.statusCode, wrong.body).toBe(409);
    expect(wrong.json()).toMatchObject({ errorCode: 'CONFLICT', details: { reason: 'leased_again' } });
    expect((await report(a, job.id, 'complete', { leaseId: got.leaseId })).statusCode).toBe(200);
    const own = await enqueue(t, a, { task: 'http', payload: { url: 'http://127.0.0.1:9/x' }, runAt: '2099-01-01' });
    const service = await report(a, own.id, 'complete', { leaseId: got.leaseId });
    expect(service.statusCode, service.body).toBe(409);
    expect(service.json().details.reason).toBe('not_an_app_task');
    expect((await report(a, 999_999_999, 'complete', { leaseId: got.leaseId })).statusCode).toBe(404);
  });

  it('refuses a result over 64 KiB (413, naming the limit) and keeps the lease', async () => {
    await declare(a, { name: 'lease.big' });
    const job = await enqueue(t, a, { task: 'lease.big' });
    const [got] = await lease(a, { tasks: ['lease.big'] });
    const big = await report(a, job.id, 'complete', { leaseId: got.leaseId, result: { text: 'x'.repeat(70_000) } });
    expect(big.statusCode, big.body.slice(0, 300)).toBe(413);
    expect(big.json().message).toContain('65536');
    expect((await report(a, job.id, 'complete', { leaseId: got.leaseId, result: 'small' })).statusCode).toBe(200);
  });

  it('fails an attempt with retryAt: errored until then, leased again as attempt 2 with the last error', async () => {
    await declare(a, { name: 'lease.retry', maxAttempts: 3 });
    const job = await enqueue(t, a, { task: 'lease.retry' });
    const [first] = await lease(a, { tasks: ['lease.retry'] });
    const retryAt = new Date(Date.now() + 1500).toISOString();
    const failed = await report(a, job.id, 'fail', { leaseId: first.leaseId, error: 'printer on fire', retryAt });
    expect(failed.statusCode, failed.body).toBe(200);
    expect(failed.json()).toMatchObject({ status: 'errored', attempts: 1, lastError: 'printer on fire' });
    expect(Date.parse(failed.json().runAt)).toBe(Date.parse(retryAt));
    expect(await lease(a, { tasks: ['lease.retry'] })).toEqual([]);
    const [second] = await lease(a, { tasks: ['lease.retry'], waitSeconds: 10 });
    expect(second).toMatchObject({ id: job.id, attempt: 2, lastError: 'printer on fire' });
    expect(eventsOf('/a', job.id)).toEqual([]);
    expect((await report(a, job.id, 'fail', { leaseId: second.leaseId, error: 'again' })).json()).toMatchObject({
      status: 'errored',
      attempts: 2,
    });
  });

  it('fails a job for good once its attempts are spent (job.failed), and the old lease is refused', async () => {
    await declare(a, { name: 'lease.doomed', maxAttempts: 1 });
    const job = await enqueue(t, a, { task: 'lease.doomed' });
    const [got] = await lease(a, { tasks: ['lease.doomed'] });
    const res = await report(a, job.id, 'fail', { leaseId: got.leaseId, error: 'bad input' });
    expect(res.json()).toMatchObject({ status: 'failed', attempts: 1, lastError: 'bad input' });
    expect(res.json().finishedAt).not.toBeNull();
    const [event] = await waitFor(async () => {
      const seen = eventsOf('/a', job.id);
      return seen.length ? seen : undefined;
    });
    expect(event.body).toMatchObject({ type: 'job.failed', data: { job_id: job.id, error: 'bad input', attempts: 1 } });
    const late = await report(a, job.id, 'complete', { leaseId: got.leaseId });
    expect(late.statusCode).toBe(409);
    expect(late.json().message).toContain('failed');
  });

  it('leases a task at once when another task of the collection has a large backlog', async () => {
    await declare(a, { name: 'backlog.big' });
    await declare(a, { name: 'backlog.small' });
    for (let i = 0; i < 3; i++)
      await call(a, 'POST', '/async/jobs/bulk', {
        jobs: Array.from({ length: 1000 }, (_, n) => ({ task: 'backlog.big', payload: { n }, priority: 10 })),
      });
    const small = await enqueue(t, a, { task: 'backlog.small' });
    const [got] = await lease(a, { tasks: ['backlog.small'] });
    expect(got.id).toBe(small.id);
    const both = await lease(a, { tasks: ['backlog.big', 'backlog.small'], max: 5 });
    expect(both.map((x) => x.task)).toEqual(Array(5).fill('backlog.big'));
  });
});

describe('leasing from named queues', () => {
  it('keeps a queue’s concurrency, pause and order for leased jobs, per collection', async () => {
    await declare(a, { name: 'q.step' });
    await declare(b, { name: 'q.step' });
    const patched = await call(a, 'PATCH', '/queues/lanes', { concurrency: 2 });
    expect(patched.statusCode, patched.body).toBe(200);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await enqueue(t, a, { task: 'q.step', queueName: 'lanes', payload: { i } })).id);
    // B's queue of the same name runs one at a time (its default).
    const idsB: number[] = [];
    for (let i = 0; i < 2; i++) idsB.push((await enqueue(t, b, { task: 'q.step', queueName: 'lanes' })).id);
    const first = await lease(a, { tasks: ['q.step'], max: 10 });
    expect(first.map((j) => j.id)).toEqual(ids.slice(0, 2));
    expect(await lease(a, { tasks: ['q.step'], max: 10 })).toEqual([]);
    expect((await lease(b, { tasks: ['q.step'], max: 10 })).map((j) => j.id)).toEqual([idsB[0]]);
    // One completes: the next in enqueue order may start.
    expect((await report(a, first[0].id, 'complete', { leaseId: first[0].leaseId })).statusCode).toBe(200);
    const next = await lease(a, { tasks: ['q.step'], max: 10 });
    expect(next.map((j) => j.id)).toEqual([ids[2]]);
    // Paused: nothing more starts, though a slot frees up.
    expect((await call(a, 'POST', '/queues/lanes/pause')).statusCode).toBe(200);
    expect((await report(a, first[1].id, 'complete', { leaseId: first[1].leaseId })).statusCode).toBe(200);
    expect(await lease(a, { tasks: ['q.step'], max: 10 })).toEqual([]);
    await call(a, 'POST', '/queues/lanes/resume');
    expect((await lease(a, { tasks: ['q.step'], max: 10 })).map((j) => j.id)).toEqual([ids[3]]);
  });
});

describe('waiting for a job (long poll)', () => {
  it('answers as soon as a job is enqueued during the wait', async () => {
    await declare(a, { name: 'poll.wake' });
    const waiting = lease(a, { tasks: ['poll.wake'], waitSeconds: 20 });
    await sleep(300);
    const job = await enqueue(t, a, { task: 'poll.wake', payload: { late: true } });
    const [got] = await waiting;
    expect(got).toMatchObject({ id: job.id, payload: { late: true } });
  });

  it('answers no items once waitSeconds have passed with nothing due', async () => {
    await declare(a, { name: 'poll.empty' });
    expect(await lease(a, { tasks: ['poll.empty'], waitSeconds: 1 })).toEqual([]);
  });

  it('another collection’s enqueue does not answer the wait with its job', async () => {
    await declare(a, { name: 'poll.mine' });
    await declare(b, { name: 'poll.mine' });
    const waiting = lease(a, { tasks: ['poll.mine'], waitSeconds: 2 });
    await sleep(200);
    await enqueue(t, b, { task: 'poll.mine' });
    expect(await waiting).toEqual([]);
  });

  it('ends when its client hangs up: a job enqueued afterwards is not leased to it', async () => {
    await declare(a, { name: 'poll.gone' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const hangUp = new AbortController();
    const waiting = fetch(`http://127.0.0.1:${port}/admin/collection/${a.id}/jobs/lease`, {
      method: 'POST',
      headers: { ...a.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ tasks: ['poll.gone'], waitSeconds: 30 }),
      signal: hangUp.signal,
    }).catch((err: unknown) => err);
    await sleep(300);
    hangUp.abort();
    await waiting;
    await sleep(300);
    const job = await enqueue(t, a, { task: 'poll.gone' });
    await sleep(300);
    const [got] = await lease(a, { tasks: ['poll.gone'] });
    expect(got).toMatchObject({ id: job.id, attempt: 1 });
  });

  it('ends at once when the app closes', async () => {
    const other = await createTestApp();
    const c = await other.createCollection();
    const res = await other.inject({
      method: 'POST',
      url: `/admin/collection/${c.id}/tasks`,
      headers: c.auth,
      payload: { name: 'poll.close' },
    });
    expect(res.statusCode).toBe(201);
    const waiting = other.inject({
      method: 'POST',
      url: `/admin/collection/${c.id}/jobs/lease`,
      headers: c.auth,
      payload: { tasks: ['poll.close'], waitSeconds: 30 },
    });
    await sleep(300);
    // Without the closing hook the close would wait for the whole 30 s and the test time out.
    await other.close();
    const answered = await waiting;
    expect(answered.statusCode).toBe(200);
    expect(answered.json().items).toEqual([]);
  });
});

describe('an expired lease', () => {
  it('goes back to the queue by the engine’s sweep (the attempt counts); the old lease is then refused', async () => {
    await declare(a, { name: 'lease.expire', leaseSeconds: 5, maxAttempts: 3 });
    const job = await enqueue(t, a, { task: 'lease.expire' });
    const [first] = await lease(a, { tasks: ['lease.expire'] });
    // No heartbeat: after 5 s the sweep hands the job back, and the next lease takes it.
    const [second] = await lease(a, { tasks: ['lease.expire'], waitSeconds: 15 });
    expect(second).toMatchObject({ id: job.id, attempt: 2 });
    expect(second.lastError).toContain('stopped responding');
    expect(second.leaseId).not.toBe(first.leaseId);

    const old = await report(a, job.id, 'complete', { leaseId: first.leaseId, result: 'late' });
    expect(old.statusCode, old.body).toBe(409);
    expect(old.json().details).toMatchObject({ reason: 'leased_again', attempts: 2 });
    expect(old.json().message).toContain('leased again');
    expect((await report(a, job.id, 'heartbeat', { leaseId: first.leaseId })).statusCode).toBe(409);

    const done = await report(a, job.id, 'complete', { leaseId: second.leaseId, result: 'on time' });
    expect(done.json()).toMatchObject({ status: 'completed', attempts: 2, result: 'on time' });
  }, 30_000);

  it('on the last attempt fails the job by the sweep, with job.failed', async () => {
    await declare(a, { name: 'lease.last', leaseSeconds: 5, maxAttempts: 1 });
    const job = await enqueue(t, a, { task: 'lease.last' });
    const [only] = await lease(a, { tasks: ['lease.last'] });
    expect(only.id).toBe(job.id);
    const failed = await waitFor(
      async () => {
        const j = await getJob(t, a, job.id);
        return j.status === 'failed' ? j : undefined;
      },
      20_000,
      'the sweep to fail the job',
    );
    expect(failed.lastError).toContain('stopped responding');
    await waitFor(async () => (eventsOf('/a', job.id).some((e) => e.body.type === 'job.failed') ? true : undefined));
  }, 30_000);
});
