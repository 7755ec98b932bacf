/**
 * A first session driven through the typed client alone, against the real service listening
 * on a loopback port (the network is the subject here: rule 1's exception). Super key →
 * collection and admin key; admin key → a link, a webhook to a real receiver, the link
 * followed and its delivery seen, a job enqueued and read until done, interaction events and
 * a journey's funnel report. Refusals arrive as ServiceError with the service's error body.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import {
  createClient,
  type Schemas,
  type ServiceClient,
  ServiceError,
  verifyWebhook,
} from '../../clients/typescript/src/index.ts';
import { createTestApp, SUPER_KEY, type TestApp } from '../helpers/app.ts';
import { waitFor } from '../helpers/jobs.ts';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.ts';

let t: TestApp;
let rx: Receiver;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_TIMEOUT_MS: '2000',
    CLICK_FLUSH_MS: '5',
    JOBS_POLL_INTERVAL_MS: '100',
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

/** The error a call throws, for asserting on it. */
async function refusal(call: Promise<unknown>): Promise<ServiceError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

describe('a first session through the client', () => {
  const collectionId = `client${Math.random().toString(36).slice(2, 8)}`;
  let admin: ServiceClient;

  it('creates a collection and an admin key with the super key', async () => {
    const root = createClient({ baseUrl, apiKey: SUPER_KEY });
    const collection = await root.POST('/platform/collections', { body: { id: collectionId, name: 'Client Co' } });
    expect(collection).toMatchObject({ id: collectionId, name: 'Client Co' });
    expectTypeOf(collection).toEqualTypeOf<Schemas['Collection']>();
    const key = await root.POST('/admin/collection/{collectionId}/api-keys', {
      params: { path: { collectionId } },
      body: { name: 'client session' },
    });
    expect(key.key).toEqual(expect.any(String));
    // The key as X-API-Key, the other way the service reads an admin key.
    admin = createClient({ baseUrl, apiKey: key.key, apiKeyHeader: 'x-api-key' });
    const keys = await admin.GET('/admin/collection/{collectionId}/api-keys', { params: { path: { collectionId } } });
    expect(keys.items.map((k) => k.name)).toContain('client session');
  });

  it('creates a link and a webhook, follows the link, and sees the delivery', async () => {
    const hook = await admin.POST('/v1/webhooks', {
      body: { url: `${rx.url}/session`, events: ['link.created', 'link.clicked'], description: 'session' },
    });
    expect(hook.secret).toMatch(/^whsec_/);
    const link = await admin.POST('/admin/collection/{collectionId}/links', {
      params: { path: { collectionId } },
      body: { url: 'https://example.com/client', title: 'Client', tags: ['sdk'] },
    });
    expect(link).toMatchObject({ destinationUrl: 'https://example.com/client', title: 'Client', clicks: 0 });

    // Following it, as a browser would: a 302 to the destination (raw client: the header matters).
    const followed = await admin.raw.GET('/l/{code}', { params: { path: { code: link.code } }, redirect: 'manual' });
    expect(followed.response.status).toBe(302);
    expect(followed.response.headers.get('location')).toBe('https://example.com/client');

    const clicked = await waitFor(async () => {
      const page = await admin.GET('/v1/webhooks/{id}/deliveries', {
        params: { path: { id: hook.id }, query: { eventType: 'link.clicked', status: 'succeeded' } },
      });
      return page.items[0];
    }, 30_000);
    expect(clicked).toMatchObject({ eventType: 'link.clicked', status: 'succeeded', attemptCount: 1 });
    const delivery = await admin.GET('/v1/webhooks/{id}/deliveries/{deliveryId}', {
      params: { path: { id: hook.id, deliveryId: clicked.id } },
    });
    expect(delivery.attempts[0]).toMatchObject({ outcome: 'succeeded', statusCode: 200 });

    // The receiver got it, signed with the registration's secret.
    const received = rx.on('/session').find((r) => r.body.id === clicked.eventId);
    expect(received).toBeDefined();
    const event = await verifyWebhook({ rawBody: received!.raw, headers: received!.headers, secret: hook.secret! });
    expect(event).toMatchObject({ type: 'link.clicked', data: { link_id: link.id } });

    const clicks = await admin.GET('/admin/collection/{collectionId}/links/{linkId}/clicks', {
      params: { path: { collectionId, linkId: link.id } },
    });
    expect(clicks.items.length).toBe(1);
    expect(
      (
        await admin.GET('/admin/collection/{collectionId}/links/{linkId}', {
          params: { path: { collectionId, linkId: link.id } },
        })
      ).clicks,
    ).toBe(1);
  });

  it('enqueues a job and reads it until done', async () => {
    const queued = await admin.POST('/admin/collection/{collectionId}/async/jobs', {
      params: { path: { collectionId } },
      body: {
        task: 'records.import',
        payload: {
          appId: 'desk',
          items: [
            { ref: 'r1', recordType: 'note' },
            { ref: 'r2', recordType: 'note' },
          ],
        },
      },
    });
    expect(queued.task).toBe('records.import');
    const done = await waitFor(async () => {
      const job = await admin.GET('/admin/collection/{collectionId}/jobs/{jobId}', {
        params: { path: { collectionId, jobId: String(queued.id) } },
      });
      return ['completed', 'failed'].includes(job.status) ? job : undefined;
    }, 30_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.result).toMatchObject({ total: 2, saved: 2 });
    const list = await admin.GET('/admin/collection/{collectionId}/jobs', {
      params: { path: { collectionId }, query: { task: 'records.import' } },
    });
    expect(list.items.map((j) => j.id)).toContain(queued.id);
  });

  it('records interaction events and reads a journey’s funnel report', async () => {
    for (const id of ['enter', 'view']) {
      await admin.POST('/admin/collection/{collectionId}/interactions', {
        params: { path: { collectionId } },
        body: { id, appId: 'shop' },
      });
    }
    const journey = await admin.POST('/admin/collection/{collectionId}/journeys', {
      params: { path: { collectionId } },
      body: {
        name: 'Onboarding',
        journeyType: 'event_triggered',
        data: { steps: [{ id: 'viewed', config: { interactionId: 'view' } }] },
      },
    });
    const at = (minutes: number) => new Date(Date.UTC(2026, 0, 10, 0, minutes)).toISOString();
    const events = [
      { interactionId: 'enter', userId: 'u1', outcome: 'entered', timestamp: at(0), journeyId: journey.id },
      { interactionId: 'enter', userId: 'u2', outcome: 'entered', timestamp: at(1), journeyId: journey.id },
      { interactionId: 'view', userId: 'u1', outcome: 'success', timestamp: at(3) },
    ];
    for (const body of events) {
      await admin.POST('/admin/collection/{collectionId}/interactions/append', {
        params: { path: { collectionId } },
        body,
      });
    }
    const report = await admin.POST('/admin/collection/{collectionId}/journeys.analytics/{journeyId}/funnel-report', {
      params: { path: { collectionId, journeyId: journey.id } },
      body: { stepMappings: [], periodStart: at(0), periodEnd: at(60) },
    });
    expect(report.steps).toEqual([
      {
        stepId: 'viewed',
        interactionId: 'view',
        outcome: 'success',
        enteredCount: 2,
        completedCount: 1,
        conversionRate: 0.5,
        avgTimeToComplete: 180,
      },
    ]);
  });

  it('surfaces refusals as ServiceError with the service’s code, errorCode and requestId', async () => {
    const invalid = await refusal(
      admin.POST('/admin/collection/{collectionId}/links', {
        params: { path: { collectionId } },
        // A string, so the types let it through; the service's validation does not.
        body: { url: 'not a url' },
      }),
    );
    expect(invalid).toMatchObject({ status: 400, code: 400, operation: 'POST /admin/collection/{collectionId}/links' });
    expect(['VALIDATION_FAILED', 'BAD_REQUEST']).toContain(invalid.errorCode);
    expect(invalid.requestId).toEqual(expect.any(String));
    expect(invalid.message).toEqual(expect.any(String));

    const anonymous = createClient({ baseUrl });
    const unauthorized = await refusal(anonymous.GET('/v1/webhooks'));
    expect(unauthorized).toMatchObject({ status: 401, code: 401, errorCode: 'UNAUTHORIZED' });
    expect(unauthorized.requestId).toMatch(/.+/);

    const missing = await refusal(
      admin.GET('/admin/collection/{collectionId}/links/{linkId}', {
        params: { path: { collectionId, linkId: 'lnk_doesnotexist' } },
      }),
    );
    expect(missing).toMatchObject({ status: 404, errorCode: 'NOT_FOUND' });
    // The request id is the one the service logged and sent as x-request-id.
    const raw = await admin.raw.GET('/admin/collection/{collectionId}/links/{linkId}', {
      params: { path: { collectionId, linkId: 'lnk_doesnotexist' } },
    });
    expect(raw.error?.requestId).toBe(raw.response.headers.get('x-request-id'));

    const unknownTask = await refusal(
      admin.POST('/admin/collection/{collectionId}/async/jobs', {
        params: { path: { collectionId } },
        body: { task: 'no.such.task' },
      }),
    );
    expect(unknownTask.status).toBe(400);
    expect(unknownTask.details).toMatchObject({ knownTasks: expect.arrayContaining(['records.import']) });
  });
});

describe('retryAfter', () => {
  it('carries the Retry-After of a 429 from the service', async () => {
    const limited = await createTestApp({ RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_MS: '60000' });
    try {
      await limited.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (limited.app.server.address() as AddressInfo).port;
      const root = createClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: SUPER_KEY });
      let err: ServiceError | undefined;
      for (let i = 0; i < 5 && !err; i++) {
        err = await root.GET('/platform/collections').then(
          () => undefined,
          (e: ServiceError) => e,
        );
      }
      expect(err).toBeInstanceOf(ServiceError);
      expect(err).toMatchObject({ status: 429, errorCode: 'RATE_LIMITED' });
      expect(err!.retryAfter).toBeGreaterThan(0);
      expect(err!.retryAfter).toBeLessThanOrEqual(60);
    } finally {
      await limited.close();
    }
  });

  it('carries the Retry-After of a 503, and names an answer that is not the service’s error body', async () => {
    const answers = [
      new Response(
        JSON.stringify({ code: 503, errorCode: 'UNAVAILABLE', message: 'retry shortly', requestId: 'req-1' }),
        { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' } },
      ),
      new Response('<html>Bad gateway</html>', {
        status: 502,
        statusText: 'Bad Gateway',
        headers: { 'content-type': 'text/html', 'x-request-id': 'proxy-9' },
      }),
    ];
    const client = createClient({ baseUrl: 'http://service.test', fetch: async () => answers.shift()! });
    const unavailable = await refusal(client.GET('/v1/webhooks'));
    expect(unavailable).toMatchObject({ status: 503, errorCode: 'UNAVAILABLE', retryAfter: 1, requestId: 'req-1' });
    const proxy = await refusal(client.GET('/v1/webhooks'));
    expect(proxy).toMatchObject({ status: 502, errorCode: 'INTERNAL', requestId: 'proxy-9', retryAfter: undefined });
    expect(proxy.message).toContain('502');
    expect(proxy.body).toBe('<html>Bad gateway</html>');
  });

  it('refuses two credentials at once', () => {
    expect(() => createClient({ baseUrl, apiKey: 'k', userToken: 't' })).toThrow(TypeError);
  });
});
