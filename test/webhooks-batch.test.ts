/**
 * Delivery at scale (delivery.ts, docs/design/webhooks.md "Delivery at scale"): the deliveries of a
 * batch of clicks go in jobs of many attempts, each event still reaches each registration
 * once; a registration's `maxPerSecond` holds at the receiver; attempts reuse kept-alive
 * connections. Real HTTP receivers on loopback, the real engine and database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let c: TestCollection;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', JOBS_STOP_TIMEOUT_MS: '200' });
  c = await t.createCollection();
  rx = await startReceiver();
});
afterAll(async () => {
  await t.close();
  await rx.close();
});

const api = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });

async function register(path: string, events: string[], extra: Record<string, unknown> = {}) {
  const res = await api('POST', '/v1/webhooks', { url: `${rx.url}${path}`, events, ...extra });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string; maxPerSecond: number | null };
}

async function createLink(): Promise<{ id: string; code: string }> {
  const res = await api('POST', `/admin/collection/${c.id}/links`, { url: 'https://dest.example/' });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('batches', () => {
  it('a batch of clicks reaches each of two registrations once per event, in jobs of many attempts', async () => {
    const link = await createLink();
    const one = await register('/batch-1', ['link.clicked']);
    const two = await register('/batch-2', ['link.clicked']);
    const clicks = 120;
    // Jobs made from here on (a completed delivery job leaves no row: migration 0504).
    const jobIds = async () =>
      (await t.testDb.db.query<{ last: number }>('SELECT last_value::int AS last FROM jobs_id_seq')).rows[0].last;
    const firstJobs = await jobIds();
    for (let i = 0; i < clicks; i++) {
      const res = await t.inject({ method: 'GET', url: `/l/${link.code}` });
      expect(res.statusCode).toBe(302);
    }
    for (const path of ['/batch-1', '/batch-2']) {
      await waitFor(async () => (rx.on(path).length >= clicks ? true : undefined), 20_000, `${clicks} on ${path}`);
    }
    // Give a duplicate a moment to show up, then count: every event once at each receiver.
    await new Promise((r) => setTimeout(r, 300));
    for (const path of ['/batch-1', '/batch-2']) {
      const ids = rx.on(path).map((r) => r.body.id);
      expect(ids).toHaveLength(clicks);
      expect(new Set(ids).size).toBe(clicks);
    }
    expect(new Set(rx.on('/batch-1').map((r) => r.body.id))).toEqual(new Set(rx.on('/batch-2').map((r) => r.body.id)));
    // Every delivery succeeded at its first attempt, and the log shows it.
    for (const hook of [one, two]) {
      // The receiver sees a request before the service records its answer: wait for the log.
      const log = await waitFor(
        async () => {
          const body = (await api('GET', `/v1/webhooks/${hook.id}/deliveries?limit=100&status=succeeded`)).json();
          return body.total >= clicks ? body : undefined;
        },
        10_000,
        `${clicks} succeeded deliveries`,
      );
      expect(log.total).toBe(clicks);
      expect(log.items.every((d: { attemptCount: number }) => d.attemptCount === 1)).toBe(true);
    }
    // Fewer jobs than deliveries: the clicks of a batch went to each registration in shared jobs.
    // (An upper bound: every job made meanwhile counts, deliveries or not.)
    expect((await jobIds()) - firstJobs).toBeLessThan(2 * clicks);
  });

  it('reuses kept-alive connections: 300 deliveries to one receiver open at most twice WEBHOOK_MAX_IN_FLIGHT (8) connections', async () => {
    const own = await startReceiver();
    try {
      const link = await createLink();
      const res = await api('POST', '/v1/webhooks', { url: `${own.url}/keep`, events: ['link.clicked'] });
      expect(res.statusCode, res.body).toBe(200);
      for (let i = 0; i < 300; i++) await t.inject({ method: 'GET', url: `/l/${link.code}` });
      await waitFor(async () => (own.on('/keep').length >= 300 ? true : undefined), 20_000, '300 deliveries');
      expect(own.connections).toBeGreaterThan(0);
      // At most 8 attempts at once, but a socket goes back to the pool a moment after its answer
      // is read, and an attempt starting in that moment opens another: 16, not 300.
      expect(own.connections).toBeLessThanOrEqual(16);
    } finally {
      await own.close();
    }
  });
});

describe('maxPerSecond', () => {
  it('is set on create, changed and removed by PATCH, and bounded (1..10000)', async () => {
    const hook = await register('/rate-crud', ['link.created'], { maxPerSecond: 20 });
    expect(hook.maxPerSecond).toBe(20);
    expect((await api('GET', `/v1/webhooks/${hook.id}`)).json().maxPerSecond).toBe(20);
    const changed = await api('PATCH', `/v1/webhooks/${hook.id}`, { maxPerSecond: 10_000 });
    expect(changed.json().maxPerSecond).toBe(10_000);
    const removed = await api('PATCH', `/v1/webhooks/${hook.id}`, { maxPerSecond: null });
    expect(removed.json().maxPerSecond).toBeNull();
    for (const bad of [0, 10_001, 2.5, '5']) {
      const res = await api('PATCH', `/v1/webhooks/${hook.id}`, { maxPerSecond: bad });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
    }
    expect(
      (await api('POST', '/v1/webhooks', { url: `${rx.url}/x`, events: ['link.created'], maxPerSecond: 0 })).statusCode,
    ).toBe(400);
    expect((await api('GET', `/v1/webhooks/${hook.id}`)).json().maxPerSecond).toBeNull();
    await api('PATCH', `/v1/webhooks/${hook.id}`, { active: false });
  });

  it('holds at the receiver: at most maxPerSecond a second; the others wait, none fails', async () => {
    const hook = await register('/rate', ['link.created'], { maxPerSecond: 4 });
    const events = 14;
    for (let i = 0; i < events; i++) await createLink();
    await waitFor(async () => (rx.on('/rate').length >= events ? true : undefined), 30_000, `${events} on /rate`);
    const at = rx.on('/rate').map((r) => r.at);
    // Any window of one second holds at most 4 starts; arrivals may shift by a few ms, so count
    // windows a little shorter than a second.
    for (const start of at) {
      expect(at.filter((x) => x >= start && x < start + 950).length).toBeLessThanOrEqual(4);
    }
    // The receiver sees the last request before the service has recorded its answer: wait until
    // no delivery is pending, then every one must have succeeded at its first attempt.
    type Row = { status: string; attemptCount: number };
    const log = await waitFor(
      async () => {
        const body = (await api('GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`)).json();
        return body.items.some((d: Row) => d.status === 'pending') ? undefined : body;
      },
      10_000,
      'no delivery pending',
    );
    expect(log.total).toBe(events);
    const outcomes = log.items.map((d: Row) => `${d.status}/${d.attemptCount}`);
    expect(outcomes).toEqual(Array(events).fill('succeeded/1'));
    const reg = (await api('GET', `/v1/webhooks/${hook.id}`)).json();
    expect(reg.consecutiveFailures).toBe(0);
  });
});
