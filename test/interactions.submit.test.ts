import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let tokenA: string;

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t, { userId: 'alice', contactId: 'contact-alice' }));
  tokenA = a.userToken;
});
afterAll(() => t.close());

const admin = (c: TestCollection) => `/admin/collection/${c.id}/interactions`;
const pub = (c: TestCollection) => `/public/collection/${c.id}/interactions`;
const hour = 3600_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function createType(id: string, permissions: Record<string, unknown>, c = a) {
  const res = await t.inject({
    method: 'POST',
    url: admin(c),
    headers: c.auth,
    payload: { id, appId: 'app', permissions },
  });
  expect(res.statusCode, res.body).toBe(200);
}

const submit = (payload: Record<string, unknown>, headers: Record<string, string> = {}, c = a) =>
  t.inject({ method: 'POST', url: `${pub(c)}/submit`, headers, payload });

async function events(filter: Record<string, unknown>, c = a) {
  const res = await t.inject({ method: 'POST', url: `${admin(c)}/query`, headers: c.auth, payload: filter });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Record<string, unknown>[];
}

describe('admin append', () => {
  it('stores an event with every field and answers {success, eventId}', async () => {
    await createType('app-type', {});
    const res = await t.inject({
      method: 'POST',
      url: `${admin(a)}/append`,
      headers: a.auth,
      payload: {
        interactionId: 'app-type',
        userId: 'u1',
        contactId: 'c1',
        outcome: 'success',
        scope: 'web',
        broadcastId: 'b1',
        journeyId: 'j1',
        metadata: { score: 3 },
        timestamp: '2026-03-01T10:00:00.000Z',
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { success, eventId } = res.json();
    expect(success).toBe(true);
    expect(eventId).toMatch(/^evt_/);
    const [row] = await events({ interactionId: 'app-type' });
    expect(row).toEqual({
      orgId: a.id,
      collectionId: a.id,
      eventId,
      timestamp: '2026-03-01T10:00:00.000Z',
      appId: 'app',
      interactionId: 'app-type',
      scope: 'web',
      broadcastId: 'b1',
      journeyId: 'j1',
      userId: 'u1',
      contactId: 'c1',
      outcome: 'success',
      metadata: { score: 3 },
      channel: 'admin',
      deleted: false,
    });
  });

  it('refuses an undefined interaction, a missing identity, a wrong appId, a foreign collectionId and bad values (400)', async () => {
    await createType('app-type2', {});
    for (const payload of [
      { interactionId: 'nope', userId: 'u1' },
      { interactionId: 'app-type2' },
      { interactionId: 'app-type2', userId: 'u1', appId: 'other' },
      { interactionId: 'app-type2', userId: 'u1', collectionId: b.id },
      { interactionId: 'app-type2', userId: 'u1', deleted: true },
      { interactionId: 'app-type2', userId: 'u1', productId: 7 },
      { interactionId: 'app-type2', userId: 'u1', timestamp: 'yesterday' },
      { interactionId: 'app-type2', userId: 'u1', metadata: [1, 2] },
    ]) {
      const res = await t.inject({ method: 'POST', url: `${admin(a)}/append`, headers: a.auth, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect(await events({ interactionId: 'app-type2' })).toEqual([]);
  });

  it('answers 401 without a credential, with another collection’s key or a user token; 400 for a type of another collection', async () => {
    await createType('guarded', {});
    for (const headers of [{}, b.auth, bearer(tokenA)]) {
      const res = await t.inject({
        method: 'POST',
        url: `${admin(a)}/append`,
        headers,
        payload: { interactionId: 'guarded', userId: 'u' },
      });
      expect(res.statusCode).toBe(401);
    }
    const other = await t.inject({
      method: 'POST',
      url: `${admin(b)}/append`,
      headers: b.auth,
      payload: { interactionId: 'guarded', userId: 'u' },
    });
    expect(other.statusCode).toBe(400);
    expect(await events({ interactionId: 'guarded' })).toEqual([]);
  });
});

describe('event update', () => {
  it('changes the latest version, marks every version deleted and restores them', async () => {
    await createType('versions', {});
    for (const [outcome, ts] of [
      ['draft', '2026-03-01T00:00:00Z'],
      ['final', '2026-03-02T00:00:00Z'],
    ]) {
      const res = await t.inject({
        method: 'POST',
        url: `${admin(a)}/append`,
        headers: a.auth,
        payload: { interactionId: 'versions', userId: 'u1', eventId: 'order-42', outcome, timestamp: ts },
      });
      expect(res.json().eventId).toBe('order-42');
    }
    expect((await events({ interactionId: 'versions' })).length).toBe(2);
    const latest = await events({ interactionId: 'versions', latestPerEventId: true });
    expect(latest.map((e) => e.outcome)).toEqual(['final']);

    const upd = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/events/order-42`,
      headers: a.auth,
      payload: { outcome: 'shipped', metadata: { carrier: 'dhl' } },
    });
    expect(upd.statusCode, upd.body).toBe(200);
    expect(upd.json()).toMatchObject({
      eventId: 'order-42',
      outcome: 'shipped',
      metadata: { carrier: 'dhl' },
      deleted: false,
    });
    const asc = await events({ interactionId: 'versions', order: 'ASC' });
    expect(asc.map((e) => e.outcome)).toEqual(['draft', 'shipped']);
    // The original's further event fields change too; null clears one.
    const more = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/events/order-42`,
      headers: a.auth,
      payload: { productId: 'p1', source: 'crm', eventType: 'status', orgId: 'org-1', metadata: null },
    });
    expect(more.statusCode, more.body).toBe(200);
    expect(more.json()).toMatchObject({ productId: 'p1', source: 'crm', eventType: 'status', orgId: 'org-1' });
    expect(more.json()).not.toHaveProperty('metadata');
    const cleared = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/events/order-42`,
      headers: a.auth,
      payload: { productId: null, orgId: null },
    });
    expect(cleared.json()).not.toHaveProperty('productId');
    expect(cleared.json().orgId).toBe(a.id);

    const del = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/events/order-42`,
      headers: a.auth,
      payload: { deleted: true },
    });
    expect(del.json().deleted).toBe(true);
    expect(await events({ interactionId: 'versions' })).toEqual([]);
    expect((await events({ interactionId: 'versions', includeDeleted: true })).every((e) => e.deleted)).toBe(true);
    const restore = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/events/order-42`,
      headers: a.auth,
      payload: { deleted: false },
    });
    expect(restore.json().deleted).toBe(false);
    expect((await events({ interactionId: 'versions' })).length).toBe(2);
  });

  it('answers 404 for an unknown or foreign event, 400 for bad input, 401 without admin', async () => {
    await createType('upd2', {});
    const { eventId } = (
      await t.inject({
        method: 'POST',
        url: `${admin(a)}/append`,
        headers: a.auth,
        payload: { interactionId: 'upd2', userId: 'u' },
      })
    ).json();
    const url = `${admin(a)}/events/${eventId}`;
    expect(
      (
        await t.inject({
          method: 'PATCH',
          url: `${admin(a)}/events/missing`,
          headers: a.auth,
          payload: { outcome: 'x' },
        })
      ).statusCode,
    ).toBe(404);
    expect(
      (
        await t.inject({
          method: 'PATCH',
          url: `${admin(b)}/events/${eventId}`,
          headers: b.auth,
          payload: { outcome: 'x' },
        })
      ).statusCode,
    ).toBe(404);
    for (const payload of [{}, { outcome: 5 }, { deleted: 'yes' }, { userId: 'other' }]) {
      expect(
        (await t.inject({ method: 'PATCH', url, headers: a.auth, payload })).statusCode,
        JSON.stringify(payload),
      ).toBe(400);
    }
    for (const headers of [{}, b.auth, bearer(tokenA)]) {
      expect((await t.inject({ method: 'PATCH', url, headers, payload: { outcome: 'x' } })).statusCode).toBe(401);
    }
    const [row] = await events({ interactionId: 'upd2' });
    expect(row).not.toHaveProperty('outcome');
  });
});

describe('event update as the original’s clients send it: POST …/events/update', () => {
  const update = (payload: Record<string, unknown>, headers: Record<string, string> = a.auth, c = a) =>
    t.inject({ method: 'POST', url: `${admin(c)}/events/update`, headers, payload });
  const append = (payload: Record<string, unknown>) =>
    t.inject({ method: 'POST', url: `${admin(a)}/append`, headers: a.auth, payload });

  beforeAll(async () => {
    await createType('sdk-upd', {});
    for (const [outcome, ts] of [
      ['draft', '2026-03-01T00:00:00Z'],
      ['final', '2026-03-02T00:00:00Z'],
    ]) {
      const res = await append({
        interactionId: 'sdk-upd',
        userId: 'u1',
        contactId: 'c1',
        eventId: 'order-7',
        outcome,
        timestamp: ts,
      });
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it('changes the latest version as PATCH does and answers {success: true}; status deletes and restores every version', async () => {
    const res = await update({
      eventId: 'order-7',
      interactionId: 'sdk-upd',
      userId: 'u1',
      outcome: 'shipped',
      scope: 'eu',
      productId: 'p9',
      source: 'crm',
      metadata: { carrier: 'dhl' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true });
    const asc = await events({ interactionId: 'sdk-upd', order: 'ASC' });
    expect(asc.map((e) => e.outcome)).toEqual(['draft', 'shipped']);
    expect(asc[1]).toMatchObject({ scope: 'eu', productId: 'p9', source: 'crm', metadata: { carrier: 'dhl' } });
    expect(asc[0]).not.toHaveProperty('scope');

    // contactId names the actor as well as userId does; appId must be the event's.
    const del = await update({
      eventId: 'order-7',
      interactionId: 'sdk-upd',
      contactId: 'c1',
      appId: 'app',
      status: 'deleted',
    });
    expect(del.json()).toEqual({ success: true });
    expect(await events({ interactionId: 'sdk-upd' })).toEqual([]);
    const all = await events({ interactionId: 'sdk-upd', includeDeleted: true });
    expect(all.map((e) => e.deleted)).toEqual([true, true]);
    const restore = await update({ eventId: 'order-7', interactionId: 'sdk-upd', userId: 'u1', status: 'active' });
    expect(restore.json()).toEqual({ success: true });
    expect((await events({ interactionId: 'sdk-upd' })).map((e) => e.deleted)).toEqual([false, false]);
  });

  it('an event of another type, app or actor is 404 naming what differs; bad bodies are 400; nothing changes', async () => {
    const before = await events({ interactionId: 'sdk-upd', includeDeleted: true });
    const named = { eventId: 'order-7', interactionId: 'sdk-upd', userId: 'u1' };
    for (const [body, field] of [
      [{ ...named, interactionId: 'other' }, 'body.interactionId'],
      [{ ...named, userId: 'u2' }, 'body.userId'],
      [{ eventId: 'order-7', interactionId: 'sdk-upd', contactId: 'c2' }, 'body.contactId'],
      [{ ...named, appId: 'another-app' }, 'body.appId'],
    ] as const) {
      const res = await update({ ...body, outcome: 'hijacked', status: 'deleted' });
      expect(res.statusCode, JSON.stringify(body)).toBe(404);
      expect(res.json()).toMatchObject({ errorCode: 'NOT_FOUND', details: { fields: [field] } });
    }
    expect((await update({ ...named, eventId: 'missing', outcome: 'x' })).statusCode).toBe(404);

    for (const [body, path] of [
      [{ eventId: 'order-7', interactionId: 'sdk-upd', outcome: 'x' }, 'body.userId'],
      [{ ...named, outcome: 'x', timestamp: '2026-03-03T00:00:00Z' }, 'body.timestamp'],
      [{ ...named, outcome: 'x', campaign: 'spring' }, 'body.campaign'],
      [{ ...named, outcome: 'x', anonId: 'd1' }, 'body.anonId'],
      [{ ...named, outcome: 'x', collectionId: b.id }, 'body.collectionId'],
      [{ ...named, status: 'archived' }, 'body.status'],
      [{ ...named, outcome: 5 }, 'body.outcome'],
      [{ interactionId: 'sdk-upd', userId: 'u1', outcome: 'x' }, 'body.eventId'],
    ] as const) {
      const res = await update(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().details.errors[0].path, JSON.stringify(body)).toBe(path);
    }
    // Nothing to change: 400, as PATCH with an empty body.
    const nothing = await update(named);
    expect(nothing.statusCode).toBe(400);
    expect(nothing.json().message).toContain('Nothing to change');
    expect(await events({ interactionId: 'sdk-upd', includeDeleted: true })).toEqual(before);
  });

  it('another collection’s key is 401 on this path and 404 for this event on its own; a user token is 401', async () => {
    const before = await events({ interactionId: 'sdk-upd', includeDeleted: true });
    const body = { eventId: 'order-7', interactionId: 'sdk-upd', userId: 'u1', outcome: 'x', status: 'deleted' };
    for (const headers of [{}, b.auth, bearer(tokenA)]) {
      expect((await update(body, headers)).statusCode).toBe(401);
    }
    await createType('sdk-upd', {}, b);
    expect((await update(body, b.auth, b)).statusCode).toBe(404);
    expect(await events({ interactionId: 'sdk-upd', includeDeleted: true })).toEqual(before);
  });
});

describe('public submit: permissions, each refusal with its reason', () => {
  it('accepts a user submit, taking identity from the token', async () => {
    await createType('open', { allowPublicSubmit: true });
    const res = await submit({ interactionId: 'open', outcome: 'success', metadata: { n: 1 } }, bearer(tokenA));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, eventId: expect.stringMatching(/^evt_/) });
    const [row] = await events({ interactionId: 'open' });
    expect(row).toMatchObject({
      userId: 'alice',
      contactId: 'contact-alice',
      channel: 'public',
      outcome: 'success',
      appId: 'app',
    });
  });

  const cases: [
    string,
    Record<string, unknown>,
    Record<string, unknown>,
    () => Record<string, string>,
    number,
    string,
    string,
  ][] = [
    ['disabled', { enabled: false, allowPublicSubmit: true }, {}, () => bearer(tokenA), 401, 'FORBIDDEN', 'disabled'],
    ['no public submit', {}, {}, () => bearer(tokenA), 401, 'FORBIDDEN', 'not_public'],
    [
      'requireAuth, anonymous',
      { allowPublicSubmit: true, allowAnonymousSubmit: true, requireAuth: true },
      {},
      () => ({}),
      401,
      'UNAUTHORIZED',
      'auth_required',
    ],
    ['anonymous not allowed', { allowPublicSubmit: true }, {}, () => ({}), 401, 'UNAUTHORIZED', 'auth_required'],
    [
      'origin not allowed',
      { allowPublicSubmit: true, allowedOrigins: ['https://shop.example.com'] },
      {},
      () => ({ ...bearer(tokenA), origin: 'https://evil.example.net' }),
      401,
      'FORBIDDEN',
      'origin_forbidden',
    ],
    [
      'no origin',
      { allowPublicSubmit: true, allowedOrigins: ['https://shop.example.com'] },
      {},
      () => bearer(tokenA),
      401,
      'FORBIDDEN',
      'origin_forbidden',
    ],
    [
      'not started',
      { allowPublicSubmit: true, startAt: iso(Date.now() + hour) },
      {},
      () => bearer(tokenA),
      401,
      'FORBIDDEN',
      'before_start',
    ],
    [
      'ended',
      { allowPublicSubmit: true, endAt: iso(Date.now() - hour) },
      {},
      () => bearer(tokenA),
      401,
      'FORBIDDEN',
      'after_end',
    ],
    [
      'identity mismatch',
      { allowPublicSubmit: true },
      { userId: 'mallory' },
      () => bearer(tokenA),
      401,
      'FORBIDDEN',
      'identity_mismatch',
    ],
    [
      'anonymous naming a user',
      { allowPublicSubmit: true, allowAnonymousSubmit: true },
      { userId: 'alice' },
      () => ({}),
      401,
      'FORBIDDEN',
      'identity_mismatch',
    ],
  ];
  for (const [name, permissions, extra, headers, status, errorCode, reason] of cases) {
    it(`refuses: ${name} → ${status} ${reason}`, async () => {
      const id = `refuse-${reason}-${Math.random().toString(36).slice(2, 7)}`;
      await createType(id, permissions);
      const res = await submit({ interactionId: id, outcome: 'success', ...extra }, headers());
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json()).toMatchObject({
        errorCode,
        error: 'FORBIDDEN',
        reason,
        details: { error: 'FORBIDDEN', reason },
      });
      expect(await events({ interactionId: id })).toEqual([]);
    });
  }

  it('accepts an allowed origin (exact and wildcard) and a submit inside its window', async () => {
    await createType('origins', {
      allowPublicSubmit: true,
      allowedOrigins: ['https://shop.example.com', 'https://*.brand.test'],
      startAt: iso(Date.now() - hour),
      endAt: iso(Date.now() + hour),
    });
    for (const origin of ['https://shop.example.com', 'https://eu.brand.test']) {
      const res = await submit({ interactionId: 'origins' }, { ...bearer(tokenA), origin });
      expect(res.statusCode, origin).toBe(200);
    }
    const res = await submit(
      { interactionId: 'origins' },
      { ...bearer(tokenA), origin: 'https://brand.test.evil.com' },
    );
    expect(res.json().details.reason).toBe('origin_forbidden');
  });

  it('an entry without a scheme matches that host over http or https, on any port; subdomains only with *.; never a substring', async () => {
    await createType('hosts', {
      allowPublicSubmit: true,
      allowAnonymousSubmit: true,
      allowedOrigins: ['example.com', '*.brand.test', 'localhost:3000'],
    });
    const allowed = [
      'https://example.com',
      'http://example.com',
      'https://example.com:8443',
      'https://EXAMPLE.com',
      'https://example.com/',
      'https://eu.brand.test',
      'https://a.b.brand.test',
      'http://localhost:3000',
    ];
    const refused = [
      'https://evil-example.com',
      'https://notexample.com',
      'https://example.com.evil.net',
      'https://example.com@evil.net',
      'https://evil.net/example.com',
      'https://evil.net?example.com',
      'https://evil.net#.brand.test',
      'https://sub.example.com',
      'https://brand.test',
      'https://evil-brand.test',
      'https://eu.brand.test.evil.net',
      'ftp://example.com',
      'http://localhost:3001',
      'http://localhost',
      'null',
      'example.com',
    ];
    for (const origin of allowed) {
      const res = await submit({ interactionId: 'hosts' }, { origin });
      expect(res.statusCode, `${origin}: ${res.body}`).toBe(200);
    }
    for (const origin of refused) {
      const res = await submit({ interactionId: 'hosts' }, { origin });
      expect(res.statusCode, origin).toBe(401);
      expect(res.json().reason, origin).toBe('origin_forbidden');
    }
    expect((await events({ interactionId: 'hosts' })).length).toBe(allowed.length);
  });

  it('an entry with a scheme keeps to it: the scheme and the port (the scheme’s default when none is written)', async () => {
    await createType('schemes', {
      allowPublicSubmit: true,
      allowAnonymousSubmit: true,
      allowedOrigins: ['https://shop.example.com', 'https://*.example.org'],
    });
    for (const [origin, status] of [
      ['https://shop.example.com', 200],
      ['https://shop.example.com:443', 200],
      ['https://deep.sub.example.org', 200],
      ['http://shop.example.com', 401],
      ['https://shop.example.com:8443', 401],
      ['https://example.org', 401],
      ['https://evil-example.org', 401],
      ['https://shop.example.com.evil.net', 401],
    ] as const) {
      expect((await submit({ interactionId: 'schemes' }, { origin })).statusCode, origin).toBe(status);
    }
  });

  it('accepts anonymous submits where allowed, with an anonId', async () => {
    await createType('anon-ok', { allowPublicSubmit: true, allowAnonymousSubmit: true });
    const res = await submit({ interactionId: 'anon-ok', anonId: 'device-1' });
    expect(res.statusCode).toBe(200);
    const [row] = await events({ interactionId: 'anon-ok' });
    expect(row).toMatchObject({ anonId: 'device-1', channel: 'public' });
    expect(row).not.toHaveProperty('userId');
  });

  describe('the window: startAt and endAt are both included', () => {
    // Only Date is faked: the service reads the time from it, timers and the database run as usual.
    const at = (instant: string) => vi.useFakeTimers({ toFake: ['Date'], now: new Date(instant) });
    afterEach(() => {
      vi.useRealTimers();
    });
    const open = { allowPublicSubmit: true, allowAnonymousSubmit: true };

    it('a submit at endAt is accepted, one a millisecond later is after_end; at startAt accepted, before it before_start', async () => {
      await createType('edges', { ...open, startAt: '2026-06-01T00:00:00Z', endAt: '2026-06-30T23:59:59Z' });
      for (const [instant, reason] of [
        ['2026-05-31T23:59:59.999Z', 'before_start'],
        ['2026-06-01T00:00:00.000Z', null],
        ['2026-06-30T23:59:59.000Z', null],
        ['2026-06-30T23:59:59.001Z', 'after_end'],
      ] as const) {
        at(instant);
        const res = await submit({ interactionId: 'edges' });
        vi.useRealTimers();
        expect(res.statusCode, `${instant}: ${res.body}`).toBe(reason === null ? 200 : 401);
        if (reason) expect(res.json().reason).toBe(reason);
      }
      expect((await events({ interactionId: 'edges' })).map((e) => e.timestamp)).toEqual([
        '2026-06-30T23:59:59.000Z',
        '2026-06-01T00:00:00.000Z',
      ]);
    });

    it('dates alone: startAt from that day’s first instant, endAt up to the end of its day', async () => {
      await createType('days', { ...open, startAt: '2026-06-01', endAt: '2026-06-30' });
      for (const [instant, status] of [
        ['2026-05-31T23:59:59.999Z', 401],
        ['2026-06-01T00:00:00.000Z', 200],
        ['2026-06-30T23:59:59.999Z', 200],
        ['2026-07-01T00:00:00.000Z', 401],
      ] as const) {
        at(instant);
        const res = await submit({ interactionId: 'days' });
        vi.useRealTimers();
        expect(res.statusCode, `${instant}: ${res.body}`).toBe(status);
      }
      expect((await events({ interactionId: 'days' })).length).toBe(2);
    });
  });

  it('refuses bad input (400) and an undefined interaction (400); another collection’s token is 401', async () => {
    await createType('input', { allowPublicSubmit: true, allowAnonymousSubmit: true });
    for (const payload of [
      {},
      { interactionId: 'nope' },
      { interactionId: 'input', eventId: 'mine' },
      { interactionId: 'input', outcome: 7 },
      { interactionId: 'input', collectionId: b.id },
      { interactionId: 'input', metadata: { anonId: 5 } },
    ]) {
      const res = await submit(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect((await submit({ interactionId: 'input' }, b.userAuth)).statusCode).toBe(401);
    expect(await events({ interactionId: 'input' })).toEqual([]);
  });

  it('uniquePerUser: a second submit is 409 duplicate; other users are free', async () => {
    await createType('once', { allowPublicSubmit: true, uniquePerUser: true });
    expect((await submit({ interactionId: 'once' }, bearer(tokenA))).statusCode).toBe(200);
    const again = await submit({ interactionId: 'once' }, bearer(tokenA));
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({
      errorCode: 'CONFLICT',
      error: 'FORBIDDEN',
      reason: 'duplicate',
      details: { reason: 'duplicate' },
    });
    const bobToken = await t.userToken(a.id, 'bob');
    expect((await submit({ interactionId: 'once' }, bearer(bobToken))).statusCode).toBe(200);
    expect((await events({ interactionId: 'once' })).length).toBe(2);
  });

  it('uniquePerUser with a window counts only events inside it', async () => {
    await createType('daily', { allowPublicSubmit: true, uniquePerUser: true, uniquePerUserWindowSeconds: 3600 });
    // An event two hours old (appended by an admin) does not block; one in the window does.
    await t.inject({
      method: 'POST',
      url: `${admin(a)}/append`,
      headers: a.auth,
      payload: { interactionId: 'daily', userId: 'alice', timestamp: iso(Date.now() - 2 * hour) },
    });
    expect((await submit({ interactionId: 'daily' }, bearer(tokenA))).statusCode).toBe(200);
    const again = await submit({ interactionId: 'daily' }, bearer(tokenA));
    expect(again.json().details.reason).toBe('duplicate');
  });

  it('uniqueOutcome narrows uniqueness to that outcome', async () => {
    await createType('vote', { allowPublicSubmit: true, uniquePerUser: true, uniqueOutcome: 'voted' });
    expect((await submit({ interactionId: 'vote', outcome: 'viewed' }, bearer(tokenA))).statusCode).toBe(200);
    expect((await submit({ interactionId: 'vote', outcome: 'viewed' }, bearer(tokenA))).statusCode).toBe(200);
    expect((await submit({ interactionId: 'vote', outcome: 'voted' }, bearer(tokenA))).statusCode).toBe(200);
    const again = await submit({ interactionId: 'vote', outcome: 'voted' }, bearer(tokenA));
    expect(again.statusCode).toBe(409);
    expect(again.json().details.reason).toBe('duplicate');
  });

  it('uniquePerAnonId (with window) and anonId required', async () => {
    await createType('anon-once', {
      allowPublicSubmit: true,
      allowAnonymousSubmit: true,
      uniquePerAnonId: true,
      uniquePerAnonIdWindowSeconds: 600,
    });
    const missing = await submit({ interactionId: 'anon-once' });
    expect(missing.statusCode).toBe(400);
    expect((await submit({ interactionId: 'anon-once', anonId: 'dev-1' })).statusCode).toBe(200);
    const again = await submit({ interactionId: 'anon-once', anonId: 'dev-1' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ reason: 'duplicate_anon', details: { reason: 'duplicate_anon' } });
    expect((await submit({ interactionId: 'anon-once', anonId: 'dev-2' })).statusCode).toBe(200);
  });

  it('uniqueness holds under concurrency: 20 simultaneous submits by one user store exactly one event', async () => {
    await createType('race', { allowPublicSubmit: true, uniquePerUser: true });
    const token = await t.userToken(a.id, 'racer');
    const results = await Promise.all(
      Array.from({ length: 20 }, () => submit({ interactionId: 'race' }, bearer(token))),
    );
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes.filter((c) => c === 200).length).toBe(1);
    expect(codes.filter((c) => c === 409).length).toBe(19);
    expect((await events({ interactionId: 'race', userId: 'racer' })).length).toBe(1);
  });
});

describe('the original’s event fields and further fields', () => {
  it('metadata.anonId stands for anonId (uniquePerAnonId); given both, they must agree (400)', async () => {
    await createType('anon-meta', { allowPublicSubmit: true, allowAnonymousSubmit: true, uniquePerAnonId: true });
    expect((await submit({ interactionId: 'anon-meta', metadata: { anonId: 'd1' } })).statusCode).toBe(200);
    // The same device, named the other way, is the same slot.
    const again = await submit({ interactionId: 'anon-meta', anonId: 'd1' });
    expect(again.statusCode).toBe(409);
    expect(again.json().reason).toBe('duplicate_anon');
    const mismatch = await submit({ interactionId: 'anon-meta', anonId: 'd2', metadata: { anonId: 'd3' } });
    expect(mismatch.statusCode).toBe(400);
    expect(mismatch.json().details.errors[0].path).toBe('body.anonId');
    expect((await events({ interactionId: 'anon-meta' })).map((e) => e.anonId)).toEqual(['d1']);
  });

  it('product, proof, variant, batch, source, eventType, orgId and further fields: stored and returned to the right collection only', async () => {
    await createType('fields', { allowPublicSubmit: true });
    await createType('fields', { allowPublicSubmit: true }, b);
    const res = await submit(
      {
        interactionId: 'fields',
        productId: 'p',
        proofId: 'pr',
        variantId: 'v',
        batchId: 'bt',
        source: 'kiosk',
        eventType: 'scan',
        orgId: 'org',
        location: { lat: 1, lng: 2 },
      },
      bearer(tokenA),
    );
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await events({ interactionId: 'fields' });
    expect(row).toMatchObject({
      orgId: 'org',
      collectionId: a.id,
      productId: 'p',
      proofId: 'pr',
      variantId: 'v',
      batchId: 'bt',
      source: 'kiosk',
      eventType: 'scan',
      channel: 'public',
      location: { lat: 1, lng: 2 },
    });
    expect(await events({ interactionId: 'fields' }, b)).toEqual([]);
    const foreign = await t.inject({
      method: 'POST',
      url: `${admin(a)}/query`,
      headers: b.auth,
      payload: { interactionId: 'fields' },
    });
    expect(foreign.statusCode).toBe(401);
  });
});
