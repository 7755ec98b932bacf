/**
 * Interaction effects (issue 24, item 4): each effect of an event is an `interactions.effect`
 * job enqueued in the event's transaction and listed by the jobs API. A `webhook` effect is
 * retried with the engine's backoff and sends its interpolated request; an `appRecord` effect
 * writes one record per contact under `singletonPer`; other types are reported not run; the
 * event's answer never waits for a receiver; the SSRF guard refuses loopback unless
 * WEBHOOK_ALLOW_PRIVATE_NETWORKS; bad configs are refused naming the field. Real receivers on
 * loopback, both backends; the other collection sees none of it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // Short retry delays: the engine's backoff starts at 20 ms.
    JOBS_BACKOFF_BASE_MS: '20',
    JOBS_POLL_INTERVAL_MS: '200',
    INTERACTIONS_EFFECT_MAX_ATTEMPTS: '4',
  });
  ({ a, b } = await twoCollections(t, { userId: 'u1', contactId: 'ct1' }));
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

interface Job {
  id: number;
  task: string;
  status: string;
  attempts: number;
  lastError: string | null;
  queueName: string | null;
  payload: { interactionId: string; eventId: string; index: number; effect: { type: string } };
  result: { type: string; status: string; reason?: string; statusCode?: number; recordId?: string } | null;
}

const admin = (c: TestCollection) => `/admin/collection/${c.id}/interactions`;
const api = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });

async function createType(c: TestCollection, id: string, effects: unknown[], appId = 'fx') {
  const res = await api(c, 'POST', admin(c), { id, appId, data: { effects } });
  expect(res.statusCode, res.body).toBe(200);
}

async function append(c: TestCollection, body: Record<string, unknown>) {
  const res = await api(c, 'POST', `${admin(c)}/append`, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().eventId as string;
}

/** The collection's effect jobs of one event, as the jobs API lists them. */
async function effectJobs(c: TestCollection, eventId: string): Promise<Job[]> {
  const res = await api(c, 'GET', `/admin/collection/${c.id}/jobs?task=interactions.effect&limit=100`);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().items as Job[]).filter((j) => j.payload.eventId === eventId).sort((x, y) => x.id - y.id);
}

/** Waits until each of the event's `n` effect jobs has finished (completed or failed). */
function finished(c: TestCollection, eventId: string, n: number): Promise<Job[]> {
  return waitFor(
    async () => {
      const jobs = await effectJobs(c, eventId);
      return jobs.length === n && jobs.every((j) => j.status === 'completed' || j.status === 'failed')
        ? jobs
        : undefined;
    },
    20_000,
    `effects of ${eventId}`,
  );
}

describe('webhook effect', () => {
  it('fails twice, then is delivered on the third attempt with the interpolated request', async () => {
    // A token in the URL is encoded: the contact's slash stays inside its one path segment.
    const path = '/crm/c%201%2Fx';
    rx.answer(path, [{ status: 500 }, { status: 503 }, { status: 200 }]);
    await createType(a, 'donation', [
      {
        type: 'webhook',
        config: {
          url: `${rx.url}/crm/{{contactId}}`,
          method: 'PUT',
          headers: { Authorization: 'Bearer {{metadata.token}}', 'X-Outcome': '{{outcome}}' },
          body: {
            contactId: '{{contactId}}',
            amount: '{{metadata.amount}}',
            campaign: '{{metadata.campaign.name}}',
            missing: '{{metadata.nope}}',
            note: 'from {{interactionId}} at {{timestamp}}',
            list: ['{{productId}}', 7],
          },
          timeout: 2000,
        },
      },
    ]);
    const eventId = await append(a, {
      interactionId: 'donation',
      contactId: 'c 1/x',
      outcome: 'given',
      productId: 'p1',
      timestamp: '2026-01-02T03:04:05.000Z',
      metadata: { amount: 25, token: 'tok', campaign: { name: 'spring' } },
    });
    const [job] = await finished(a, eventId, 1);
    expect(job).toMatchObject({
      status: 'completed',
      attempts: 3,
      payload: { interactionId: 'donation', index: 0, effect: { type: 'webhook' } },
      result: { type: 'webhook', status: 'succeeded', statusCode: 200 },
    });
    const got = rx.on(path);
    expect(got).toHaveLength(3);
    const last = got[2];
    expect(JSON.parse(last.raw.toString('utf8'))).toEqual({
      contactId: 'c 1/x',
      amount: '25',
      campaign: 'spring',
      missing: '',
      note: 'from donation at 2026-01-02T03:04:05.000Z',
      list: ['p1', 7],
    });
    expect(last.headers.authorization).toBe('Bearer tok');
    expect(last.headers['x-outcome']).toBe('given');
    expect(last.headers['content-type']).toBe('application/json');
  });

  it('the answer does not wait for a receiver that holds the request', async () => {
    rx.answer('/hang', { hang: true });
    await createType(a, 'slow', [{ type: 'webhook', config: { url: `${rx.url}/hang`, timeout: 30_000 } }]);
    // The receiver never answers: had the append waited for it, it would not have answered.
    const eventId = await append(a, { interactionId: 'slow', userId: 'u1', outcome: 'x' });
    await waitFor(async () => (rx.on('/hang').length === 1 ? true : undefined), 10_000, 'the held request');
    const [job] = await effectJobs(a, eventId);
    expect(job.status).toBe('running');
    // Without a body in the config, the guide's standard payload is sent.
    expect(rx.on('/hang')[0].body).toMatchObject({ eventId, interactionId: 'slow', userId: 'u1', outcome: 'x' });
    // The receiver drops the held request and answers the next: the effect's retry delivers it.
    rx.answer('/hang', { status: 200 });
    rx.server.closeAllConnections();
    const [done] = await finished(a, eventId, 1);
    expect(done).toMatchObject({ status: 'completed', attempts: 2, result: { status: 'succeeded' } });
  });

  it('a failing effect leaves the event and the other effects alone; other types are reported not run', async () => {
    rx.answer('/down', { status: 500 });
    rx.answer('/ok', { status: 204 });
    await createType(a, 'mixed', [
      { type: 'webhook', config: { url: `${rx.url}/down` } },
      { type: 'tag', config: { tags: ['donor'] } },
      { type: 'webhook', config: { url: `${rx.url}/ok`, method: 'GET' } },
      { type: 'transactional', config: { templateId: 't1' } },
      { type: 'somethingNew' },
    ]);
    const eventId = await append(a, { interactionId: 'mixed', userId: 'u1' });
    const jobs = await finished(a, eventId, 5);
    expect(jobs.map((j) => [j.payload.index, j.status, j.result?.status ?? null])).toEqual([
      [0, 'failed', null],
      [1, 'completed', 'not_supported'],
      [2, 'completed', 'succeeded'],
      [3, 'completed', 'not_supported'],
      [4, 'completed', 'not_supported'],
    ]);
    expect(jobs[0].attempts).toBe(4);
    expect(jobs[0].lastError).toContain('HTTP 500');
    expect(rx.on('/ok')[0].raw.length).toBe(0);
    // The event is stored whatever its effects did.
    const rows = await api(a, 'POST', `${admin(a)}/query`, { interactionId: 'mixed' });
    expect(rows.json().map((r: { eventId: string }) => r.eventId)).toEqual([eventId]);
  });
});

describe('appRecord effect', () => {
  it('writes one record per contact under singletonPer; an event without a contact is skipped with the reason', async () => {
    await createType(
      a,
      'joined',
      [
        {
          type: 'appRecord',
          config: {
            recordType: 'participation',
            singletonPer: 'contact',
            data: { outcome: '{{outcome}}', at: '{{timestamp}}', amount: '{{metadata.amount}}' },
          },
        },
      ],
      'club',
    );
    // Back to back: the effects that write one record run one at a time, in the events' order.
    const e1 = await append(a, { interactionId: 'joined', contactId: 'c1', outcome: 'first', metadata: { amount: 1 } });
    const e2 = await append(a, {
      interactionId: 'joined',
      contactId: 'c1',
      outcome: 'second',
      metadata: { amount: 2 },
    });
    const e3 = await append(a, { interactionId: 'joined', contactId: 'c2', outcome: 'other' });
    const e4 = await append(a, { interactionId: 'joined', userId: 'anon-ish' });
    const results = [];
    for (const e of [e1, e2, e3, e4]) results.push((await finished(a, e, 1))[0]);
    expect(results.map((j) => j.result?.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'skipped']);
    expect(results[3].result?.reason).toContain('contactId');
    // One queue per record: c1's two effects share one (the service's own, `<task>:…`), c2's
    // has another, and the effect that writes nothing has none.
    const queues = results.map((j) => j.queueName);
    expect(queues[0]).toMatch(/^interactions\.effect:/);
    expect(queues[1]).toBe(queues[0]);
    expect(queues[2]).toMatch(/^interactions\.effect:/);
    expect(queues[2]).not.toBe(queues[0]);
    expect(queues[3]).toBeNull();
    // Two events of c1 → one record (the same id), updated by the second.
    expect(results[1].result?.recordId).toBe(results[0].result?.recordId);
    const list = await api(a, 'GET', `/admin/collection/${a.id}/app/club/records?recordType=participation`);
    expect(list.statusCode, list.body).toBe(200);
    const records = list.json().data as { contactId: string; data: Record<string, unknown> }[];
    expect(records.map((r) => r.contactId).sort()).toEqual(['c1', 'c2']);
    expect(records.find((r) => r.contactId === 'c1')?.data).toMatchObject({ outcome: 'second', amount: '2' });
    // b has none of them.
    const inB = await api(b, 'GET', `/admin/collection/${b.id}/app/club/records?recordType=participation`);
    expect(inB.json().data).toEqual([]);
  });

  it('without singletonPer, each event gets its own record', async () => {
    await createType(
      a,
      'note',
      [{ type: 'appRecord', config: { recordType: 'note', data: { by: '{{userId}}' } } }],
      'notes',
    );
    const e1 = await append(a, { interactionId: 'note', userId: 'u1' });
    const e2 = await append(a, { interactionId: 'note', userId: 'u1' });
    for (const e of [e1, e2]) {
      const [job] = await finished(a, e, 1);
      expect(job.result?.status).toBe('succeeded');
      // Records of their own: nothing to keep in order, so no queue holds them.
      expect(job.queueName).toBeNull();
    }
    const list = await api(a, 'GET', `/admin/collection/${a.id}/app/notes/records?recordType=note`);
    expect(list.json().data).toHaveLength(2);
  });
});

describe('tenancy and validation', () => {
  it('another collection lists none of the effect jobs and cannot record events of a type it lacks', async () => {
    const res = await api(b, 'GET', `/admin/collection/${b.id}/jobs?task=interactions.effect`);
    expect(res.json().items).toEqual([]);
    const refused = await api(b, 'POST', `${admin(b)}/append`, { interactionId: 'donation', userId: 'u1' });
    expect(refused.statusCode).toBe(400);
  });

  it('refuses bad effect configs on create and update, naming the field', async () => {
    const url = `${rx.url}/x`;
    const cases: [unknown, string][] = [
      ['not a list', 'body.data.effects'],
      [Array.from({ length: 11 }, () => ({ type: 'tag' })), 'body.data.effects'],
      [[{ config: {} }], 'body.data.effects.0.type'],
      [[{ type: 'webhook', config: {} }], 'body.data.effects.0.config.url'],
      [[{ type: 'webhook', config: { url: 'ftp://example.com/x' } }], 'body.data.effects.0.config.url'],
      [[{ type: 'webhook', config: { url: 'https://u:p@example.com/' } }], 'body.data.effects.0.config.url'],
      [[{ type: 'webhook', config: { url, method: 'TRACE' } }], 'body.data.effects.0.config.method'],
      [[{ type: 'webhook', config: { url, timeout: 60_000 } }], 'body.data.effects.0.config.timeout'],
      [[{ type: 'webhook', config: { url, headers: { Host: 'x' } } }], 'body.data.effects.0.config.headers.Host'],
      [[{ type: 'webhook', config: { url, headers: { 'X-A': 1 } } }], 'body.data.effects.0.config.headers.X-A'],
      [
        [
          {
            type: 'webhook',
            config: { url, headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`h${i}`, 'v'])) },
          },
        ],
        'body.data.effects.0.config.headers',
      ],
      [[{ type: 'webhook', config: { url, body: { big: 'x'.repeat(17_000) } } }], 'body.data.effects.0.config.body'],
      [[{ type: 'webhook', config: { url, retries: 3 } }], 'body.data.effects.0.config.retries'],
      [
        [{ type: 'tag' }, { type: 'appRecord', config: { singletonPer: 'planet' } }],
        'body.data.effects.1.config.singletonPer',
      ],
      [[{ type: 'appRecord', config: { data: 'text' } }], 'body.data.effects.0.config.data'],
      [[{ type: 'appRecord', config: { anchors: { shelfId: 'x' } } }], 'body.data.effects.0.config.anchors.shelfId'],
    ];
    for (const [effects, path] of cases) {
      const res = await api(a, 'POST', admin(a), { id: 'bad-fx', appId: 'x', data: { effects } });
      expect(res.statusCode, path).toBe(400);
      expect(JSON.stringify(res.json()), path).toContain(path);
    }
    await createType(a, 'good-fx', []);
    const patched = await api(a, 'PATCH', `${admin(a)}/good-fx`, {
      data: { effects: [{ type: 'webhook', config: { url: 'mailto:x@example.com' } }] },
    });
    expect(patched.statusCode).toBe(400);
    expect(JSON.stringify(patched.json())).toContain('body.data.effects.0.config.url');
  });
});

describe('SSRF guard', () => {
  let strict: TestApp;
  afterAll(() => strict?.close());

  it('without WEBHOOK_ALLOW_PRIVATE_NETWORKS an effect to 127.0.0.1 is refused and reported, not sent', async () => {
    strict = await createTestApp({ JOBS_POLL_INTERVAL_MS: '200' });
    const c = await strict.createCollection();
    const before = rx.on('/private').length;
    const create = await strict.inject({
      method: 'POST',
      url: admin(c),
      headers: c.auth,
      payload: {
        id: 'leak',
        appId: 'x',
        data: { effects: [{ type: 'webhook', config: { url: `${rx.url}/private` } }] },
      },
    });
    expect(create.statusCode, create.body).toBe(200);
    const appended = await strict.inject({
      method: 'POST',
      url: `${admin(c)}/append`,
      headers: c.auth,
      payload: { interactionId: 'leak', userId: 'u1' },
    });
    expect(appended.statusCode, appended.body).toBe(200);
    const job = await waitFor(
      async () => {
        const res = await strict.inject({
          method: 'GET',
          url: `/admin/collection/${c.id}/jobs?task=interactions.effect`,
          headers: c.auth,
        });
        const [j] = res.json().items as Job[];
        return j && j.status === 'completed' ? j : undefined;
      },
      15_000,
      'the refused effect',
    );
    expect(job.attempts).toBe(1);
    expect(job.result).toMatchObject({ type: 'webhook', status: 'refused' });
    expect(job.result?.reason).toContain('loopback');
    expect(rx.on('/private').length).toBe(before);
  });
});
