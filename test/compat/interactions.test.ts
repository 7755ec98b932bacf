/**
 * Interactions as clients of the original service call them: BASE_PATH /api/v1, the admin key
 * as X-API-Key, the user token as Bearer, and the bodies of its interactions guide and SDK
 * types. Checked: event bodies with the original's fields (and further fields, returned with
 * the event), a partial permissions update, refusals named as the original names them,
 * answers whose optional fields are absent when unset (never null) and required ones present,
 * the SDK's updateEvent call, a type's data updated key by key, allowedOrigins written as site
 * domains, and endAt included.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type CollectionWithUser, twoCollections } from '../helpers/fixtures.ts';

const BASE = '/api/v1';
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let adminKey: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp({ BASE_PATH: BASE });
  ({ a, b } = await twoCollections(t, { userId: 'user_abc123', contactId: 'contact_abc' }));
  adminKey = { 'x-api-key': a.key };
});
afterAll(() => t.close());

const admin = (c = a) => `${BASE}/admin/collection/${c.id}/interactions`;
const pub = (c = a) => `${BASE}/public/collection/${c.id}/interactions`;
const post = (url: string, payload: unknown, headers: Record<string, string> = adminKey) =>
  t.inject({ method: 'POST', url, headers, payload: payload as Record<string, unknown> });

async function createType(body: Record<string, unknown>) {
  // The SDK's create posts to …/interactions/ (with the slash).
  const res = await post(`${admin()}/`, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function query(filter: Record<string, unknown>, c = a) {
  const res = await post(`${admin(c)}/query`, filter, { 'x-api-key': c.key });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Record<string, unknown>[];
}

/** Nothing in an answer is null unless the schema says so (here: no field of these shapes). */
function expectNoNulls(value: Record<string, unknown>, where: string) {
  for (const [key, v] of Object.entries(value)) expect(v, `${where}.${key}`).not.toBeNull();
}

/** The original's required row fields, and ours. */
function expectRow(row: Record<string, unknown>) {
  for (const key of ['orgId', 'collectionId', 'timestamp', 'eventId', 'interactionId', 'channel', 'deleted']) {
    expect(row, key).toHaveProperty(key);
  }
  expectNoNulls(row, 'row');
}

describe('the guide’s “update permissions” call merges into the stored permissions', () => {
  it('PATCH {permissions: {endAt}} leaves public submit, public summary, own-read and uniqueness as they were', async () => {
    // The guide's create call, plus allowOwnRead so that own reads can be seen to survive.
    const guidePermissions = {
      allowPublicSubmit: true,
      uniquePerUser: true,
      startAt: '2026-06-01T00:00:00Z',
      endAt: '2026-06-30T23:59:59Z',
      allowPublicSummary: true,
    };
    await createType({
      id: 'vote',
      appId: 'my-app',
      permissions: { ...guidePermissions, allowOwnRead: true },
      data: { display: { title: 'Vote', description: 'Cast your vote for the competition.' } },
    });

    const res = await t.inject({
      method: 'PATCH',
      url: `${admin()}/vote`,
      headers: adminKey,
      payload: { permissions: { endAt: '2026-07-15T23:59:59Z' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    // Times are answered in full RFC 3339 (docs/compatibility.md, Times).
    expect(res.json().permissions).toEqual({
      ...guidePermissions,
      allowOwnRead: true,
      startAt: '2026-06-01T00:00:00.000Z',
      endAt: '2026-07-15T23:59:59.000Z',
    });
    expect(res.json().display).toEqual({ title: 'Vote', description: 'Cast your vote for the competition.' });

    // Public summary: still readable without a token.
    const summary = await post(`${pub()}/counts-by-outcome`, { appId: 'my-app', interactionId: 'vote' }, {});
    expect(summary.statusCode, summary.body).toBe(200);
    // Own read: still allowed.
    const mine = await post(`${pub()}/by-user`, { appId: 'my-app', interactionId: 'vote' }, a.userAuth);
    expect(mine.statusCode, mine.body).toBe(200);
    // Public submit: still on; the window (July 2026) has ended, which is the refusal now.
    const late = await post(`${pub()}/submit`, { appId: 'my-app', interactionId: 'vote', outcome: 'a' }, a.userAuth);
    expect(late.json()).toMatchObject({ error: 'FORBIDDEN', reason: 'after_end' });

    // Open the window again: the submit is accepted, and uniquePerUser still holds.
    const reopen = await t.inject({
      method: 'PATCH',
      url: `${admin()}/vote`,
      headers: adminKey,
      payload: { permissions: { endAt: iso(Date.now() + DAY) } },
    });
    expect(reopen.statusCode, reopen.body).toBe(200);
    const vote = { appId: 'my-app', interactionId: 'vote', outcome: 'option-a' };
    expect((await post(`${pub()}/submit`, vote, a.userAuth)).statusCode).toBe(200);
    const again = await post(`${pub()}/submit`, vote, a.userAuth);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ error: 'FORBIDDEN', reason: 'duplicate' });
  });
});

describe('event bodies as the original types them', () => {
  beforeAll(async () => {
    await createType({ id: 'competition-entry', appId: 'my-app', permissions: { allowPublicSubmit: true } });
    await createType({ id: 'clicks', appId: 'my-app', permissions: { allowPublicSubmit: true } });
  });

  it('the guide’s append: productId, scope and metadata stored and returned; unset fields absent', async () => {
    await createType({ id: 'poll', appId: 'my-app' });
    const res = await post(`${admin()}/append`, {
      appId: 'my-app',
      interactionId: 'poll',
      outcome: 'option-a',
      userId: 'user_abc123',
      productId: 'prod_xyz',
      scope: 'round-1',
      metadata: { source: 'mobile', region: 'UK' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, eventId: expect.any(String) });
    const [row] = await query({ interactionId: 'poll' });
    expect(row).toEqual({
      orgId: a.id,
      collectionId: a.id,
      eventId: res.json().eventId,
      timestamp: expect.any(String),
      appId: 'my-app',
      interactionId: 'poll',
      outcome: 'option-a',
      userId: 'user_abc123',
      productId: 'prod_xyz',
      scope: 'round-1',
      metadata: { source: 'mobile', region: 'UK' },
      channel: 'admin',
      deleted: false,
    });
  });

  it('every field of InteractionEventBase, and further fields, on append: stored, returned, further ones at the top level', async () => {
    const body = {
      collectionId: a.id,
      orgId: 'org-7',
      userId: 'user_abc123',
      contactId: 'contact_abc',
      interactionId: 'clicks',
      scope: 'hero',
      appId: 'my-app',
      broadcastId: 'bc-1',
      journeyId: 'j-1',
      productId: 'prod_1',
      proofId: 'proof_1',
      variantId: 'var_1',
      batchId: 'batch_1',
      source: 'email-link',
      eventType: 'click',
      outcome: 'clicked',
      timestamp: '2026-11-01T10:00:00.000Z',
      metadata: { n: 1 },
      campaign: 'spring',
      nested: { list: [1, 2], flag: true },
    };
    const res = await post(`${admin()}/append`, body);
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await query({ interactionId: 'clicks', broadcastId: 'bc-1' });
    const { collectionId: _, ...rest } = body;
    expect(row).toEqual({
      ...rest,
      collectionId: a.id,
      eventId: res.json().eventId,
      channel: 'admin',
      deleted: false,
    });
    expectRow(row);
  });

  it('the guide’s authenticated submit with the SDK’s fields: identity from the token, the server’s time, extras kept', async () => {
    const before = Date.now();
    const res = await post(
      `${pub()}/submit`,
      {
        collectionId: a.id,
        appId: 'my-app',
        interactionId: 'competition-entry',
        outcome: 'entered',
        contactId: 'contact_abc',
        metadata: { answer: 'Paris' },
        productId: 'prod_2',
        source: 'web',
        eventType: 'entry',
        timestamp: '2020-01-01T00:00:00Z',
        referrer: 'newsletter',
      },
      a.userAuth,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, eventId: expect.any(String) });
    const [row] = await query({ interactionId: 'competition-entry' });
    expect(row).toEqual({
      orgId: a.id,
      collectionId: a.id,
      eventId: res.json().eventId,
      timestamp: expect.any(String),
      appId: 'my-app',
      interactionId: 'competition-entry',
      outcome: 'entered',
      userId: 'user_abc123',
      contactId: 'contact_abc',
      metadata: { answer: 'Paris' },
      productId: 'prod_2',
      source: 'web',
      eventType: 'entry',
      referrer: 'newsletter',
      channel: 'public',
      deleted: false,
    });
    // The body's timestamp is not used: the event has the server's time.
    expect(Date.parse(row.timestamp as string)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('a collectionId other than the path’s is a 400 naming the field, on append and submit; nothing is stored', async () => {
    const append = await post(`${admin()}/append`, { collectionId: b.id, interactionId: 'clicks', userId: 'x1' });
    const submit = await post(`${pub()}/submit`, { collectionId: b.id, interactionId: 'clicks' }, a.userAuth);
    for (const res of [append, submit]) {
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        errorCode: 'VALIDATION_FAILED',
        details: { errors: [{ path: 'body.collectionId', message: expect.any(String) }] },
      });
    }
    expect(await query({ interactionId: 'clicks', userId: 'x1' })).toEqual([]);
  });

  it('further fields never replace a row field: the service’s own names are refused (400), nothing stored', async () => {
    for (const name of ['channel', 'deleted', 'interaction']) {
      const res = await post(`${admin()}/append`, { interactionId: 'clicks', userId: 'x2', [name]: 'mine' });
      expect(res.statusCode, name).toBe(400);
      expect(res.json().details.errors[0].path).toBe(`body.${name}`);
    }
    const eventId = await post(`${pub()}/submit`, { interactionId: 'clicks', eventId: 'chosen' }, a.userAuth);
    expect(eventId.statusCode).toBe(400);
    expect(eventId.json().details.errors[0].path).toBe('body.eventId');
    expect(await query({ interactionId: 'clicks', userId: 'x2' })).toEqual([]);
  });

  it('further fields named like Object.prototype members are kept as fields; __proto__ is refused (400)', async () => {
    const res = await post(`${admin()}/append`, {
      interactionId: 'clicks',
      userId: 'x3',
      constructor: 'c',
      toString: { nested: true },
    });
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await query({ interactionId: 'clicks', userId: 'x3' });
    expect(Object.hasOwn(row, 'constructor') && row.constructor).toBe('c');
    expect(Object.hasOwn(row, 'toString') && row.toString).toEqual({ nested: true });
    // The JSON body parser refuses a __proto__ key before any handler runs.
    const proto = await t.inject({
      method: 'POST',
      url: `${admin()}/append`,
      headers: { ...adminKey, 'content-type': 'application/json' },
      payload: JSON.stringify({ interactionId: 'clicks', userId: 'x5', ['__proto__']: { polluted: true } }),
    });
    expect(proto.statusCode).toBe(400);
    expect(await query({ interactionId: 'clicks', userId: 'x5' })).toEqual([]);
  });

  it('further fields are bounded: over 16 KiB of them is a 400', async () => {
    const res = await post(`${admin()}/append`, { interactionId: 'clicks', userId: 'x4', big: 'x'.repeat(17_000) });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain('metadata');
    expect(await query({ interactionId: 'clicks', userId: 'x4' })).toEqual([]);
  });

  it('another collection sees none of these events, nor their fields', async () => {
    await post(
      `${BASE}/admin/collection/${b.id}/interactions`,
      { id: 'clicks', appId: 'my-app' },
      { 'x-api-key': b.key },
    );
    expect(await query({ interactionId: 'clicks' }, b)).toEqual([]);
    expect((await post(`${admin()}/query`, { interactionId: 'clicks' }, { 'x-api-key': b.key })).statusCode).toBe(401);
  });
});

describe('refusals named as the original names them: {error: FORBIDDEN, reason}', () => {
  let n = 0;
  async function refusedWith(
    permissions: Record<string, unknown>,
    headers: Record<string, string>,
    body: Record<string, unknown> = {},
  ) {
    const id = `refusal-${++n}`;
    await createType({ id, appId: 'my-app', permissions });
    return post(`${pub()}/submit`, { appId: 'my-app', interactionId: id, outcome: 'x', ...body }, headers);
  }

  it.each([
    ['disabled', { enabled: false, allowPublicSubmit: true }, 'user', 401],
    ['not_public', {}, 'user', 401],
    ['auth_required', { allowPublicSubmit: true, requireAuth: true, allowAnonymousSubmit: true }, 'anonymous', 401],
    ['auth_required', { allowPublicSubmit: true }, 'anonymous', 401],
    ['origin_forbidden', { allowPublicSubmit: true, allowedOrigins: ['https://shop.example.com'] }, 'user', 401],
    ['before_start', { allowPublicSubmit: true, startAt: iso(Date.now() + DAY) }, 'user', 401],
    ['after_end', { allowPublicSubmit: true, endAt: iso(Date.now() - DAY) }, 'user', 401],
  ] as const)('%s', async (reason, permissions, who, status) => {
    const res = await refusedWith({ ...permissions }, who === 'user' ? a.userAuth : {});
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json()).toEqual({
      code: status,
      errorCode: expect.any(String),
      message: expect.any(String),
      requestId: expect.any(String),
      error: 'FORBIDDEN',
      reason,
      details: { error: 'FORBIDDEN', reason },
    });
  });

  it('duplicate (uniquePerUser): 409 with the same body', async () => {
    const first = await refusedWith({ allowPublicSubmit: true, uniquePerUser: true }, a.userAuth);
    expect(first.statusCode).toBe(200);
    const again = await post(`${pub()}/submit`, { appId: 'my-app', interactionId: `refusal-${n}` }, a.userAuth);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ errorCode: 'CONFLICT', error: 'FORBIDDEN', reason: 'duplicate' });
  });

  it('the guide’s anonymous submit with metadata.anonId: a second one from the device is duplicate_anon', async () => {
    // uniquePerAnonIdWindowSeconds 0 is all time, as the original documents.
    await createType({
      id: 'nps-score',
      appId: 'my-app',
      permissions: {
        allowPublicSubmit: true,
        allowAnonymousSubmit: true,
        uniquePerAnonId: true,
        uniquePerAnonIdWindowSeconds: 0,
      },
    });
    const body = { appId: 'my-app', interactionId: 'nps-score', outcome: '9', metadata: { anonId: 'device-42' } };
    const first = await post(`${pub()}/submit`, body, {});
    expect(first.statusCode, first.body).toBe(200);
    const again = await post(`${pub()}/submit`, body, {});
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ error: 'FORBIDDEN', reason: 'duplicate_anon' });
    const other = await post(`${pub()}/submit`, { ...body, metadata: { anonId: 'device-43' } }, {});
    expect(other.statusCode).toBe(200);
    const [row] = await query({ interactionId: 'nps-score', limit: 1, order: 'ASC' });
    expect(row).toMatchObject({ anonId: 'device-42', metadata: { anonId: 'device-42' }, channel: 'public' });
    expect(row).not.toHaveProperty('userId');
  });

  it('an error that is not such a refusal carries neither error nor reason', async () => {
    const res = await post(`${pub()}/submit`, { interactionId: 'not-defined' }, a.userAuth);
    expect(res.statusCode).toBe(400);
    expect(res.json()).not.toHaveProperty('error');
    expect(res.json()).not.toHaveProperty('reason');
  });
});

describe('answers: optional fields absent when unset, required ones present', () => {
  beforeAll(async () => {
    await createType({ id: 'quiz', appId: 'my-app', permissions: { allowOwnRead: true, allowPublicSubmit: true } });
    for (const [outcome, score] of [
      ['pass', 9],
      ['pass', 7],
      ['fail', undefined],
    ] as const) {
      const res = await post(`${admin()}/append`, {
        interactionId: 'quiz',
        userId: 'user_abc123',
        ...(outcome ? { outcome } : {}),
        metadata: score === undefined ? { note: 'no score' } : { score },
      });
      expect(res.statusCode).toBe(200);
    }
    expect((await post(`${admin()}/append`, { interactionId: 'quiz', contactId: 'c-only' })).statusCode).toBe(200);
  });

  it('a definition: its fields present, presentation fields absent when data has none', async () => {
    const res = await t.inject({ method: 'GET', url: `${pub()}/quiz` });
    expect(Object.keys(res.json()).sort()).toEqual(
      ['appId', 'collectionId', 'createdAt', 'data', 'id', 'permissions', 'updatedAt'].sort(),
    );
    const list = await t.inject({ method: 'GET', url: `${pub()}/?appId=my-app` });
    expect(list.json()).toMatchObject({ items: expect.any(Array), limit: 100, offset: 0 });
  });

  it('query rows (with include), by-user rows and an updated event: no nulls', async () => {
    const rows = await query({ interactionId: 'quiz', include: ['interaction'] });
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expectRow(row);
      expect(row.interaction).toMatchObject({ id: 'quiz' });
    }
    const bare = rows.find((r) => r.contactId === 'c-only');
    expect(Object.keys(bare ?? {}).sort()).toEqual(
      [
        'appId',
        'channel',
        'collectionId',
        'contactId',
        'deleted',
        'eventId',
        'interaction',
        'interactionId',
        'orgId',
        'timestamp',
      ].sort(),
    );
    const mine = await post(`${pub()}/by-user`, { interactionId: 'quiz' }, a.userAuth);
    expect(mine.statusCode).toBe(200);
    expect(mine.json()).toHaveLength(3);
    for (const row of mine.json()) expectRow(row);
    const updated = await t.inject({
      method: 'PATCH',
      url: `${admin()}/events/${bare?.eventId}`,
      headers: adminKey,
      payload: { scope: 'set' },
    });
    expect(updated.json().scope).toBe('set');
    const cleared = await t.inject({
      method: 'PATCH',
      url: `${admin()}/events/${bare?.eventId}`,
      headers: adminKey,
      payload: { scope: null },
    });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json()).not.toHaveProperty('scope');
    expectRow(cleared.json());
  });

  it('counts: outcome is present, null for events without one (the original’s OutcomeCount)', async () => {
    const res = await post(`${admin()}/counts-by-outcome`, { interactionId: 'quiz' });
    expect(res.json()).toEqual([
      { outcome: 'pass', count: 2 },
      { outcome: 'fail', count: 1 },
      { outcome: null, count: 1 },
    ]);
  });

  it('the SDK’s aggregate body ({aggregate: {field, ops}}): rows without null, a group without numbers has no sum', async () => {
    const res = await post(`${admin()}/aggregate`, {
      interactionId: 'quiz',
      groupBy: 'outcome',
      aggregate: { field: 'metadata.score', ops: ['count', 'sum'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      groupBy: 'outcome',
      aggregate: { field: 'metadata.score', ops: ['count', 'sum'] },
      field: 'metadata.score',
      ops: ['count', 'sum'],
      dedupeLatest: false,
      rows: [
        { groupValue: 'pass', eventCount: 2, count: 2, sum: 16 },
        { groupValue: 'fail', eventCount: 1, count: 0 },
        { groupValue: null, eventCount: 1, count: 0 },
      ],
    });
    const missing = await post(`${admin()}/aggregate`, { groupBy: 'outcome', aggregate: {} });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().details.errors[0].path).toBe('body.field');
  });
});

describe('the SDK’s updateEvent: POST …/interactions/events/update', () => {
  const update = (body: Record<string, unknown>, headers = adminKey, c = a) =>
    post(`${admin(c)}/events/update`, body, headers);

  beforeAll(async () => {
    // The guide's type; another describe may have made it already.
    const res = await post(`${admin()}/`, { id: 'vote', appId: 'my-app' });
    expect([200, 409]).toContain(res.statusCode);
    const appended = await post(`${admin()}/append`, {
      appId: 'my-app',
      interactionId: 'vote',
      outcome: 'option-a',
      userId: 'user_abc123',
      eventId: 'evt_abc123',
      scope: 'round-2',
    });
    expect(appended.statusCode, appended.body).toBe(200);
  });

  it('the guide’s call: outcome overridden, then status deleted soft-deletes it; answers {success: true}', async () => {
    // As the SDK's type has it (collectionId required), without status first.
    const first = await update({
      collectionId: a.id,
      eventId: 'evt_abc123',
      interactionId: 'vote',
      userId: 'user_abc123',
      outcome: 'option-b',
    });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ success: true });
    const [row] = await query({ interactionId: 'vote', scope: 'round-2' });
    expect(row).toMatchObject({ eventId: 'evt_abc123', outcome: 'option-b', deleted: false });
    expectRow(row);
    const counts = await post(`${admin()}/counts-by-outcome`, { interactionId: 'vote', scope: 'round-2' });
    expect(counts.json()).toEqual([{ outcome: 'option-b', count: 1 }]);

    // The guide's example body, exactly.
    const res = await update({
      eventId: 'evt_abc123',
      interactionId: 'vote',
      userId: 'user_abc123',
      outcome: 'option-b',
      status: 'deleted',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true });
    expect(await query({ interactionId: 'vote', scope: 'round-2' })).toEqual([]);
    const [deleted] = await query({ interactionId: 'vote', scope: 'round-2', includeDeleted: true });
    expect(deleted).toMatchObject({ eventId: 'evt_abc123', outcome: 'option-b', deleted: true });
    const after = await post(`${admin()}/counts-by-outcome`, { interactionId: 'vote', scope: 'round-2' });
    expect(after.json()).toEqual([]);
  });

  it('another collection: its key on this path is 401, this event on its own path 404; nothing changes', async () => {
    const body = { eventId: 'evt_abc123', interactionId: 'vote', userId: 'user_abc123', status: 'active' };
    expect((await update(body, { 'x-api-key': b.key })).statusCode).toBe(401);
    expect((await update(body, { 'x-api-key': b.key }, b)).statusCode).toBe(404);
    const [row] = await query({ interactionId: 'vote', scope: 'round-2', includeDeleted: true });
    expect(row.deleted).toBe(true);
  });
});

describe('updating a type’s data: display and effects kept apart', () => {
  it('the guide’s donation type: effects on create, display updated later, effects kept (and the other way round)', async () => {
    const effects = [
      {
        type: 'transactional',
        config: {
          templateId: 'tmpl_donation_receipt',
          channel: 'email',
          props: { donationAmount: '{{metadata.amount}}', campaignName: '{{metadata.campaign}}' },
        },
      },
      { type: 'tag', config: { tags: ['donor'] } },
    ];
    await createType({ id: 'donation', appId: 'my-app', permissions: { allowPublicSubmit: true }, data: { effects } });
    const display = { title: 'Donate', description: 'Give to the campaign.' };
    const res = await t.inject({
      method: 'PATCH',
      url: `${admin()}/donation`,
      headers: adminKey,
      payload: { data: { display } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ data: { display, effects }, display, effects });
    const later = [{ type: 'loyalty', config: {} }];
    const again = await t.inject({
      method: 'PATCH',
      url: `${admin()}/donation`,
      headers: adminKey,
      payload: { data: { effects: later } },
    });
    expect(again.json().data).toEqual({ display, effects: later });
  });
});

describe('allowedOrigins as site domains, and endAt included', () => {
  it('a domain without a scheme allows that site; look-alike domains are refused', async () => {
    await createType({
      id: 'site-poll',
      appId: 'my-app',
      permissions: { allowPublicSubmit: true, allowAnonymousSubmit: true, allowedOrigins: ['example.com'] },
    });
    const vote = { appId: 'my-app', interactionId: 'site-poll', outcome: 'a' };
    for (const origin of ['https://example.com', 'http://example.com:8080']) {
      expect((await post(`${pub()}/submit`, vote, { origin })).statusCode, origin).toBe(200);
    }
    for (const origin of ['https://evil-example.com', 'https://example.com.evil.net', 'https://shop.example.com']) {
      const res = await post(`${pub()}/submit`, vote, { origin });
      expect(res.statusCode, origin).toBe(401);
      expect(res.json()).toMatchObject({ error: 'FORBIDDEN', reason: 'origin_forbidden' });
    }
  });

  it('the guide’s endAt 2026-06-30T23:59:59Z: a submit at that instant is accepted, a millisecond later after_end', async () => {
    await createType({
      id: 'june-vote',
      appId: 'my-app',
      permissions: {
        allowPublicSubmit: true,
        allowAnonymousSubmit: true,
        startAt: '2026-06-01T00:00:00Z',
        endAt: '2026-06-30T23:59:59Z',
      },
    });
    const vote = { appId: 'my-app', interactionId: 'june-vote', outcome: 'a' };
    try {
      vi.useFakeTimers({ toFake: ['Date'], now: new Date('2026-06-30T23:59:59.000Z') });
      const atEnd = await post(`${pub()}/submit`, vote, {});
      vi.setSystemTime(new Date('2026-06-30T23:59:59.001Z'));
      const after = await post(`${pub()}/submit`, vote, {});
      vi.useRealTimers();
      expect(atEnd.statusCode, atEnd.body).toBe(200);
      expect(after.statusCode).toBe(401);
      expect(after.json()).toMatchObject({ error: 'FORBIDDEN', reason: 'after_end' });
    } finally {
      vi.useRealTimers();
    }
  });
});
