import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, superAuth, type TestApp } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let globalId: string;
let ownId: string;

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t));
  const g = await t.inject({
    method: 'POST',
    url: '/platform/location',
    headers: superAuth,
    payload: {
      name: 'Eiffel Tower',
      category: 'landmark',
      countryCode: 'fr',
      countryName: 'France',
      description: 'Iron lattice tower',
    },
  });
  expect(g.statusCode).toBe(200);
  globalId = g.json().locationId;
  const own = await t.inject({
    method: 'POST',
    url: `/admin/collection/${a.id}/location`,
    headers: a.auth,
    payload: {
      name: 'Berlin Flagship Store',
      category: 'store',
      countryCode: 'DE',
      countryName: 'Germany',
      description: 'Our largest shop',
      websiteUrl: 'https://example.com/berlin',
      email: 'berlin@example.com',
      metadata: { floor: 2 },
    },
  });
  expect(own.statusCode).toBe(200);
  ownId = own.json().locationId;
  for (const [name, cc] of [
    ['Munich Outlet', 'DE'],
    ['Amsterdam Store', 'NL'],
  ]) {
    await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: a.auth,
      payload: { name, countryCode: cc, category: 'store' },
    });
  }
  await t.inject({
    method: 'POST',
    url: `/admin/collection/${b.id}/location`,
    headers: b.auth,
    payload: { name: 'Berlin Secret Lab' },
  });
});
afterAll(() => t.close());

const search = (qs: string, headers = a.auth, collectionId = a.id) =>
  t.inject({ method: 'GET', url: `/admin/collection/${collectionId}/location/search${qs}`, headers });

describe('create', () => {
  it('creates global and collection-scoped locations with every field', async () => {
    const res = await t.inject({ method: 'GET', url: `/public/collection/${a.id}/location/${ownId}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      locationId: ownId,
      collectionId: a.id,
      scope: 'collection',
      name: 'Berlin Flagship Store',
      countryCode: 'DE',
      websiteUrl: 'https://example.com/berlin',
      metadata: { floor: 2 },
    });
    const g = await t.inject({ method: 'GET', url: `/public/location/${globalId}` });
    expect(g.json()).toMatchObject({ scope: 'global', collectionId: null, countryCode: 'FR' });
  });

  it('needs super admin with features.adminApps for global locations', async () => {
    const noFeature = await createTestApp({ SUPER_ADMIN_FEATURES: '' });
    try {
      const res = await noFeature.inject({
        method: 'POST',
        url: '/platform/location',
        headers: superAuth,
        payload: { name: 'x' },
      });
      expect(res.statusCode).toBe(401);
      expect(res.json().errorCode).toBe('FORBIDDEN');
    } finally {
      await noFeature.close();
    }
    for (const headers of [{}, a.auth]) {
      const res = await t.inject({ method: 'POST', url: '/platform/location', headers, payload: { name: 'x' } });
      expect(res.statusCode).toBe(401);
    }
  });

  it('refuses bad payloads and writes nothing', async () => {
    const before = (await search('?limit=100')).json().count;
    for (const payload of [
      {},
      { name: '' },
      { name: 7 },
      { name: 'x', countryCode: 'Germany' },
      { name: 'x', websiteUrl: 'not a url' },
      { name: 'x', email: 'nope' },
      { name: 'x', metadata: 'str' },
      { name: 'x', unknownField: true },
      { name: 'x'.repeat(301) },
    ]) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/location`,
        headers: a.auth,
        payload,
      });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().errorCode).toBe('VALIDATION_FAILED');
    }
    expect((await search('?limit=100')).json().count).toBe(before);
  });

  it('refuses missing and foreign credentials', async () => {
    const none = await t.inject({ method: 'POST', url: `/admin/collection/${a.id}/location`, payload: { name: 'x' } });
    expect(none.statusCode).toBe(401);
    const foreign = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: b.auth,
      payload: { name: 'x' },
    });
    expect(foreign.statusCode).toBe(401);
    const user = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: a.userAuth,
      payload: { name: 'x' },
    });
    expect(user.statusCode).toBe(401);
  });
});

describe('search', () => {
  it('combines the collection’s own and global locations, never another collection’s', async () => {
    const res = await search('?limit=100');
    expect(res.statusCode).toBe(200);
    const names = res.json().items.map((l: { name: string }) => l.name);
    expect(names).toEqual(expect.arrayContaining(['Eiffel Tower', 'Berlin Flagship Store', 'Munich Outlet']));
    expect(names).not.toContain('Berlin Secret Lab');
    const fromB = await search('?q=berlin', b.auth, b.id);
    expect(fromB.json().items.map((l: { name: string }) => l.name)).toEqual(['Berlin Secret Lab']);
  });

  it('serves the same search at /location and /location/search', async () => {
    const atRoot = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/location?q=store`,
      headers: a.auth,
    });
    const atSearch = await search('?q=store');
    expect(atRoot.statusCode).toBe(200);
    expect(atRoot.json()).toEqual(atSearch.json());
  });

  it('matches q case-insensitively on name and description, and tolerates a small typo', async () => {
    expect((await search('?q=BERLIN')).json().items.map((l: { name: string }) => l.name)).toEqual([
      'Berlin Flagship Store',
    ]);
    expect((await search('?q=largest')).json().count).toBe(1);
    expect((await search('?q=berln')).json().items[0]?.name).toBe('Berlin Flagship Store');
    expect((await search('?q=zzzzqqq')).json()).toEqual({ items: [], count: 0 });
    // LIKE wildcards in q are literal characters.
    expect((await search('?q=%25')).json().count).toBe(0);
  });

  it('filters, sorts, limits and counts', async () => {
    const de = await search('?countryCode=de&sort=name');
    expect(de.json().items.map((l: { name: string }) => l.name)).toEqual(['Berlin Flagship Store', 'Munich Outlet']);
    const stores = await search('?category=store&limit=2&sort=countryCode');
    expect(stores.json().count).toBe(3);
    expect(stores.json().items).toHaveLength(2);
    expect(stores.json().items.map((l: { countryCode: string }) => l.countryCode)).toEqual(['DE', 'DE']);
    const byName = await search('?countryName=france');
    expect(byName.json().items.map((l: { name: string }) => l.name)).toEqual(['Eiffel Tower']);
    const page2 = await search('?category=store&limit=2&offset=2&sort=countryCode');
    expect(page2.json()).toMatchObject({ count: 3, items: [{ countryCode: 'NL' }] });
    const beyond = await search('?category=store&offset=50');
    expect(beyond.json()).toEqual({ items: [], count: 3 });
  });

  it('refuses bad query parameters', async () => {
    for (const qs of [
      '?limit=0',
      '?limit=101',
      '?limit=abc',
      '?sort=evil',
      '?offset=-1',
      `?q=${'x'.repeat(201)}`,
      '?unknown=1',
    ]) {
      const res = await search(qs);
      expect(res.statusCode, qs).toBe(400);
    }
  });

  it('refuses missing and foreign credentials', async () => {
    expect((await search('', {} as never)).statusCode).toBe(401);
    expect((await search('', b.auth)).statusCode).toBe(401);
  });
});

describe('public reads', () => {
  it('falls back from the collection to global, and hides other collections', async () => {
    const viaCollection = await t.inject({ method: 'GET', url: `/public/collection/${b.id}/location/${globalId}` });
    expect(viaCollection.statusCode).toBe(200);
    const foreign = await t.inject({ method: 'GET', url: `/public/collection/${b.id}/location/${ownId}` });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().errorCode).toBe('NOT_FOUND');
    const notGlobal = await t.inject({ method: 'GET', url: `/public/location/${ownId}` });
    expect(notGlobal.statusCode).toBe(404);
    const unknown = await t.inject({ method: 'GET', url: '/public/location/loc_nothing' });
    expect(unknown.statusCode).toBe(404);
  });

  it('refuses a user token of another collection instead of serving it anonymously', async () => {
    const res = await t.inject({
      method: 'GET',
      url: `/public/collection/${a.id}/location/${ownId}`,
      headers: b.userAuth,
    });
    expect(res.statusCode).toBe(401);
    const own = await t.inject({
      method: 'GET',
      url: `/public/collection/${b.id}/location/${globalId}`,
      headers: b.userAuth,
    });
    expect(own.statusCode).toBe(200);
  });
});
