/**
 * Webhooks against a real HTTP receiver on loopback (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true):
 * registrations, every event type with its envelope and both signatures, retries on the
 * schedule, disabling after 10 consecutive failures, redelivery, duplicate-safe ids, tenancy.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retryDelayMs } from '../src/modules/webhooks/index.ts';
import { parseRetryAfter } from '../src/platform/outbound-http.ts';
import { freePort } from '../support/service-process.ts';
import { createTestApp, superAuth, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { waitFor } from './helpers/jobs.ts';
import { type Received, type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

const BASE_MS = 20;
const FACTOR = 2;
let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_RETRY_BASE_MS: String(BASE_MS),
    WEBHOOK_RETRY_FACTOR: String(FACTOR),
    // A receiver that answers must never be cut off by the sender's timeout, however busy the
    // machine: a 500 ms timeout turned a slow 200 into a failed attempt and a retry under load
    // (an extra attempt, a repeated event). Timeouts are tested where nothing answers at all.
    WEBHOOK_TIMEOUT_MS: '30000',
    // These tests pin the retry schedule and the count of failed attempts: no registration
    // backoff in between (webhooks-fairness.test.ts has it).
    WEBHOOK_BACKOFF_BASE_MS: '0',
    CLICK_FLUSH_MS: '5',
    JOBS_CONCURRENCY: '8',
    JOBS_POLL_INTERVAL_MS: '200',
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
});
afterAll(async () => {
  await t.close();
  await rx.close();
});

type Hook = { id: string; secret: string; url: string };

async function register(c: TestCollection, path: string, events: string[], extra: Record<string, unknown> = {}) {
  const res = await t.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: c.auth,
    payload: { url: `${rx.url}${path}`, events, active: true, ...extra },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Hook;
}

const api = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });

/** Which signatures of a delivery `secret` verifies, checked as a receiver would: raw bytes. */
function signedWith(r: Received, secret: string) {
  const hexOk = (header: string) => {
    const given = String(r.headers[header] ?? '');
    const expected = createHmac('sha256', secret).update(r.raw).digest('hex');
    return /^[0-9a-f]{64}$/.test(given) && timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(expected, 'hex'));
  };
  const id = String(r.headers['webhook-id']);
  const ts = String(r.headers['webhook-timestamp']);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const std = createHmac('sha256', key)
    .update(`${id}.${ts}.${r.raw.toString('utf8')}`)
    .digest('base64');
  return {
    service: hexOk('x-service-signature'),
    servicePrevious: hexOk('x-service-signature-previous'),
    standard: String(r.headers['webhook-signature'])
      .split(' ')
      .some((s) => s === `v1,${std}`),
    fresh: Math.abs(Number(ts) - Date.now() / 1000) < 300,
  };
}

/** Verifies both signatures with the current secret. */
function verify(r: Received, secret: string): boolean {
  const s = signedWith(r, secret);
  return s.service && s.standard && s.fresh;
}

async function deliveries(c: TestCollection, hookId: string) {
  const res = await api(c, 'GET', `/v1/webhooks/${hookId}/deliveries?limit=100`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items as {
    id: string;
    eventId: string;
    eventType: string;
    status: string;
    attemptCount: number;
    nextAttemptAt: string | null;
    attempts: {
      attempt: number;
      trigger: string;
      at: string;
      statusCode: number | null;
      outcome: string;
      error: string | null;
      responseExcerpt: string | null;
    }[];
  }[];
}

async function finalDeliveries(c: TestCollection, hookId: string, count: number) {
  return waitFor(
    async () => {
      const items = await deliveries(c, hookId);
      return items.length >= count && items.every((d) => d.status !== 'pending') ? items : undefined;
    },
    // Generous: a hanging receiver costs 4 timeouts, and CI machines are shared.
    60_000,
    `${count} final deliveries of ${hookId}`,
  );
}

const sendTest = async (c: TestCollection, hook: Hook) => {
  const res = await api(c, 'POST', `/v1/webhooks/${hook.id}/test`);
  expect(res.statusCode, res.body).toBe(202);
  return res.json() as { id: string; eventId: string };
};

describe('registrations', () => {
  it('creates (secret once), lists, gets, updates, rotates and deletes', async () => {
    const created = await register(a, '/crud', ['link.created'], { description: 'CRM sync' });
    expect(created).toMatchObject({
      url: `${rx.url}/crud`,
      events: ['link.created'],
      active: true,
      description: 'CRM sync',
      consecutiveFailures: 0,
      disabledAt: null,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const got = (await api(a, 'GET', `/v1/webhooks/${created.id}`)).json();
    expect(got.secret).toBeUndefined();
    const list = (await api(a, 'GET', '/v1/webhooks')).json();
    expect(list.items.map((w: Hook) => w.id)).toContain(created.id);
    expect(list.items.every((w: Hook) => w.secret === undefined)).toBe(true);
    const patched = await api(a, 'PATCH', `/v1/webhooks/${created.id}`, {
      events: ['link.created', 'link.deleted'],
      description: null,
    });
    expect(patched.json()).toMatchObject({ events: ['link.created', 'link.deleted'], description: null });
    const rotated = (await api(a, 'POST', `/v1/webhooks/${created.id}/rotate-secret`)).json();
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect((await api(a, 'DELETE', `/v1/webhooks/${created.id}`)).json()).toEqual({ success: true });
    expect((await api(a, 'GET', `/v1/webhooks/${created.id}`)).statusCode).toBe(404);
  });

  it('refuses bad input and changes nothing', async () => {
    const before = (await api(a, 'GET', '/v1/webhooks')).json().items.length;
    for (const payload of [
      { url: 'ftp://example.com/x', events: ['link.created'] },
      { url: 'not a url', events: ['link.created'] },
      { url: 'https://example.com', events: [] },
      { url: 'https://example.com', events: ['link.exploded'] },
      { url: 'https://example.com', events: ['link.created', 'link.created'] },
      { url: 'https://example.com', events: ['link.created'], active: 'yes' },
      { url: 'https://example.com', events: ['link.created'], secret: 'mine' },
      { events: ['link.created'] },
    ]) {
      const res = await t.inject({ method: 'POST', url: '/v1/webhooks', headers: a.auth, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect((await api(a, 'GET', '/v1/webhooks')).json().items.length).toBe(before);
    const hook = await register(a, '/bad', ['link.created']);
    expect((await api(a, 'PATCH', `/v1/webhooks/${hook.id}`, {})).statusCode).toBe(400);
    expect((await api(a, 'PATCH', `/v1/webhooks/${hook.id}`, { url: 'gopher://x' })).statusCode).toBe(400);
    expect((await api(a, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=1000`)).statusCode).toBe(400);
    await api(a, 'DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('needs a collection admin API key, and hides other collections’ registrations', async () => {
    const hook = await register(a, '/auth', ['link.created']);
    const routes = [
      ['POST', '/v1/webhooks'],
      ['GET', '/v1/webhooks'],
      ['GET', `/v1/webhooks/${hook.id}`],
      ['PATCH', `/v1/webhooks/${hook.id}`],
      ['DELETE', `/v1/webhooks/${hook.id}`],
      ['POST', `/v1/webhooks/${hook.id}/rotate-secret`],
      ['POST', `/v1/webhooks/${hook.id}/test`],
      ['GET', `/v1/webhooks/${hook.id}/deliveries`],
      ['GET', `/v1/webhooks/${hook.id}/deliveries/dlv_x`],
      ['POST', `/v1/webhooks/${hook.id}/deliveries/dlv_x/redeliver`],
    ] as const;
    for (const headers of [{}, superAuth, a.userAuth, { authorization: 'Bearer nope' }]) {
      for (const [method, url] of routes) {
        const res = await t.inject({
          method,
          url,
          headers,
          payload:
            method === 'POST' || method === 'PATCH'
              ? { url: 'https://x.example', events: ['link.created'] }
              : undefined,
        });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
      }
    }
    // Collection B's key sees none of A's registrations.
    for (const [method, url] of routes.slice(2)) {
      const res = await t.inject({
        method,
        url,
        headers: b.auth,
        payload: method === 'PATCH' ? { active: true } : undefined,
      });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    expect((await api(b, 'GET', '/v1/webhooks')).json().items.map((w: Hook) => w.id)).not.toContain(hook.id);
    await api(a, 'DELETE', `/v1/webhooks/${hook.id}`);
  });
});

describe('delivery', () => {
  it('delivers every link event type, signed, with the seed envelope; other collections get nothing', async () => {
    const c = await t.createCollection();
    const other = await t.createCollection();
    const hook = await register(c, '/all', ['link.created', 'link.updated', 'link.deleted', 'link.clicked']);
    const otherHook = await register(other, '/other', ['link.created', 'link.updated', 'link.deleted', 'link.clicked']);
    const link = (await api(c, 'POST', `/admin/collection/${c.id}/links`, { url: 'https://dest.example/' })).json();
    await waitFor(async () => (rx.on('/all').length >= 1 ? true : undefined), 10_000, 'link.created');
    await api(c, 'PATCH', `/admin/collection/${c.id}/links/${link.id}`, { url: 'https://dest2.example/' });
    await waitFor(async () => (rx.on('/all').length >= 2 ? true : undefined), 10_000, 'link.updated');
    const visit = await t.inject({ method: 'GET', url: `/l/${link.code}`, headers: { 'user-agent': 'curl/8.0' } });
    expect(visit.statusCode).toBe(302);
    await waitFor(async () => (rx.on('/all').length >= 3 ? true : undefined), 10_000, 'link.clicked');
    await api(c, 'DELETE', `/admin/collection/${c.id}/links/${link.id}`);
    await waitFor(async () => (rx.on('/all').length >= 4 ? true : undefined), 10_000, 'link.deleted');

    const got = rx.on('/all');
    expect(got.map((r) => r.body.type)).toEqual(['link.created', 'link.updated', 'link.clicked', 'link.deleted']);
    for (const r of got) {
      expect(verify(r, hook.secret)).toBe(true);
      expect(verify(r, otherHook.secret)).toBe(false);
      expect(Object.keys(r.body).sort()).toEqual(['created_at', 'data', 'id', 'type']);
      expect(r.headers['webhook-id']).toBe(r.body.id);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body.data).toMatchObject({
        link_id: link.id,
        short_url: expect.stringMatching(/^http:\/\/short\.test\/l\//),
      });
    }
    expect(new Set(got.map((r) => r.body.id)).size).toBe(4);
    expect(got[0].body.data).toMatchObject({ destination_url: 'https://dest.example/', created_by: link.createdBy });
    expect(got[1].body.data).toMatchObject({
      destination_url: 'https://dest2.example/',
      changed_fields: ['destination_url'],
    });
    expect(got[2].body.data).toMatchObject({
      destination_url: 'https://dest2.example/',
      click: {
        ip_address: '127.0.0.1',
        user_agent: 'curl/8.0',
        referer: '',
        country: '',
        city: '',
        device_type: 'bot',
      },
    });
    expect(got[3].body.data).toMatchObject({
      destination_url: 'https://dest2.example/',
      deleted_at: expect.any(String),
    });
    // A tampered body does not verify.
    expect(verify({ ...got[0], raw: Buffer.from(got[0].raw.toString().replace('dest', 'evil')) }, hook.secret)).toBe(
      false,
    );
    expect(rx.on('/other')).toEqual([]);
    const log = await finalDeliveries(c, hook.id, 4);
    expect(log.every((d) => d.status === 'succeeded' && d.attempts[0].statusCode === 200)).toBe(true);
    expect(await deliveries(other, otherHook.id)).toEqual([]);
  });

  it('sends only subscribed types, and nothing to inactive registrations', async () => {
    const c = await t.createCollection();
    await register(c, '/only-deleted', ['link.deleted']);
    await register(c, '/inactive', ['link.created'], { active: false });
    const sink = await register(c, '/sink', ['link.created']);
    const link = (await api(c, 'POST', `/admin/collection/${c.id}/links`, { url: 'https://x.example/' })).json();
    await finalDeliveries(c, sink.id, 1);
    expect(rx.on('/only-deleted')).toEqual([]);
    expect(rx.on('/inactive')).toEqual([]);
    await api(c, 'DELETE', `/admin/collection/${c.id}/links/${link.id}`);
    await waitFor(async () => (rx.on('/only-deleted').length === 1 ? true : undefined), 10_000, 'link.deleted');
  });

  it('sends a test event on request', async () => {
    const hook = await register(a, '/test-event', ['link.clicked']);
    const queued = await sendTest(a, hook);
    await waitFor(async () => (rx.on('/test-event').length === 1 ? true : undefined), 10_000, 'test event');
    const r = rx.on('/test-event')[0];
    expect(r.body).toMatchObject({ type: 'webhook.test', id: queued.eventId, data: { webhook_id: hook.id } });
    expect(verify(r, hook.secret)).toBe(true);
    const d = (await finalDeliveries(a, hook.id, 1))[0];
    expect(d).toMatchObject({ status: 'succeeded', attemptCount: 1, eventType: 'webhook.test' });
    expect(d.attempts[0]).toMatchObject({
      attempt: 1,
      trigger: 'test',
      statusCode: 200,
      outcome: 'succeeded',
      responseExcerpt: 'ok',
    });
  });

  it('signs with the replaced secret too while its grace period lasts', async () => {
    const hook = await register(a, '/rotation', ['link.clicked']);
    const received = async (n: number) => {
      await sendTest(a, hook);
      await waitFor(async () => (rx.on('/rotation').length === n ? true : undefined), 10_000, `test event ${n}`);
      return rx.on('/rotation')[n - 1];
    };
    expect(hook).toMatchObject({ previousSecretExpiresAt: null });

    // A bare rotation: the old secret keeps signing for the default 24 hours, next to the new.
    const first = (await api(a, 'POST', `/v1/webhooks/${hook.id}/rotate-secret`)).json();
    expect(first.secret).not.toBe(hook.secret);
    const expires = Date.parse(first.previousSecretExpiresAt) - Date.now();
    expect(expires).toBeGreaterThan(86_000_000);
    expect(expires).toBeLessThanOrEqual(86_400_000);
    let r = await received(1);
    expect(signedWith(r, first.secret)).toMatchObject({ service: true, standard: true, fresh: true });
    expect(signedWith(r, hook.secret)).toMatchObject({ service: false, servicePrevious: true, standard: true });
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(2);

    // A rotation sets its own grace period; rotating again starts one for the secret just replaced.
    const second = (await api(a, 'POST', `/v1/webhooks/${hook.id}/rotate-secret`, { graceSeconds: 60 })).json();
    const grace = Date.parse(second.previousSecretExpiresAt) - Date.now();
    expect(grace).toBeGreaterThan(50_000);
    expect(grace).toBeLessThanOrEqual(60_000);
    r = await received(2);
    expect(signedWith(r, second.secret)).toMatchObject({ service: true, standard: true });
    expect(signedWith(r, first.secret)).toMatchObject({ servicePrevious: true, standard: true });
    expect(signedWith(r, hook.secret)).toMatchObject({ service: false, servicePrevious: false, standard: false });

    // Once the grace period is over (moved into the past here, rather than waited for), the
    // replaced secret signs nothing more.
    await t.testDb.db.query(
      `UPDATE webhooks SET previous_secret_expires_at = now() - interval '1 second' WHERE collection_id = $1 AND id = $2`,
      [a.id, hook.id],
    );
    r = await received(3);
    expect(signedWith(r, second.secret)).toMatchObject({ service: true, standard: true });
    expect(signedWith(r, first.secret)).toMatchObject({ servicePrevious: false, standard: false });
    expect(r.headers['x-service-signature-previous']).toBeUndefined();
    // Housekeeping then erases the retired secret from the database.
    const stored = async () =>
      (
        await t.testDb.db.query<{ previous_secret: string | null }>(
          'SELECT previous_secret FROM webhooks WHERE collection_id = $1 AND id = $2',
          [a.id, hook.id],
        )
      ).rows[0].previous_secret;
    expect(await stored()).toBe(first.secret);
    expect(await t.app.services.webhooks.forgetRetiredSecrets()).toBeGreaterThanOrEqual(1);
    expect(await stored()).toBeNull();
    const got = (await api(a, 'GET', `/v1/webhooks/${hook.id}`)).json();
    expect(got).toMatchObject({ previousSecretExpiresAt: null });
    expect(got.secret).toBeUndefined();

    // After a leak: graceSeconds 0 retires the replaced secret at once.
    const third = (await api(a, 'POST', `/v1/webhooks/${hook.id}/rotate-secret`, { graceSeconds: 0 })).json();
    expect(third.previousSecretExpiresAt).toBeNull();
    r = await received(4);
    expect(verify(r, third.secret)).toBe(true);
    expect(signedWith(r, second.secret)).toMatchObject({ service: false, servicePrevious: false, standard: false });
    expect(String(r.headers['webhook-signature']).split(' ')).toHaveLength(1);
  });

  it('refuses a bad rotation and keeps the secret', async () => {
    const hook = await register(a, '/bad-rotation', ['link.clicked']);
    const secretOf = async () =>
      (
        await t.testDb.db.query<{ secret: string; previous_secret: string | null }>(
          'SELECT secret, previous_secret FROM webhooks WHERE collection_id = $1 AND id = $2',
          [a.id, hook.id],
        )
      ).rows[0];
    const before = await secretOf();
    for (const payload of [{ graceSeconds: -1 }, { graceSeconds: 604_801 }, { graceSeconds: 'soon' }, { grace: 5 }]) {
      const res = await api(a, 'POST', `/v1/webhooks/${hook.id}/rotate-secret`, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json()).toMatchObject({ errorCode: 'VALIDATION_FAILED' });
    }
    expect(await secretOf()).toEqual(before);
  });
});

// Concurrent: these mostly wait (backoffs, a receiver timing out, Retry-After), each on its own
// registration and with test events only, so none sees another's deliveries.
describe.concurrent('retries', () => {
  it('retries a 500 three times on the backoff schedule, with the same event id, then gives up', async () => {
    rx.answer('/fail500', { status: 500, body: 'boom' });
    const hook = await register(a, '/fail500', ['link.created']);
    const queued = await sendTest(a, hook);
    const [d] = await finalDeliveries(a, hook.id, 1);
    expect(d.status).toBe('failed');
    expect(d.attempts.map((x) => [x.attempt, x.trigger, x.statusCode, x.outcome])).toEqual([
      [1, 'test', 500, 'failed'],
      [2, 'retry', 500, 'failed'],
      [3, 'retry', 500, 'failed'],
      [4, 'retry', 500, 'failed'],
    ]);
    expect(d.attempts[0].responseExcerpt).toBe('boom');
    // Each retry waited at least its backoff (base × factor^(n-1), minus the 20 % jitter).
    for (let i = 1; i < 4; i++) {
      const gap = Date.parse(d.attempts[i].at) - Date.parse(d.attempts[i - 1].at);
      expect(gap).toBeGreaterThanOrEqual(Math.floor(0.8 * BASE_MS * FACTOR ** (i - 1)));
    }
    const got = rx.on('/fail500');
    expect(got).toHaveLength(4);
    expect(new Set(got.map((r) => r.body.id))).toEqual(new Set([queued.eventId]));
    expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([queued.eventId]));
    // One failed delivery: its last automatic retry failed.
    expect((await api(a, 'GET', `/v1/webhooks/${hook.id}`)).json().consecutiveFailures).toBe(1);
  });

  it('retries a receiver that times out, and one that refuses connections', async () => {
    // An app of its own with a short timeout: here every attempt must time out (the receiver
    // never answers), so a short timeout cannot turn a success into a failure, and four
    // attempts do not cost four of the main app's generous timeouts.
    const short = await createTestApp({
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_RETRY_BASE_MS: String(BASE_MS),
      WEBHOOK_RETRY_FACTOR: String(FACTOR),
      WEBHOOK_TIMEOUT_MS: '500',
      WEBHOOK_BACKOFF_BASE_MS: '0',
      JOBS_POLL_INTERVAL_MS: '200',
    });
    try {
      const c = await short.createCollection();
      const on = (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
        short.inject({ method, url, headers: c.auth, payload });
      rx.answer('/hang', { hang: true });
      const closedPort = await freePort();
      const hooks = [];
      for (const url of [`${rx.url}/hang`, `http://127.0.0.1:${closedPort}/nobody`]) {
        const res = await on('POST', '/v1/webhooks', { url, events: ['link.created'] });
        expect(res.statusCode, res.body).toBe(200);
        hooks.push(res.json() as Hook);
      }
      const [hung, refused] = hooks;
      for (const hook of hooks) expect((await on('POST', `/v1/webhooks/${hook.id}/test`)).statusCode).toBe(202);
      const final = (hookId: string) =>
        waitFor(
          async () => {
            const items = (await on('GET', `/v1/webhooks/${hookId}/deliveries`)).json().items as Awaited<
              ReturnType<typeof deliveries>
            >;
            return items.length === 1 && items[0].status !== 'pending' ? items[0] : undefined;
          },
          60_000,
          `the final delivery of ${hookId}`,
        );
      const h = await final(hung.id);
      expect(h.attempts.map((x) => [x.outcome, x.error])).toEqual(Array(4).fill(['failed', 'timeout']));
      expect(rx.on('/hang')).toHaveLength(4);
      const r = await final(refused.id);
      expect(r.attempts).toHaveLength(4);
      for (const x of r.attempts) expect(x.error).toMatch(/ECONNREFUSED/);
    } finally {
      await short.close();
    }
  });

  it('honours Retry-After within the cap, and does not follow redirects', async () => {
    rx.answer('/busy', [{ status: 503, headers: { 'retry-after': '1' } }, { status: 200 }]);
    const busy = await register(a, '/busy', ['link.created']);
    await sendTest(a, busy);
    const [d] = await finalDeliveries(a, busy.id, 1);
    expect(d.status).toBe('succeeded');
    expect(Date.parse(d.attempts[1].at) - Date.parse(d.attempts[0].at)).toBeGreaterThanOrEqual(1000);

    rx.answer('/moved', { status: 302, headers: { location: `${rx.url}/moved-target` } });
    const moved = await register(a, '/moved', ['link.created']);
    await sendTest(a, moved);
    const [m] = await finalDeliveries(a, moved.id, 1);
    expect(m.attempts[0]).toMatchObject({ statusCode: 302, outcome: 'failed', error: 'redirect not followed' });
    expect(rx.on('/moved-target')).toEqual([]);

    rx.answer('/big', { status: 500, body: 'x'.repeat(1_000_000) });
    const big = await register(a, '/big', ['link.created'], {});
    await api(a, 'PATCH', `/v1/webhooks/${big.id}`, { active: true });
    await sendTest(a, big);
    const [g] = await finalDeliveries(a, big.id, 1);
    expect(g.attempts[0].responseExcerpt?.length).toBe(2048);
  });

  it('computes the production schedule: about 1 min, 10 min, 1 h, capped, Retry-After within the cap', () => {
    const prod = { retryBaseMs: 60_000, retryFactor: 10, retryMaxDelayMs: 3_600_000 };
    const mid = () => 0.5;
    expect([1, 2, 3].map((n) => retryDelayMs(prod, n, null, mid))).toEqual([60_000, 600_000, 3_600_000]);
    expect(retryDelayMs(prod, 1, null, () => 0)).toBe(48_000);
    expect(retryDelayMs(prod, 1, null, () => 0.999_999)).toBeLessThanOrEqual(72_000);
    expect(retryDelayMs(prod, 3, null, () => 0.999_999)).toBe(3_600_000);
    expect(retryDelayMs(prod, 1, 300_000, mid)).toBe(300_000);
    expect(retryDelayMs(prod, 1, 86_400_000, mid)).toBe(3_600_000);
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(55_000);
    expect(parseRetryAfter('soon')).toBeNull();
  });
});

describe('disabling', () => {
  it('disables after 10 consecutive failed deliveries (not attempts); nothing more is sent; PATCH re-enables and resets', async () => {
    rx.answer('/dead', { status: 500 });
    const hook = await register(a, '/dead', ['link.created']);
    // 4 attempts per delivery: the 10th delivery's last retry is the 10th failed delivery.
    for (let i = 1; i <= 10; i++) {
      await sendTest(a, hook);
      await finalDeliveries(a, hook.id, i);
      if (i < 10) expect((await api(a, 'GET', `/v1/webhooks/${hook.id}`)).json()).toMatchObject({ active: true });
    }
    const after = (await api(a, 'GET', `/v1/webhooks/${hook.id}`)).json();
    expect(after).toMatchObject({ active: false, consecutiveFailures: 10, disabledAt: expect.any(String) });
    expect(after.disabledReason).toMatch(/10 consecutive failed deliveries/);
    expect(rx.on('/dead')).toHaveLength(40);
    const log = await deliveries(a, hook.id);
    expect(log[0].attempts).toHaveLength(4);

    // Disabled: no new deliveries for new events; test and redeliver are refused.
    await api(a, 'POST', `/admin/collection/${a.id}/links`, { url: 'https://after-disable.example/' });
    expect((await api(a, 'POST', `/v1/webhooks/${hook.id}/test`)).statusCode).toBe(409);
    expect((await api(a, 'POST', `/v1/webhooks/${hook.id}/deliveries/${log[0].id}/redeliver`)).statusCode).toBe(409);
    expect(await deliveries(a, hook.id)).toHaveLength(10);
    expect(rx.on('/dead')).toHaveLength(40);

    const reenabled = await api(a, 'PATCH', `/v1/webhooks/${hook.id}`, { active: true });
    expect(reenabled.json()).toMatchObject({
      active: true,
      consecutiveFailures: 0,
      disabledAt: null,
      disabledReason: null,
    });
  });

  it('a success in between resets the count', async () => {
    rx.answer('/flaky', [{ status: 500 }, { status: 500 }, { status: 500 }, { status: 200 }, { status: 500 }]);
    const hook = await register(a, '/flaky', ['link.created']);
    await sendTest(a, hook);
    const [d] = await finalDeliveries(a, hook.id, 1);
    expect(d.status).toBe('succeeded');
    expect(d.attemptCount).toBe(4);
    expect((await api(a, 'GET', `/v1/webhooks/${hook.id}`)).json().consecutiveFailures).toBe(0);
    await sendTest(a, hook);
    await finalDeliveries(a, hook.id, 2);
    // The second delivery failed after its four attempts: one failed delivery.
    expect((await api(a, 'GET', `/v1/webhooks/${hook.id}`)).json()).toMatchObject({
      consecutiveFailures: 1,
      active: true,
    });
  });
});

describe('redelivery and duplicates', () => {
  it('redelivers a failed delivery with the same event id; stale duplicate jobs change nothing', async () => {
    rx.answer('/redo', { status: 500 });
    const hook = await register(a, '/redo', ['link.created']);
    const queued = await sendTest(a, hook);
    const [failed] = await finalDeliveries(a, hook.id, 1);
    expect(failed.status).toBe('failed');
    rx.answer('/redo', { status: 200 });
    const res = await api(a, 'POST', `/v1/webhooks/${hook.id}/deliveries/${failed.id}/redeliver`);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ id: failed.id, status: 'pending' });
    const [done] = await finalDeliveries(a, hook.id, 1);
    expect(done.status).toBe('succeeded');
    expect(done.attempts.map((x) => x.trigger)).toEqual(['test', 'retry', 'retry', 'retry', 'redeliver']);
    const got = rx.on('/redo');
    expect(got).toHaveLength(5);
    expect(new Set(got.map((r) => r.body.id))).toEqual(new Set([queued.eventId]));
    expect(new Set(got.map((r) => r.raw.toString()))).toHaveLength(1);

    // A duplicated job for an attempt already made is skipped.
    const job = await t.app.services.jobs.engine.enqueue(t.testDb.db, a.id, {
      task: 'webhooks.deliver',
      payload: { deliveryId: failed.id, attempt: 1, trigger: 'automatic' },
    });
    await waitFor(
      async () => {
        // Completed: an internal task's job is deleted by its completion (a failure would stay).
        const { rows } = await t.testDb.db.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [job.id]);
        return rows.length === 0 ? true : undefined;
      },
      10_000,
      'the duplicate job',
    );
    expect(rx.on('/redo')).toHaveLength(5);
    // Unknown delivery ids are 404.
    expect((await api(a, 'POST', `/v1/webhooks/${hook.id}/deliveries/dlv_nope/redeliver`)).statusCode).toBe(404);
    expect((await api(a, 'GET', `/v1/webhooks/${hook.id}/deliveries/${failed.id}`)).json().attemptCount).toBe(5);
  });
});

describe('delivery log retention', () => {
  it('removing a registration, an event or a collection removes their deliveries and attempts, no one else’s', async () => {
    const db = t.testDb.db;
    const [c, gone, other] = [await t.createCollection(), await t.createCollection(), await t.createCollection()];
    const h1 = await register(c, '/rm-1', ['link.created']);
    const h2 = await register(c, '/rm-2', ['link.created']);
    const hGone = await register(gone, '/rm-gone', ['link.created']);
    const hOther = await register(other, '/rm-other', ['link.created']);
    const sent = new Map<Hook, { id: string; eventId: string }[]>();
    for (const h of [h1, h2, hGone, hOther]) {
      const owner = h === hGone ? gone : h === hOther ? other : c;
      sent.set(h, [await sendTest(owner, h), await sendTest(owner, h)]);
      await finalDeliveries(owner, h.id, 2);
    }
    const rows = async (collectionId: string) => {
      const n = async (q: string) => Number((await db.query<{ n: string }>(q, [collectionId])).rows[0].n);
      return {
        events: await n('SELECT count(*) AS n FROM webhook_events WHERE collection_id = $1'),
        deliveries: await n('SELECT count(*) AS n FROM webhook_deliveries WHERE collection_id = $1'),
        attempts: await n('SELECT count(*) AS n FROM webhook_attempts WHERE collection_id = $1'),
      };
    };
    expect(await rows(c.id)).toEqual({ events: 4, deliveries: 4, attempts: 4 });
    const untouched = await rows(other.id);
    expect(untouched).toEqual({ events: 2, deliveries: 2, attempts: 2 });

    // A registration: its deliveries and their attempts go (its events stay: other
    // registrations may have deliveries of them).
    expect((await api(c, 'DELETE', `/v1/webhooks/${h1.id}`)).statusCode).toBe(200);
    expect(await rows(c.id)).toEqual({ events: 4, deliveries: 2, attempts: 2 });
    // An event (as retention removes it): its delivery and attempt go.
    const [first] = sent.get(h2) ?? [];
    await db.query('DELETE FROM webhook_events WHERE collection_id = $1 AND id = $2', [c.id, first.eventId]);
    expect(await rows(c.id)).toEqual({ events: 3, deliveries: 1, attempts: 1 });
    expect((await api(c, 'GET', `/v1/webhooks/${h2.id}/deliveries/${first.id}`)).statusCode).toBe(404);
    // A collection: everything of it goes.
    expect(await rows(gone.id)).toEqual({ events: 2, deliveries: 2, attempts: 2 });
    await db.query('DELETE FROM collections WHERE id = $1', [gone.id]);
    expect(await rows(gone.id)).toEqual({ events: 0, deliveries: 0, attempts: 0 });
    // The other collection's rows stayed through all of it.
    expect(await rows(other.id)).toEqual(untouched);
  });

  it('deletes finished deliveries past the retention, never waiting ones', async () => {
    const c = await t.createCollection();
    const hook = await register(c, '/retention', ['link.created']);
    await sendTest(c, hook);
    await sendTest(c, hook);
    const [waiting, done] = await finalDeliveries(c, hook.id, 2);
    // As if the first still waited for a retry.
    await t.testDb.db.query("UPDATE webhook_deliveries SET status = 'pending' WHERE id = $1", [waiting.id]);
    expect(await t.app.services.webhooks.prune(Date.now())).toBe(0);
    expect(await t.app.services.webhooks.prune(Date.now() + 31 * 86_400_000)).toBeGreaterThanOrEqual(1);
    const left = await deliveries(c, hook.id);
    expect(left.map((d) => d.id)).toEqual([waiting.id]);
    expect((await api(c, 'GET', `/v1/webhooks/${hook.id}/deliveries/${done.id}`)).statusCode).toBe(404);
  });
});
