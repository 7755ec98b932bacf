/**
 * One collection's receivers cannot stop another's webhooks (delivery.ts and jobs engine.ts,
 * "Fairness"): deliveries run in a lane of their own, each collection holds at most its share
 * of the lane's slots, a registration at most WEBHOOK_MAX_IN_FLIGHT attempts at once, and a
 * failing registration backs off (one attempt per round) before it is disabled. Real HTTP
 * receivers on loopback, the real engine and database, the default webhook timeout (10 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, sleep, waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_BASE_MS: '200',
    WEBHOOK_RETRY_FACTOR: '1',
    WEBHOOK_BACKOFF_BASE_MS: '300',
    JOBS_POLL_INTERVAL_MS: '500',
    // Hanging attempts are abandoned at close instead of waited for.
    JOBS_STOP_TIMEOUT_MS: '200',
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
});
afterAll(async () => {
  await t.close();
  await rx.close();
});

const api = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });

async function register(c: TestCollection, path: string) {
  const res = await api(c, 'POST', '/v1/webhooks', { url: `${rx.url}${path}`, events: ['link.created'] });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string };
}

const createLink = async (c: TestCollection) => {
  const res = await api(c, 'POST', `/admin/collection/${c.id}/links`, { url: 'https://dest.example/' });
  expect(res.statusCode, res.body).toBe(200);
};

/** Waits for the first request on `path` after `since`; answers how long it took to arrive. */
async function arrival(path: string, since: number, timeoutMs: number): Promise<number> {
  const got = await waitFor(
    async () => rx.on(path).find((r) => r.at >= since),
    timeoutMs,
    `a delivery on ${path} within ${timeoutMs} ms`,
  );
  return got.at - since;
}

describe('isolation between collections', () => {
  it('A’s 8 receivers that never answer, and A’s jobs at priority 1000, do not hold B’s delivery back', async () => {
    rx.answer('/a-hangs', { hang: true });
    for (let i = 0; i < 8; i++) await register(a, '/a-hangs');
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    t.app.services.jobs.engine.registerTask({
      name: 'fairness.busy',
      visible: true,
      handler: () => held.then(() => null),
    });
    // Three events × 8 registrations: 24 deliveries whose attempts each hang for the 10 s timeout.
    for (let i = 0; i < 3; i++) await createLink(a);
    for (let i = 0; i < 16; i++) await enqueue(t, a, { task: 'fairness.busy', priority: 1000 });
    await waitFor(async () => (rx.on('/a-hangs').length >= 8 ? true : undefined), 10_000, 'A’s attempts to hang');
    await register(b, '/b');
    const since = Date.now();
    await createLink(b);
    // The bound: within 5 s (it was 49.7 s); in fact long before A's first timeout.
    const took = await arrival('/b', since, 5000);
    const firstOfA = Math.min(...rx.on('/a-hangs').map((r) => r.at));
    expect(since + took).toBeLessThan(firstOfA + 10_000);
    // A holds at most its share of the lane's slots (12 of 16), and each registration at most
    // WEBHOOK_MAX_IN_FLIGHT (8): never all 24 at once.
    expect(rx.on('/a-hangs').length).toBeLessThanOrEqual(12);

    // Priority 1000 is A's own business: with A's 16 jobs queued and running, B's next delivery
    // arrives within a second (the bound; it was 6.2 s).
    const again = Date.now();
    await createLink(b);
    await arrival('/b', again, 1000);
    release();
  });
});

describe('in flight per registration', () => {
  // An app of its own: hanging attempts of the tests above hold slots until their timeout.
  let t2: TestApp;
  beforeAll(async () => {
    t2 = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', JOBS_STOP_TIMEOUT_MS: '200' });
  });
  afterAll(() => t2.close());

  it('one hanging receiver holds at most WEBHOOK_MAX_IN_FLIGHT (8) attempts at once, not its collection’s whole share', async () => {
    const c = await t2.createCollection();
    rx.answer('/c-hangs', { hang: true });
    const reg = await t2.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: c.auth,
      payload: { url: `${rx.url}/c-hangs`, events: ['link.created'] },
    });
    expect(reg.statusCode, reg.body).toBe(200);
    for (let i = 0; i < 20; i++) {
      const res = await t2.inject({
        method: 'POST',
        url: `/admin/collection/${c.id}/links`,
        headers: c.auth,
        payload: { url: 'https://dest.example/' },
      });
      expect(res.statusCode).toBe(200);
    }
    await waitFor(async () => (rx.on('/c-hangs').length >= 8 ? true : undefined), 10_000, 'eight attempts');
    // The other twelve deliveries are put off while the eight hang (the timeout is 10 s), though
    // the collection's share of the lane is 12 slots.
    await sleep(1500);
    expect(rx.on('/c-hangs')).toHaveLength(8);
  });
});

describe('a failing registration backs off before it is disabled', () => {
  it('a receiver down for a moment during a burst costs a few counted failures, keeps its registration and gets every event', async () => {
    rx.answer('/flaky', { status: 500 });
    const hook = await register(b, '/flaky');
    await api(b, 'PATCH', `/v1/webhooks/${hook.id}`, { events: ['link.created'] });
    const since = Date.now();
    for (let i = 0; i < 20; i++) await createLink(b);
    // Down for 1.5 s: without a backoff the burst's 20 failed attempts would disable it (10).
    await sleep(1500);
    const duringOutage = rx.on('/flaky').filter((r) => r.at >= since).length;
    rx.answer('/flaky', { status: 200 });
    const state = await waitFor(
      async () => {
        const res = await api(b, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`);
        const items = res.json().items as { status: string }[];
        return items.length === 20 && items.every((d) => d.status !== 'pending') ? items : undefined;
      },
      30_000,
      'every delivery to end',
    );
    expect(state.map((d) => d.status)).toEqual(Array(20).fill('succeeded'));
    const reg = (await api(b, 'GET', `/v1/webhooks/${hook.id}`)).json();
    expect(reg.active).toBe(true);
    expect(reg.consecutiveFailures).toBe(0);
    // The first wave (at most WEBHOOK_MAX_IN_FLIGHT) and one attempt per backoff round after it.
    expect(duringOutage).toBeGreaterThan(0);
    expect(duringOutage).toBeLessThanOrEqual(8 + 3);
  });
});

describe('failed deliveries, not attempts, disable; recover sends them again', () => {
  // An app of its own: no backoff, quick retries, so that deliveries fail fast.
  let t3: TestApp;
  beforeAll(async () => {
    t3 = await createTestApp({
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_BASE_MS: '20',
      WEBHOOK_RETRY_FACTOR: '1',
      WEBHOOK_BACKOFF_BASE_MS: '0',
      JOBS_POLL_INTERVAL_MS: '200',
      JOBS_STOP_TIMEOUT_MS: '200',
    });
  });
  afterAll(() => t3.close());

  it('a receiver answering 500 to a burst of 50 events stays active until 10 deliveries have failed; recover then re-sends every one', async () => {
    const c = await t3.createCollection();
    const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
      t3.inject({ method, url, headers: c.auth, ...(payload === undefined ? {} : { payload }) });
    rx.answer('/burst', { status: 500 });
    const hook = (await call('POST', '/v1/webhooks', { url: `${rx.url}/burst`, events: ['link.created'] })).json();
    // Another registration of the collection hears of the disabling.
    const watch = await call('POST', '/v1/webhooks', { url: `${rx.url}/watch`, events: ['webhook.disabled'] });
    expect(watch.statusCode, watch.body).toBe(200);
    const since = new Date().toISOString();
    await Promise.all(
      Array.from({ length: 50 }, () => call('POST', `/admin/collection/${c.id}/links`, { url: 'https://d.example/' })),
    );
    const log = async () => (await call('GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`)).json().items;
    const ended = await waitFor(
      async () => {
        const items = (await log()) as { status: string; attemptCount: number }[];
        return items.length === 50 && items.every((d) => d.status !== 'pending') ? items : undefined;
      },
      60_000,
      'every delivery to end',
    );
    const failed = ended.filter((d) => d.status === 'failed');
    // Each failed delivery made its four attempts first; the tenth disabled the registration,
    // which cancelled the rest (none lost: they wait for recover).
    expect(failed.length).toBeGreaterThanOrEqual(10);
    for (const d of failed) expect(d.attemptCount).toBe(4);
    const reg = (await call('GET', `/v1/webhooks/${hook.id}`)).json();
    expect(reg).toMatchObject({ active: false, consecutiveFailures: 10 });
    expect(reg.disabledReason).toMatch(/10 consecutive failed deliveries/);
    const told = await waitFor(
      async () => (rx.on('/watch').length > 0 ? rx.on('/watch') : undefined),
      10_000,
      'webhook.disabled',
    );
    await sleep(300);
    expect(rx.on('/watch')).toHaveLength(1);
    expect(told[0].body).toMatchObject({
      type: 'webhook.disabled',
      data: { webhook_id: hook.id, url: `${rx.url}/burst`, consecutive_failures: 10, disabled_at: reg.disabledAt },
    });

    // Recover needs the registration on; then every failed or cancelled delivery goes again.
    expect((await call('POST', `/v1/webhooks/${hook.id}/recover`, { since })).statusCode).toBe(409);
    rx.answer('/burst', { status: 200 });
    expect((await call('PATCH', `/v1/webhooks/${hook.id}`, { active: true })).statusCode).toBe(200);
    const res = await call('POST', `/v1/webhooks/${hook.id}/recover`, { since });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toEqual({ count: 50, more: false });
    const done = await waitFor(
      async () => {
        const items = (await log()) as { status: string }[];
        return items.every((d) => d.status === 'succeeded') ? items : undefined;
      },
      60_000,
      'every delivery to succeed',
    );
    expect(done).toHaveLength(50);
    // Each event arrived (at least) once with a 200, under its own id.
    const ok = new Set(rx.on('/burst').map((r) => r.body.id));
    expect(ok.size).toBe(50);
    // Another collection's key cannot recover this registration.
    const other = await t3.createCollection();
    const foreign = await t3.inject({
      method: 'POST',
      url: `/v1/webhooks/${hook.id}/recover`,
      headers: other.auth,
      payload: { since },
    });
    expect(foreign.statusCode).toBe(404);
  });

  it('recover refuses a bad since and an unknown registration, and changes nothing', async () => {
    const c = await t3.createCollection();
    const bad = await t3.inject({
      method: 'POST',
      url: '/v1/webhooks/wh_nope/recover',
      headers: c.auth,
      payload: { since: 'yesterday' },
    });
    expect(bad.statusCode).toBe(400);
    const missing = await t3.inject({
      method: 'POST',
      url: '/v1/webhooks/wh_nope/recover',
      headers: c.auth,
      payload: { since: new Date().toISOString() },
    });
    expect(missing.statusCode).toBe(404);
  });
});
