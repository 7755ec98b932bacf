/**
 * Interaction events (issue 24): `interaction.recorded` once per event appended or submitted,
 * with data valid against the catalogue's schema and nothing for an update; and
 * `interaction.milestone` exactly once per threshold under concurrent appends, with the
 * defaults or the type's own `data.milestones` (validated). Real receivers on loopback, both
 * backends; the other collection hears nothing.
 */
import { Compile } from 'typebox/compile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { sleep, waitFor } from './helpers/jobs.ts';
import { type Received, type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  ({ a, b } = await twoCollections(t, { userId: 'u1', contactId: 'ct1' }));
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

const admin = (c: TestCollection) => `/admin/collection/${c.id}/interactions`;
const api = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });

async function register(c: TestCollection, path: string, events: string[], extra: Record<string, unknown> = {}) {
  const res = await api(c, 'POST', '/v1/webhooks', { url: `${rx.url}${path}`, events, ...extra });
  expect(res.statusCode, res.body).toBe(200);
}

async function createType(c: TestCollection, body: Record<string, unknown>) {
  const res = await api(c, 'POST', admin(c), body);
  expect(res.statusCode, res.body).toBe(200);
}

async function append(c: TestCollection, body: Record<string, unknown>) {
  const res = await api(c, 'POST', `${admin(c)}/append`, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { eventId: string };
}

/** Waits until no delivery of the collection is pending, then a moment for stragglers. */
async function settled(c: TestCollection) {
  await waitFor(
    async () => {
      const { rows } = await t.testDb.db.query<{ n: number }>(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE collection_id = $1 AND status = 'pending'",
        [c.id],
      );
      return Number(rows[0].n) === 0 ? true : undefined;
    },
    15_000,
    'deliveries to end',
  );
  await sleep(50);
}

async function checkerOf(type: string) {
  const res = await t.inject({ method: 'GET', url: '/v1/webhooks/event-types' });
  const entry = (res.json() as { items: { type: string; schema: Record<string, unknown> }[] }).items.find(
    (i) => i.type === type,
  );
  expect(entry, type).toBeDefined();
  return Compile(entry!.schema as never);
}

describe('interaction.recorded', () => {
  it('is sent once per append and per submit, signed, with the event’s data; an update sends nothing', async () => {
    await register(a, '/recorded', ['interaction.recorded']);
    await register(b, '/recorded-b', ['interaction.*']);
    await createType(a, {
      id: 'donation',
      appId: 'donations',
      permissions: { allowPublicSubmit: true, allowAnonymousSubmit: true },
    });
    const appended = await append(a, {
      interactionId: 'donation',
      userId: 'u9',
      contactId: 'ct9',
      outcome: 'given',
      metadata: { amount: 25 },
      scope: 'spring',
      journeyId: 'jr1',
      productId: 'p1',
      source: 'web',
      timestamp: '2026-01-02T03:04:05.000Z',
    });
    const submitted = await t.inject({
      method: 'POST',
      url: `/public/collection/${a.id}/interactions/submit`,
      headers: a.userAuth,
      payload: { interactionId: 'donation', outcome: 'pledged' },
    });
    expect(submitted.statusCode, submitted.body).toBe(200);
    // A correction of a stored event records nothing new.
    const updated = await api(a, 'PATCH', `${admin(a)}/events/${appended.eventId}`, { outcome: 'refunded' });
    expect(updated.statusCode, updated.body).toBe(200);
    await settled(a);

    const got = rx.on('/recorded');
    expect(got.map((r) => r.body.data.event_id).sort()).toEqual([appended.eventId, submitted.json().eventId].sort());
    const check = await checkerOf('interaction.recorded');
    for (const r of got) {
      expect(r.body.type).toBe('interaction.recorded');
      expect(r.headers['webhook-signature']).toBeDefined();
      expect(check.Check(r.body.data), JSON.stringify([...check.Errors(r.body.data)])).toBe(true);
    }
    const byId = (id: string) => got.find((r) => r.body.data.event_id === id) as Received;
    expect(byId(appended.eventId).body.data).toEqual({
      interaction_id: 'donation',
      event_id: appended.eventId,
      app_id: 'donations',
      outcome: 'given',
      user_id: 'u9',
      contact_id: 'ct9',
      anon_id: null,
      metadata: { amount: 25 },
      scope: 'spring',
      journey_id: 'jr1',
      broadcast_id: null,
      product_id: 'p1',
      proof_id: null,
      variant_id: null,
      batch_id: null,
      event_type: null,
      source: 'web',
      channel: 'admin',
      at: '2026-01-02T03:04:05.000Z',
    });
    expect(byId(submitted.json().eventId).body.data).toMatchObject({
      outcome: 'pledged',
      user_id: 'u1',
      contact_id: 'ct1',
      channel: 'public',
      metadata: null,
    });
    // The other collection's registration heard nothing of these.
    expect(rx.on('/recorded-b')).toEqual([]);
  });

  it('a refused submit sends nothing, and filters narrow by interaction, app and journey', async () => {
    await createType(a, { id: 'once', appId: 'polls', permissions: { allowPublicSubmit: true, uniquePerUser: true } });
    await createType(a, { id: 'other', appId: 'polls' });
    await register(a, '/only-once', ['interaction.recorded'], { filters: { interactionIds: ['once'] } });
    await register(a, '/journey', ['interaction.recorded'], { filters: { journeyIds: ['jr-x'] } });
    const submit = () =>
      t.inject({
        method: 'POST',
        url: `/public/collection/${a.id}/interactions/submit`,
        headers: a.userAuth,
        payload: { interactionId: 'once', outcome: 'yes', journeyId: 'jr-x' },
      });
    expect((await submit()).statusCode).toBe(200);
    expect((await submit()).statusCode).toBe(409);
    await append(a, { interactionId: 'other', userId: 'u2' });
    await settled(a);
    expect(rx.on('/only-once').map((r) => r.body.data.interaction_id)).toEqual(['once']);
    expect(rx.on('/journey').map((r) => r.body.data.journey_id)).toEqual(['jr-x']);
  });
});

describe('interaction.milestone', () => {
  it('is sent exactly once per default threshold under concurrent appends, with the count that reached it', async () => {
    await createType(a, { id: 'visits', appId: 'site' });
    await register(a, '/milestones', ['interaction.milestone'], { filters: { interactionIds: ['visits'] } });
    // 8 writers at once, 14 events: 10 is reached by exactly one of them.
    const bodies = Array.from({ length: 14 }, (_, i) => ({ interactionId: 'visits', userId: `v${i}` }));
    for (let i = 0; i < bodies.length; i += 8) await Promise.all(bodies.slice(i, i + 8).map((p) => append(a, p)));
    await settled(a);
    const got = rx.on('/milestones').map((r) => r.body.data);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ interaction_id: 'visits', app_id: 'site', milestone: 10, count: 10 });
    const check = await checkerOf('interaction.milestone');
    expect(check.Check(got[0])).toBe(true);
  });

  it('follows the type’s own data.milestones, each once, whatever the concurrency; b hears nothing', async () => {
    await createType(a, { id: 'votes', appId: 'polls', data: { milestones: [3, 5, 12] } });
    await createType(b, { id: 'votes', appId: 'polls', data: { milestones: [3, 5, 12] } });
    await register(a, '/own', ['interaction.milestone'], { filters: { interactionIds: ['votes'] } });
    await register(b, '/own-b', ['interaction.milestone']);
    await Promise.all(
      Array.from({ length: 13 }, (_, i) =>
        append(a, { interactionId: 'votes', userId: `w${i}`, outcome: `o${i % 3}` }),
      ),
    );
    await append(b, { interactionId: 'votes', userId: 'w0' });
    await settled(a);
    await settled(b);
    const got = rx.on('/own').map((r) => r.body.data);
    expect(got.map((d) => d.milestone).sort((x, y) => Number(x) - Number(y))).toEqual([3, 5, 12]);
    for (const d of got) expect(d.count).toBe(d.milestone);
    // b's one event reached none of its thresholds; a's events are not b's.
    expect(rx.on('/own-b')).toEqual([]);
  });

  it('refuses data.milestones that are not ascending positive integers (at most 20), naming the field', async () => {
    const cases: [unknown, string][] = [
      [[10, 5], 'body.data.milestones.1'],
      [[5, 5], 'body.data.milestones.1'],
      [[0], 'body.data.milestones.0'],
      [[1.5], 'body.data.milestones.0'],
      [['10'], 'body.data.milestones.0'],
      [Array.from({ length: 21 }, (_, i) => i + 1), 'body.data.milestones'],
      [7, 'body.data.milestones'],
    ];
    for (const [milestones, path] of cases) {
      const res = await api(a, 'POST', admin(a), { id: 'bad-ms', appId: 'x', data: { milestones } });
      expect(res.statusCode, JSON.stringify(milestones)).toBe(400);
      expect(JSON.stringify(res.json()), JSON.stringify(milestones)).toContain(path);
    }
    await createType(a, { id: 'good-ms', appId: 'x' });
    const patched = await api(a, 'PATCH', `${admin(a)}/good-ms`, { data: { milestones: [2, 1] } });
    expect(patched.statusCode).toBe(400);
    expect(JSON.stringify(patched.json())).toContain('body.data.milestones.1');
    const ok = await api(a, 'PATCH', `${admin(a)}/good-ms`, { data: { milestones: [1, 2] } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().data.milestones).toEqual([1, 2]);
  });
});
