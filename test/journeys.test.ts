import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t));
});
afterAll(() => t.close());

const base = (c: TestCollection) => `/admin/collection/${c.id}/journeys`;
const create = async (c: TestCollection, payload: Record<string, unknown>) => {
  const res = await t.inject({ method: 'POST', url: base(c), headers: c.auth, payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

describe('journeys CRUD', () => {
  it('creates with every field and surfaces steps and presentation fields from data', async () => {
    const data = {
      title: 'Welcome',
      description: 'Onboarding',
      icon: 'wave',
      color: '#fff',
      display: { layout: 'wide' },
      steps: [{ id: 's1', config: { interactionId: 'view' } }],
      triggers: [{ type: 'signup' }],
      entryRules: ['new-user'],
      exitRules: [],
      metadata: { owner: 'growth' },
    };
    const j = await create(a, {
      appId: 'onboard',
      name: 'Welcome flow',
      active: false,
      journeyType: 'event_triggered',
      data,
    });
    expect(j).toMatchObject({
      id: expect.stringMatching(/^jrn_/),
      collectionId: a.id,
      appId: 'onboard',
      name: 'Welcome flow',
      active: false,
      journeyType: 'event_triggered',
      data,
      title: 'Welcome',
      description: 'Onboarding',
      icon: 'wave',
      color: '#fff',
      display: { layout: 'wide' },
      steps: data.steps,
      triggers: data.triggers,
      entryRules: ['new-user'],
      exitRules: [],
      metadata: { owner: 'growth' },
    });
    const got = await t.inject({ method: 'GET', url: `${base(a)}/${j.id}`, headers: a.auth });
    expect(got.json()).toEqual(j);
    const minimal = await create(a, { name: 'Min', journeyType: 'scheduled' });
    expect(minimal).toMatchObject({ active: true, data: {} });
    expect(minimal.appId).toBeUndefined();
  });

  it('lists with filters and paging', async () => {
    const c = await t.createCollection();
    // Lists are ordered by creation time, then id (random). PGlite's clock has millisecond
    // resolution, so journeys created in one millisecond would tie: a pause keeps them apart.
    const pause = () => new Promise((r) => setTimeout(r, 3));
    await create(c, { name: 'A', journeyType: 'scheduled', appId: 'x' });
    await pause();
    await create(c, { name: 'B', journeyType: 'event_triggered', appId: 'x', active: false });
    await pause();
    await create(c, { name: 'C', journeyType: 'event_triggered', appId: 'y' });
    const names = async (qs: string) => {
      const res = await t.inject({ method: 'GET', url: `${base(c)}${qs}`, headers: c.auth });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().items.map((j: { name: string }) => j.name);
    };
    expect(await names('')).toEqual(['A', 'B', 'C']);
    expect(await names('?appId=x')).toEqual(['A', 'B']);
    expect(await names('?active=false')).toEqual(['B']);
    expect(await names('?journeyType=event_triggered')).toEqual(['B', 'C']);
    expect(await names('?limit=1&offset=2')).toEqual(['C']);
    for (const qs of ['?journeyType=daily', '?active=maybe', '?limit=0', '?offset=-1']) {
      expect((await t.inject({ method: 'GET', url: `${base(c)}${qs}`, headers: c.auth })).statusCode, qs).toBe(400);
    }
  });

  it('updates and removes', async () => {
    const j = await create(a, { name: 'Old', journeyType: 'scheduled', appId: 'x', data: { a: 1 } });
    const res = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${j.id}`,
      headers: a.auth,
      payload: { name: 'New', active: false, journeyType: 'event_triggered', data: { b: 2 }, appId: null },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ name: 'New', active: false, journeyType: 'event_triggered', data: { b: 2 } });
    expect(res.json().appId).toBeUndefined();
    expect(Date.parse(res.json().updatedAt)).toBeGreaterThanOrEqual(Date.parse(j.updatedAt));
    const del = await t.inject({ method: 'DELETE', url: `${base(a)}/${j.id}`, headers: a.auth });
    expect(del.json()).toEqual({ success: true, id: j.id });
    expect((await t.inject({ method: 'GET', url: `${base(a)}/${j.id}`, headers: a.auth })).statusCode).toBe(404);
    expect((await t.inject({ method: 'DELETE', url: `${base(a)}/${j.id}`, headers: a.auth })).statusCode).toBe(404);
  });

  it('refuses bad input (400), changing nothing', async () => {
    for (const payload of [
      { journeyType: 'scheduled' },
      { name: 'x' },
      { name: '', journeyType: 'scheduled' },
      { name: 'x', journeyType: 'daily' },
      { name: 'x', journeyType: 'scheduled', active: 'yes' },
      { name: 'x', journeyType: 'scheduled', steps: [] },
      { name: 'x', journeyType: 'scheduled', data: [] },
    ]) {
      expect(
        (await t.inject({ method: 'POST', url: base(b), headers: b.auth, payload })).statusCode,
        JSON.stringify(payload),
      ).toBe(400);
    }
    const j = await create(b, { name: 'Keep', journeyType: 'scheduled' });
    for (const payload of [{ name: 5 }, { id: 'x' }, { journeyType: 'x' }]) {
      expect(
        (await t.inject({ method: 'PATCH', url: `${base(b)}/${j.id}`, headers: b.auth, payload })).statusCode,
      ).toBe(400);
    }
    const list = await t.inject({ method: 'GET', url: base(b), headers: b.auth });
    expect(list.json().items.map((x: { name: string }) => x.name)).toEqual(['Keep']);
  });

  it('answers 401 without a credential, with another collection’s key or a user token; 404 across collections', async () => {
    const j = await create(a, { name: 'Private', journeyType: 'scheduled' });
    const calls = [
      { method: 'GET' as const, url: base(a) },
      { method: 'POST' as const, url: base(a), payload: { name: 'x', journeyType: 'scheduled' } },
      { method: 'GET' as const, url: `${base(a)}/${j.id}` },
      { method: 'PATCH' as const, url: `${base(a)}/${j.id}`, payload: { name: 'hacked' } },
      { method: 'DELETE' as const, url: `${base(a)}/${j.id}` },
    ];
    for (const call of calls) {
      for (const headers of [{}, b.auth, a.userAuth]) {
        expect((await t.inject({ ...call, headers })).statusCode, `${call.method} ${call.url}`).toBe(401);
      }
    }
    for (const method of ['GET', 'DELETE'] as const) {
      expect((await t.inject({ method, url: `${base(b)}/${j.id}`, headers: b.auth })).statusCode).toBe(404);
    }
    expect(
      (await t.inject({ method: 'PATCH', url: `${base(b)}/${j.id}`, headers: b.auth, payload: { name: 'x' } }))
        .statusCode,
    ).toBe(404);
    expect((await t.inject({ method: 'GET', url: `${base(a)}/${j.id}`, headers: a.auth })).json().name).toBe('Private');
  });
});
