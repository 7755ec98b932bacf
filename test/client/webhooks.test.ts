/**
 * A receiver written with the client's `verifyWebhook`, fed real deliveries by the running
 * service (loopback, WEBHOOK_ALLOW_PRIVATE_NETWORKS=true). It accepts what the service signs
 * and refuses a tampered body, a wrong secret and an old timestamp; `x-service-signature`
 * alone verifies too, and a rotation's grace period keeps both secrets verifying. The stock
 * `standardwebhooks` package verifies the same real deliveries.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import {
  createClient,
  type ServiceClient,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
} from '../../clients/typescript/src/index.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { waitFor } from '../helpers/jobs.ts';

/** What the receiver was sent and what it answered. */
interface Seen {
  path: string;
  raw: Buffer;
  headers: IncomingHttpHeaders;
  status: number;
  event?: WebhookEvent;
  reason?: string;
}

/** How the receiver verifies the requests to one path. */
type PathConfig = Pick<VerifyWebhookOptions, 'secret' | 'schemes'> & { clockOffsetSeconds?: number };

/**
 * The receiver of docs/client.md: raw body in, `verifyWebhook`, 200 or 401 with the reason.
 * Each path has its own secret (and, to play a replay arriving late, its own clock).
 */
async function startVerifyingReceiver() {
  const paths = new Map<string, PathConfig>();
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      const path = (req.url ?? '/').split('?')[0];
      const config = paths.get(path);
      const record: Seen = { path, raw, headers: req.headers, status: 401 };
      seen.push(record);
      if (!config) return res.writeHead(404).end();
      try {
        record.event = await verifyWebhook({
          rawBody: raw,
          headers: req.headers,
          secret: config.secret,
          schemes: config.schemes,
          now: Date.now() + (config.clockOffsetSeconds ?? 0) * 1000,
        });
        record.status = 200;
        res.writeHead(200).end();
      } catch (err) {
        if (!(err instanceof WebhookVerificationError)) throw err;
        record.reason = err.reason;
        res.writeHead(401, { 'content-type': 'text/plain' }).end(err.reason);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    on: (path: string, config: PathConfig) => paths.set(path, config),
    /** Sends a recorded request again, changed as told, and answers the receiver's status and body. */
    async replay(original: Seen, path: string, change: { raw?: Buffer; drop?: string[] } = {}) {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(original.headers)) {
        if (['host', 'content-length', 'connection', ...(change.drop ?? [])].includes(name)) continue;
        if (typeof value === 'string') headers[name] = value;
      }
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers,
        body: new Uint8Array(change.raw ?? original.raw),
      });
      return { status: res.status, body: await res.text() };
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let t: TestApp;
let rx: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let admin: ServiceClient;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_MAX_RETRIES: '0',
    WEBHOOK_TIMEOUT_MS: '2000',
    JOBS_POLL_INTERVAL_MS: '100',
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const c = await t.createCollection();
  admin = createClient({ baseUrl, apiKey: c.key });
  rx = await startVerifyingReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

/** Registers `path` of the receiver; the receiver verifies with the secret the service answered. */
async function register(path: string) {
  const hook = await admin.POST('/v1/webhooks', { body: { url: `${rx.url}${path}`, events: ['link.created'] } });
  rx.on(path, { secret: hook.secret! });
  return { id: hook.id, secret: hook.secret! };
}

/** Sends a `webhook.test` event to the registration and waits for its delivery to be final. */
async function deliverTest(hookId: string) {
  const queued = await admin.POST('/v1/webhooks/{id}/test', { params: { path: { id: hookId } } });
  const delivery = await waitFor(async () => {
    const d = await admin.GET('/v1/webhooks/{id}/deliveries/{deliveryId}', {
      params: { path: { id: hookId, deliveryId: queued.id } },
    });
    return d.status === 'pending' ? undefined : d;
  }, 30_000);
  const request = rx.seen.find((s) => s.event?.id === delivery.eventId || s.raw.includes(delivery.eventId));
  expect(request, `the receiver saw ${delivery.eventId}`).toBeDefined();
  return { delivery, request: request! };
}

const stringHeaders = (h: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(h).filter((e): e is [string, string] => typeof e[1] === 'string'));

const tamper = (raw: Buffer) => Buffer.from(raw.toString('utf8').replace('"webhook.test"', '"webhook.tesT"'));

const refusedFor = async (options: VerifyWebhookOptions) => {
  const err = await verifyWebhook(options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebhookVerificationError);
  return (err as WebhookVerificationError).reason;
};

describe('a receiver using verifyWebhook', () => {
  it('accepts a real delivery, and refuses it tampered, with a wrong secret, or late', async () => {
    const hook = await register('/ok');
    const { delivery, request } = await deliverTest(hook.id);
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: [{ statusCode: 200, outcome: 'succeeded' }] });
    expect(request.status).toBe(200);
    expect(request.event).toMatchObject({ type: 'webhook.test', id: delivery.eventId, data: { webhook_id: hook.id } });
    // The answer is the catalogue's union: narrowing on `type` types `data` (checked by tsc).
    const event = request.event!;
    if (event.type === 'webhook.test') {
      expectTypeOf(event.data).toEqualTypeOf<{ webhook_id: string; message: string }>();
      expect(event.data.message.length).toBeGreaterThan(0);
    }
    if (event.type === 'link.clicked') expectTypeOf(event.data.click.country).toEqualTypeOf<string | null>();

    // The same request with one byte of its body changed.
    expect(await rx.replay(request, '/ok', { raw: tamper(request.raw) })).toEqual({
      status: 401,
      body: 'bad_signature',
    });
    // The same request to a receiver holding another secret.
    rx.on('/other-secret', { secret: `whsec_${randomBytes(32).toString('base64')}` });
    expect(await rx.replay(request, '/other-secret')).toEqual({ status: 401, body: 'bad_signature' });
    // The same request replayed six minutes later (the receiver's clock moved on).
    rx.on('/late', { secret: hook.secret, clockOffsetSeconds: 360 });
    expect(await rx.replay(request, '/late')).toEqual({ status: 401, body: 'timestamp_too_old' });
    // … or arriving from a sender whose clock runs six minutes ahead.
    rx.on('/early', { secret: hook.secret, clockOffsetSeconds: -360 });
    expect(await rx.replay(request, '/early')).toEqual({ status: 401, body: 'timestamp_too_new' });
    // Within the tolerance it is still accepted.
    rx.on('/a-bit-late', { secret: hook.secret, clockOffsetSeconds: 200 });
    expect((await rx.replay(request, '/a-bit-late')).status).toBe(200);
  });

  it('refuses a delivery signed with another secret, and the service logs the refusal', async () => {
    const hook = await register('/wrong');
    rx.on('/wrong', { secret: `whsec_${randomBytes(32).toString('base64')}` });
    const { delivery, request } = await deliverTest(hook.id);
    expect(request).toMatchObject({ status: 401, reason: 'bad_signature' });
    expect(delivery).toMatchObject({ status: 'failed', lastStatusCode: 401 });
    expect(delivery.attempts[0].responseExcerpt).toBe('bad_signature');
  });

  it('verifies x-service-signature alone over the raw body; with schemes [standard] it is refused', async () => {
    const hook = await register('/service');
    const { request } = await deliverTest(hook.id);
    const standardHeaders = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];
    expect((await rx.replay(request, '/service', { drop: standardHeaders })).status).toBe(200);
    expect(await rx.replay(request, '/service', { drop: standardHeaders, raw: tamper(request.raw) })).toEqual({
      status: 401,
      body: 'bad_signature',
    });
    // The body as text is the same bytes: accepted; re-serialised JSON would not be.
    const headers = stringHeaders(request.headers);
    for (const h of standardHeaders) delete headers[h];
    await expect(
      verifyWebhook({ rawBody: request.raw.toString('utf8'), headers, secret: hook.secret }),
    ).resolves.toMatchObject({
      type: 'webhook.test',
    });
    const reserialised = JSON.stringify(JSON.parse(request.raw.toString('utf8')), null, 1);
    expect(await refusedFor({ rawBody: reserialised, headers, secret: hook.secret })).toBe('bad_signature');
    // A receiver that insists on a checked timestamp.
    rx.on('/standard-only', { secret: hook.secret, schemes: ['standard'] });
    expect(await rx.replay(request, '/standard-only', { drop: standardHeaders })).toEqual({
      status: 401,
      body: 'missing_signature',
    });
    expect((await rx.replay(request, '/standard-only')).status).toBe(200);
    // No signature at all.
    expect(
      await refusedFor({
        rawBody: request.raw,
        headers: { 'content-type': 'application/json' },
        secret: hook.secret,
      }),
    ).toBe('missing_signature');
  });

  it('keeps verifying with the replaced secret during a rotation’s grace period, and not after one of 0 s', async () => {
    const hook = await register('/rotate');
    const first = hook.secret;
    const rotated = await admin.POST('/v1/webhooks/{id}/rotate-secret', {
      params: { path: { id: hook.id } },
      body: { graceSeconds: 3600 },
    });
    const second = rotated.secret!;
    // The receiver has not deployed the new secret yet: deliveries still verify with the old one.
    const { delivery, request } = await deliverTest(hook.id);
    expect(delivery.status).toBe('succeeded');
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(request.headers['x-service-signature-previous']).toMatch(/^[0-9a-f]{64}$/);
    const headers = stringHeaders(request.headers);
    const serviceOnly = { ...headers };
    for (const h of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) delete serviceOnly[h];
    for (const secret of [first, second]) {
      await expect(verifyWebhook({ rawBody: request.raw, headers, secret })).resolves.toBeDefined();
      await expect(verifyWebhook({ rawBody: request.raw, headers: serviceOnly, secret })).resolves.toBeDefined();
    }

    // After a leak: grace 0, the replaced secret stops signing at once.
    const again = await admin.POST('/v1/webhooks/{id}/rotate-secret', {
      params: { path: { id: hook.id } },
      body: { graceSeconds: 0 },
    });
    rx.on('/rotate', { secret: second });
    const late = await deliverTest(hook.id);
    expect(late.request).toMatchObject({ status: 401, reason: 'bad_signature' });
    expect(String(late.request.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(late.request.headers['x-service-signature-previous']).toBeUndefined();
    const lateHeaders = stringHeaders(late.request.headers);
    expect(await refusedFor({ rawBody: late.request.raw, headers: lateHeaders, secret: first })).toBe('bad_signature');
    // A receiver holding both while it switches accepts with either list order.
    await expect(
      verifyWebhook({ rawBody: late.request.raw, headers: lateHeaders, secret: [second, again.secret!] }),
    ).resolves.toMatchObject({ type: 'webhook.test' });
  });
});

describe('the stock standardwebhooks package', () => {
  it('verifies the same real delivery, and refuses it tampered, with a wrong secret, or late', async () => {
    const hook = await register('/stock');
    const { request } = await deliverTest(hook.id);
    const headers = stringHeaders(request.headers);
    const payload = request.raw.toString('utf8');
    const ours = await verifyWebhook({ rawBody: request.raw, headers, secret: hook.secret });
    expect(new Webhook(hook.secret).verify(payload, headers)).toEqual(ours);

    expect(() => new Webhook(hook.secret).verify(tamper(request.raw).toString('utf8'), headers)).toThrow();
    const wrong = `whsec_${randomBytes(32).toString('base64')}`;
    expect(() => new Webhook(wrong).verify(payload, headers)).toThrow();
    expect(await refusedFor({ rawBody: request.raw, headers, secret: wrong })).toBe('bad_signature');

    // Six minutes later, for both.
    const ts = Number(headers['webhook-timestamp']) * 1000;
    expect(await refusedFor({ rawBody: request.raw, headers, secret: hook.secret, now: ts + 360_000 })).toBe(
      'timestamp_too_old',
    );
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(ts + 360_000);
      expect(() => new Webhook(hook.secret).verify(payload, headers)).toThrow(/too old/i);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('verifyWebhook on signed samples', () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const sign = (id: string, ts: string, body: string) =>
    `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
      .update(`${id}.${ts}.${body}`)
      .digest('base64')}`;
  const body = JSON.stringify({ type: 'link.created', id: 'evt_1', created_at: new Date().toISOString(), data: {} });
  const ts = String(Math.floor(Date.now() / 1000));

  it('reads headers from a fetch Headers or a record in any case, and skips malformed signatures', async () => {
    const signature = `v1,!!notbase64 v2,${sign('evt_1', ts, body).slice(3)} ${sign('evt_1', ts, body)}`;
    const headers = new Headers({ 'webhook-id': 'evt_1', 'webhook-timestamp': ts, 'webhook-signature': signature });
    await expect(verifyWebhook({ rawBody: body, headers, secret })).resolves.toMatchObject({ id: 'evt_1' });
    const record = { 'Webhook-Id': 'evt_1', 'WEBHOOK-TIMESTAMP': ts, 'Webhook-Signature': signature };
    await expect(
      verifyWebhook({ rawBody: new TextEncoder().encode(body), headers: record, secret }),
    ).resolves.toBeDefined();
  });

  it('names what is wrong: a timestamp that is not a number, a missing id, a body that is not an event', async () => {
    const headers = (over: Record<string, string>) => ({
      'webhook-id': 'evt_1',
      'webhook-timestamp': ts,
      'webhook-signature': sign('evt_1', ts, body),
      ...over,
    });
    expect(await refusedFor({ rawBody: body, headers: headers({ 'webhook-timestamp': 'soon' }), secret })).toBe(
      'bad_timestamp',
    );
    expect(await refusedFor({ rawBody: body, headers: headers({ 'webhook-id': '' }), secret })).toBe(
      'missing_signature',
    );
    expect(await refusedFor({ rawBody: body, headers: headers({ 'webhook-id': 'evt_2' }), secret })).toBe(
      'bad_signature',
    );
    const text = 'not json';
    expect(
      await refusedFor({ rawBody: text, headers: headers({ 'webhook-signature': sign('evt_1', ts, text) }), secret }),
    ).toBe('bad_body');
    await expect(verifyWebhook({ rawBody: body, headers: headers({}), secret: [] })).rejects.toThrow(TypeError);
  });
});
