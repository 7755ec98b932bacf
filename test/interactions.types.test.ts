import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, superAuth, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t));
});
afterAll(() => t.close());

const admin = (c: TestCollection) => `/admin/collection/${c.id}/interactions`;
const pub = (c: TestCollection) => `/public/collection/${c.id}/interactions`;

async function createType(c: TestCollection, body: Record<string, unknown>) {
  const res = await t.inject({ method: 'POST', url: admin(c), headers: c.auth, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('admin type CRUD', () => {
  it('creates a type with every permission key and data, and reads it back', async () => {
    const permissions = {
      enabled: true,
      requireAuth: false,
      allowPublicSubmit: true,
      allowAnonymousSubmit: true,
      allowedOrigins: ['https://shop.example.com'],
      startAt: '2026-01-01T00:00:00.000Z',
      endAt: '2027-01-01T00:00:00.000Z',
      uniquePerUser: true,
      uniquePerUserWindowSeconds: 3600,
      uniqueOutcome: 'voted',
      allowPublicSummary: true,
      allowAuthenticatedSummary: false,
      allowOwnRead: true,
      uniquePerAnonId: true,
      uniquePerAnonIdWindowSeconds: 60,
    };
    const created = await createType(a, {
      id: 'poll-1',
      appId: 'polls',
      permissions,
      data: { display: { title: 'Poll' }, interactionType: 'vote', effects: [{ type: 'points' }] },
    });
    expect(created).toMatchObject({
      id: 'poll-1',
      collectionId: a.id,
      appId: 'polls',
      permissions,
      display: { title: 'Poll' },
      interactionType: 'vote',
      effects: [{ type: 'points' }],
    });
    expect(Date.parse(created.createdAt)).not.toBeNaN();
    const got = await t.inject({ method: 'GET', url: `${admin(a)}/poll-1`, headers: a.auth });
    expect(got.statusCode).toBe(200);
    expect(got.json()).toEqual(created);
  });

  it('refuses a duplicate id with 409 and bad input with 400, changing nothing', async () => {
    await createType(a, { id: 'dup', appId: 'x' });
    const again = await t.inject({
      method: 'POST',
      url: admin(a),
      headers: a.auth,
      payload: { id: 'dup', appId: 'y' },
    });
    expect(again.statusCode).toBe(409);
    for (const payload of [
      { appId: 'x' },
      { id: 'ok', appId: 'x', extra: 1 },
      { id: 'has space', appId: 'x' },
      { id: 'p', appId: 'x', permissions: { enabled: 'yes' } },
      { id: 'p', appId: 'x', permissions: { unknownKey: true } },
      { id: 'p', appId: 'x', permissions: { startAt: 'tomorrow' } },
      { id: 'p', appId: 'x', permissions: { startAt: '2027-01-01T00:00:00Z', endAt: '2026-01-01T00:00:00Z' } },
      { id: 'p', appId: 'x', permissions: { uniquePerUserWindowSeconds: -5 } },
    ]) {
      const res = await t.inject({ method: 'POST', url: admin(a), headers: a.auth, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    const p = await t.inject({ method: 'GET', url: `${admin(a)}/p`, headers: a.auth });
    expect(p.statusCode).toBe(404);
    const dup = await t.inject({ method: 'GET', url: `${admin(a)}/dup`, headers: a.auth });
    expect(dup.json().appId).toBe('x');
  });

  it('lists with appId filter and paging', async () => {
    for (const id of ['l1', 'l2', 'l3']) await createType(b, { id, appId: id === 'l3' ? 'other' : 'app' });
    const all = await t.inject({ method: 'GET', url: `${admin(b)}?appId=app`, headers: b.auth });
    expect(all.json()).toMatchObject({ limit: 100, offset: 0 });
    expect(all.json().items.map((i: { id: string }) => i.id)).toEqual(['l1', 'l2']);
    const page = await t.inject({ method: 'GET', url: `${admin(b)}?limit=1&offset=1`, headers: b.auth });
    expect(page.json().items.map((i: { id: string }) => i.id)).toEqual(['l2']);
    const bad = await t.inject({ method: 'GET', url: `${admin(b)}?limit=-1`, headers: b.auth });
    expect(bad.statusCode).toBe(400);
  });

  it('updates (permissions and data merged key by key, appId replaced) and removes', async () => {
    await createType(a, {
      id: 'upd',
      appId: 'x',
      permissions: { allowPublicSubmit: true, uniquePerUser: true },
      data: { old: true },
    });
    const res = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/upd`,
      headers: a.auth,
      payload: { appId: 'y', permissions: { enabled: false }, data: { k: 1 } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ appId: 'y' });
    expect(res.json().data).toEqual({ old: true, k: 1 });
    expect(res.json().permissions).toEqual({ allowPublicSubmit: true, uniquePerUser: true, enabled: false });
    const bad = await t.inject({ method: 'PATCH', url: `${admin(a)}/upd`, headers: a.auth, payload: { id: 'z' } });
    expect(bad.statusCode).toBe(400);
    const missing = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/nope`,
      headers: a.auth,
      payload: { appId: 'q' },
    });
    expect(missing.statusCode).toBe(404);
    const del = await t.inject({ method: 'DELETE', url: `${admin(a)}/upd`, headers: a.auth });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({ success: true, id: 'upd' });
    const gone = await t.inject({ method: 'DELETE', url: `${admin(a)}/upd`, headers: a.auth });
    expect(gone.statusCode).toBe(404);
  });

  it('answers 401 without a credential, with another collection’s key, and with a user token', async () => {
    await createType(a, { id: 'guarded', appId: 'x' });
    const calls = [
      { method: 'GET' as const, url: admin(a) },
      { method: 'POST' as const, url: admin(a), payload: { id: 'n', appId: 'x' } },
      { method: 'GET' as const, url: `${admin(a)}/guarded` },
      { method: 'PATCH' as const, url: `${admin(a)}/guarded`, payload: { appId: 'z' } },
      { method: 'DELETE' as const, url: `${admin(a)}/guarded` },
    ];
    for (const call of calls) {
      for (const headers of [{}, b.auth, a.userAuth]) {
        const res = await t.inject({ ...call, headers });
        expect(res.statusCode, `${call.method} ${call.url}`).toBe(401);
      }
    }
    const still = await t.inject({ method: 'GET', url: `${admin(a)}/guarded`, headers: superAuth });
    expect(still.json().appId).toBe('x');
  });

  it('hides another collection’s type (404)', async () => {
    await createType(a, { id: 'mine', appId: 'x' });
    const res = await t.inject({ method: 'GET', url: `${admin(b)}/mine`, headers: b.auth });
    expect(res.statusCode).toBe(404);
    const pubRes = await t.inject({ method: 'GET', url: `${pub(b)}/mine` });
    expect(pubRes.statusCode).toBe(404);
  });
});

describe('PATCH permissions: merged key by key, atomically', () => {
  const patch = (c: TestCollection, id: string, payload: Record<string, unknown>) =>
    t.inject({ method: 'PATCH', url: `${admin(c)}/${id}`, headers: c.auth, payload });
  const stored = async (c: TestCollection, id: string) =>
    (await t.inject({ method: 'GET', url: `${admin(c)}/${id}`, headers: c.auth })).json().permissions;

  it('a key given replaces that key; null removes a key (its default again); keys left out stay', async () => {
    await createType(a, {
      id: 'merge',
      appId: 'x',
      permissions: { allowPublicSubmit: true, allowOwnRead: true, uniquePerUserWindowSeconds: 60, enabled: false },
    });
    const res = await patch(a, 'merge', {
      permissions: { allowOwnRead: false, uniquePerUserWindowSeconds: null, enabled: null, allowedOrigins: ['*'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    const expected = { allowPublicSubmit: true, allowOwnRead: false, allowedOrigins: ['*'] };
    expect(res.json().permissions).toEqual(expected);
    expect(await stored(a, 'merge')).toEqual(expected);
    // enabled was removed, so the type is enabled again (its default) and publicly readable.
    expect((await t.inject({ method: 'GET', url: `${pub(a)}/merge` })).statusCode).toBe(200);
    // An empty permissions object changes nothing.
    expect((await patch(a, 'merge', { permissions: {} })).json().permissions).toEqual(expected);
  });

  it('startAt not after endAt is checked on the merged permissions; a refused PATCH changes nothing', async () => {
    const permissions = {
      allowPublicSubmit: true,
      startAt: '2026-06-01T00:00:00.000Z',
      endAt: '2026-07-01T00:00:00.000Z',
    };
    await createType(a, { id: 'window', appId: 'x', permissions });
    for (const p of [{ endAt: '2026-05-01T00:00:00Z' }, { startAt: '2026-08-01T00:00:00Z' }]) {
      const res = await patch(a, 'window', { appId: 'changed', permissions: p, data: { changed: true } });
      expect(res.statusCode, JSON.stringify(p)).toBe(400);
      expect(res.json().message).toContain('startAt must not be after');
    }
    const after = (await t.inject({ method: 'GET', url: `${admin(a)}/window`, headers: a.auth })).json();
    expect(after).toMatchObject({ appId: 'x', permissions, data: {} });
    // Removing startAt lifts the constraint.
    const ok = await patch(a, 'window', { permissions: { startAt: null, endAt: '2026-05-01T00:00:00.000Z' } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().permissions).toEqual({ allowPublicSubmit: true, endAt: '2026-05-01T00:00:00.000Z' });
    // Both ends are included, so a window of one instant holds a submit: startAt may equal endAt.
    const instant = await patch(a, 'window', { permissions: { startAt: '2026-05-01T00:00:00Z' } });
    expect(instant.statusCode, instant.body).toBe(200);
    expect(instant.json().permissions).toMatchObject({ startAt: instant.json().permissions.endAt });
  });

  it('a date alone as endAt is stored as that day’s last millisecond (endAt is included), as startAt its first', async () => {
    const created = await createType(a, {
      id: 'days',
      appId: 'x',
      permissions: { startAt: '2026-06-01', endAt: '2026-06-30' },
    });
    expect(created.permissions).toEqual({ startAt: '2026-06-01T00:00:00.000Z', endAt: '2026-06-30T23:59:59.999Z' });
    const res = await patch(a, 'days', { permissions: { endAt: '2026-07-15' } });
    expect(res.json().permissions.endAt).toBe('2026-07-15T23:59:59.999Z');
    // One day as both ends: that whole day.
    const oneDay = await patch(a, 'days', { permissions: { startAt: '2026-07-15' } });
    expect(oneDay.statusCode, oneDay.body).toBe(200);
  });

  it('refuses bad permission values and unknown keys (400), and permissions: null', async () => {
    await createType(a, { id: 'strict', appId: 'x', permissions: { allowOwnRead: true } });
    for (const payload of [
      { permissions: { enabled: 'no' } },
      { permissions: { unknownKey: null } },
      { permissions: { endAt: 'soon' } },
      { permissions: { uniquePerUserWindowSeconds: -1 } },
      { permissions: null },
    ]) {
      expect((await patch(a, 'strict', payload)).statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect(await stored(a, 'strict')).toEqual({ allowOwnRead: true });
  });

  it('concurrent PATCHes of different keys all land', async () => {
    await createType(a, { id: 'race', appId: 'x', permissions: { allowPublicSubmit: true } });
    const keys = [
      'requireAuth',
      'allowAnonymousSubmit',
      'uniquePerUser',
      'allowPublicSummary',
      'allowAuthenticatedSummary',
      'allowOwnRead',
      'uniquePerAnonId',
      'enabled',
    ];
    const results = await Promise.all(keys.map((k) => patch(a, 'race', { permissions: { [k]: true } })));
    expect(results.map((r) => r.statusCode)).toEqual(keys.map(() => 200));
    expect(await stored(a, 'race')).toEqual({
      allowPublicSubmit: true,
      ...Object.fromEntries(keys.map((k) => [k, true])),
    });
  });

  it('data merges key by key too: display updated, effects kept; null removes a key; a key’s value is replaced whole', async () => {
    const effects = [{ type: 'tag', config: { tags: ['donor'] } }];
    await createType(a, {
      id: 'donation',
      appId: 'x',
      data: { display: { title: 'Donate', icon: 'heart' }, effects, interactionType: 'form', custom: 1 },
    });
    const res = await patch(a, 'donation', { data: { display: { title: 'Give' }, custom: null } });
    expect(res.statusCode, res.body).toBe(200);
    // display is replaced whole (its icon is gone): the merge is one level deep.
    const expected = { display: { title: 'Give' }, effects, interactionType: 'form' };
    expect(res.json().data).toEqual(expected);
    expect(res.json()).toMatchObject({ display: { title: 'Give' }, effects, interactionType: 'form' });
    const got = (await t.inject({ method: 'GET', url: `${admin(a)}/donation`, headers: a.auth })).json();
    expect(got.data).toEqual(expected);
    // Effects updated alone keep the display; an empty data changes nothing.
    const next = [{ type: 'loyalty', config: {} }];
    expect((await patch(a, 'donation', { data: { effects: next } })).json().data).toEqual({
      ...expected,
      effects: next,
    });
    expect((await patch(a, 'donation', { data: {} })).json().data).toEqual({ ...expected, effects: next });
    // data: null is refused (400) and changes nothing.
    expect((await patch(a, 'donation', { data: null })).statusCode).toBe(400);
    const after = (await t.inject({ method: 'GET', url: `${admin(a)}/donation`, headers: a.auth })).json();
    expect(after.data).toEqual({ ...expected, effects: next });
  });

  it('an allowedOrigins entry that can match no origin is a 400 naming it, on create and PATCH; nothing changes', async () => {
    await createType(a, { id: 'origins', appId: 'x', permissions: { allowedOrigins: ['https://shop.example.com'] } });
    for (const entry of [
      'https://shop-*.example.com',
      '*example.com',
      'example.*',
      'https://example.com/path',
      'https://user@example.com',
      'example.com:99999',
      'http://',
      '',
    ]) {
      const created = await t.inject({
        method: 'POST',
        url: admin(a),
        headers: a.auth,
        payload: { id: 'bad-origins', appId: 'x', permissions: { allowedOrigins: ['example.com', entry] } },
      });
      expect(created.statusCode, entry).toBe(400);
      expect(created.json().details.errors[0].path, entry).toBe('body.permissions.allowedOrigins.1');
      const patched = await patch(a, 'origins', { appId: 'changed', permissions: { allowedOrigins: [entry] } });
      expect(patched.statusCode, entry).toBe(400);
      expect(patched.json().details.errors[0].path, entry).toBe('body.permissions.allowedOrigins.0');
    }
    expect((await t.inject({ method: 'GET', url: `${admin(a)}/bad-origins`, headers: a.auth })).statusCode).toBe(404);
    const stored = (await t.inject({ method: 'GET', url: `${admin(a)}/origins`, headers: a.auth })).json();
    expect(stored).toMatchObject({ appId: 'x', permissions: { allowedOrigins: ['https://shop.example.com'] } });
    // Every documented form is accepted.
    const ok = await patch(a, 'origins', {
      permissions: {
        allowedOrigins: [
          '*',
          'https://shop.example.com',
          'https://*.example.com',
          'http://localhost:3000',
          'example.com',
          '*.example.com',
          'EXAMPLE.org:8443',
          'https://shop.example.com/',
          '[::1]:8080',
        ],
      },
    });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('another collection’s admin cannot patch it (401 on its path, 404 on their own)', async () => {
    await createType(a, { id: 'tenant', appId: 'x', permissions: { allowOwnRead: true } });
    expect(
      (await t.inject({ method: 'PATCH', url: `${admin(a)}/tenant`, headers: b.auth, payload: { permissions: {} } }))
        .statusCode,
    ).toBe(401);
    expect((await patch(b, 'tenant', { permissions: { allowOwnRead: false } })).statusCode).toBe(404);
    expect(await stored(a, 'tenant')).toEqual({ allowOwnRead: true });
  });
});

describe('public type reads', () => {
  it('lists and gets enabled types only, anonymously or with a token', async () => {
    const c = await t.createCollection();
    await createType(c, { id: 'on', appId: 'app' });
    await createType(c, { id: 'explicit-on', appId: 'app', permissions: { enabled: true } });
    await createType(c, { id: 'off', appId: 'app', permissions: { enabled: false } });
    const list = await t.inject({ method: 'GET', url: pub(c) });
    expect(list.statusCode).toBe(200);
    // Which types are listed is the point here; two created in one millisecond (PGlite's clock
    // resolution) are listed in id order.
    expect(
      list
        .json()
        .items.map((i: { id: string }) => i.id)
        .sort(),
    ).toEqual(['explicit-on', 'on']);
    const token = await t.userToken(c.id, 'u1');
    const withToken = await t.inject({ method: 'GET', url: `${pub(c)}/on`, headers: bearer(token) });
    expect(withToken.statusCode).toBe(200);
    const off = await t.inject({ method: 'GET', url: `${pub(c)}/off` });
    expect(off.statusCode).toBe(404);
    const bad = await t.inject({ method: 'GET', url: `${pub(c)}?limit=abc` });
    expect(bad.statusCode).toBe(400);
    const foreign = await t.inject({ method: 'GET', url: pub(c), headers: a.userAuth });
    expect(foreign.statusCode).toBe(401);
    const unknownCollection = await t.inject({ method: 'GET', url: '/public/collection/nope-nope/interactions' });
    expect(unknownCollection.json().items).toEqual([]);
  });
});
