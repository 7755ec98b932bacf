import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';

let t: TestApp;
let a: TestCollection;
let b: TestCollection;
let alice: { authorization: string };
let bob: { authorization: string };

const admin = (c: TestCollection) => `/admin/collection/${c.id}/app/forum/threads`;
const pub = (c: TestCollection) => `/public/collection/${c.id}/app/forum/threads`;

beforeAll(async () => {
  t = await createTestApp();
  a = await t.createCollection();
  b = await t.createCollection();
  alice = bearer(await t.userToken(a.id, 'alice', 'contact-alice'));
  bob = bearer(await t.userToken(a.id, 'bob', 'contact-bob'));
});
afterAll(() => t.close());

async function create(headers: Record<string, string>, payload: Record<string, unknown>, base = pub(a)) {
  const res = await t.inject({ method: 'POST', url: base, headers, payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('threads', () => {
  it('creates with every field; public author and owner come from the token', async () => {
    const th = await create(alice, {
      visibility: 'public',
      slug: 'hello',
      title: 'Hello',
      body: { text: 'first' },
      tags: ['intro', 'help'],
      parentType: 'case',
      parentId: 'case_x',
      productId: 'p1',
      data: { d: 1 },
      owner: { o: 1 },
      admin: { a: 1 },
    });
    expect(th).toMatchObject({
      visibility: 'public',
      slug: 'hello',
      title: 'Hello',
      status: 'open',
      authorId: 'alice',
      authorType: 'user',
      contactId: 'contact-alice',
      parentType: 'case',
      parentId: 'case_x',
      replyCount: 0,
      lastReplyAt: null,
      body: { text: 'first' },
      replies: [],
      tags: ['intro', 'help'],
      data: { d: 1 },
      owner: { o: 1 },
    });
    expect(th.admin).toBeUndefined();
    expect(th.id).toMatch(/^thr_/);
    const adminView = await t.inject({ method: 'GET', url: `${admin(a)}/${th.id}`, headers: a.auth });
    expect(adminView.json().admin).toEqual({});
  });

  it('refuses bad input, missing and foreign credentials', async () => {
    for (const payload of [{ tags: 'x' }, { title: 5 }, { nope: 1 }, { tags: Array(51).fill('t') }]) {
      expect((await t.inject({ method: 'POST', url: admin(a), headers: a.auth, payload })).statusCode).toBe(400);
    }
    expect(
      (await t.inject({ method: 'POST', url: pub(a), headers: alice, payload: { authorId: 'mallory' } })).statusCode,
    ).toBe(401);
    expect((await t.inject({ method: 'POST', url: pub(a), payload: {} })).statusCode).toBe(401);
    expect((await t.inject({ method: 'POST', url: admin(a), headers: b.auth, payload: {} })).statusCode).toBe(401);
    expect((await t.inject({ method: 'GET', url: admin(a), headers: b.auth })).statusCode).toBe(401);
    expect((await t.inject({ method: 'GET', url: pub(a) })).statusCode).toBe(401);
  });

  it('lists with the original filters and visibility', async () => {
    await create(alice, { visibility: 'public', slug: 'f-1', tags: ['red'], parentType: 'product', parentId: 'p9' });
    await create(alice, { visibility: 'owner', slug: 'f-2', tags: ['blue'] });
    await create(a.auth, { visibility: 'admin', slug: 'f-3', tags: ['red'] }, admin(a));
    const slugs = async (qs: string, headers: Record<string, string>, base = pub(a)) => {
      const res = await t.inject({ method: 'GET', url: `${base}${qs}`, headers });
      expect(res.statusCode, res.body).toBe(200);
      return res
        .json()
        .data.map((x: { slug: string }) => x.slug)
        .filter((s: string) => s?.startsWith('f-'))
        .sort();
    };
    expect(await slugs('', alice)).toEqual(['f-1', 'f-2']);
    expect(await slugs('', bob)).toEqual(['f-1']);
    expect(await slugs('', a.auth, admin(a))).toEqual(['f-1', 'f-2', 'f-3']);
    expect(await slugs('?tag=red', a.auth, admin(a))).toEqual(['f-1', 'f-3']);
    expect(await slugs('?parentType=product&parentId=p9', bob)).toEqual(['f-1']);
    expect(await slugs('?authorId=alice&slug=f-2', alice)).toEqual(['f-2']);
    const sorted = await t.inject({ method: 'GET', url: `${admin(a)}?sort=slug:asc&limit=2`, headers: a.auth });
    expect(sorted.json().pagination).toMatchObject({ limit: 2, offset: 0, hasMore: true });
    for (const qs of [
      '?sort=password:asc',
      '?sort=slug:sideways',
      '?limit=501',
      '?limit=-1',
      '?createdAt=yesterday',
      '?unknown=1',
    ]) {
      const res = await t.inject({ method: 'GET', url: `${admin(a)}${qs}`, headers: a.auth });
      expect(res.statusCode, qs).toBe(400);
    }
  });

  it('owner updates body, tags, data and owner; other fields are a 400', async () => {
    const th = await create(alice, { title: 'T', body: { text: 'a' } });
    const ok = await t.inject({
      method: 'PATCH',
      url: `${pub(a)}/${th.id}`,
      headers: alice,
      payload: { body: { text: 'b' }, tags: ['x'], data: { k: 1 } },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ body: { text: 'b' }, tags: ['x'], data: { k: 1 } });
    const bad = await t.inject({
      method: 'PATCH',
      url: `${pub(a)}/${th.id}`,
      headers: alice,
      payload: { title: 'new', status: 'closed' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details.fields).toEqual(['title', 'status']);
    const adminOk = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/${th.id}`,
      headers: a.auth,
      payload: { title: 'new', status: 'closed' },
    });
    expect(adminOk.json()).toMatchObject({ title: 'new', status: 'closed' });
    expect(
      (await t.inject({ method: 'PATCH', url: `${pub(a)}/${th.id}`, headers: bob, payload: { data: {} } })).statusCode,
    ).toBe(401);
    expect((await t.inject({ method: 'GET', url: `${pub(a)}/${th.id}`, headers: bob })).statusCode).toBe(404);
  });

  it('soft delete hides the thread', async () => {
    const th = await create(alice, { visibility: 'public' });
    expect((await t.inject({ method: 'DELETE', url: `${pub(a)}/${th.id}`, headers: bob })).statusCode).toBe(401);
    const del = await t.inject({ method: 'DELETE', url: `${pub(a)}/${th.id}`, headers: alice });
    expect(del.json()).toEqual({ success: true });
    expect((await t.inject({ method: 'GET', url: `${pub(a)}/${th.id}`, headers: alice })).statusCode).toBe(404);
    expect(
      (await t.inject({ method: 'GET', url: `${admin(a)}/${th.id}`, headers: a.auth })).json().deletedAt,
    ).not.toBeNull();
    expect(
      (await t.inject({ method: 'POST', url: `${pub(a)}/${th.id}/reply`, headers: alice, payload: {} })).statusCode,
    ).toBe(404);
  });
});

describe("authors: the caller's own identity", () => {
  const count = async () =>
    (await t.inject({ method: 'GET', url: `${admin(a)}?includeDeleted=true&limit=1`, headers: a.auth })).json()
      .pagination.total;

  it('a user may name themselves (user or contact id) and describe themselves; defaults are user', async () => {
    const asContact = await create(alice, {
      visibility: 'public',
      authorId: 'contact-alice',
      authorType: 'customer',
      contactId: 'contact-alice',
    });
    expect(asContact).toMatchObject({ authorId: 'contact-alice', authorType: 'customer', contactId: 'contact-alice' });
    const asUser = await create(alice, { authorId: 'alice' });
    expect(asUser).toMatchObject({ authorId: 'alice', authorType: 'user', contactId: 'contact-alice' });
    const stored = await t.inject({ method: 'GET', url: `${admin(a)}/${asContact.id}`, headers: a.auth });
    expect(stored.json()).toMatchObject({ authorId: 'contact-alice', authorType: 'customer' });
  });

  it('staff author types and other people’s ids are refused (401 FORBIDDEN) and nothing is written', async () => {
    const before = await count();
    for (const authorType of ['admin', 'Agent', ' staff ', 'SYSTEM']) {
      const res = await t.inject({ method: 'POST', url: pub(a), headers: alice, payload: { authorType } });
      expect(res.statusCode, authorType).toBe(401);
      expect(res.json()).toMatchObject({ errorCode: 'FORBIDDEN', details: { fields: ['authorType'] } });
    }
    for (const payload of [{ authorId: 'bob' }, { authorId: 'contact-bob' }, { contactId: 'contact-bob' }]) {
      const res = await t.inject({ method: 'POST', url: pub(a), headers: alice, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(401);
      expect(res.json().details.reason).toBe('identity_mismatch');
    }
    const both = await t.inject({
      method: 'POST',
      url: pub(a),
      headers: alice,
      payload: { authorId: 'bob', contactId: 'contact-bob' },
    });
    expect(both.json().details.fields).toEqual(['contactId', 'authorId']);
    expect(await count()).toBe(before);
  });

  it('an admin’s thread is authored by admin unless the admin names an author type', async () => {
    const plain = await create(a.auth, { title: 'by staff' }, admin(a));
    expect(plain).toMatchObject({ authorType: 'admin', authorId: null });
    const named = await create(a.auth, { authorId: 'sarah', authorType: 'support_agent' }, admin(a));
    expect(named).toMatchObject({ authorId: 'sarah', authorType: 'support_agent' });
    // The admin key on the public zone has admin rights: it may name any author.
    const onPublic = await create(a.auth, { authorType: 'agent' });
    expect(onPublic.authorType).toBe('agent');
  });

  it('replies follow the same rule: own ids, self-description kept, staff refused', async () => {
    const th = await create(alice, { visibility: 'public' });
    const url = `${pub(a)}/${th.id}/reply`;
    const ok = await t.inject({
      method: 'POST',
      url,
      headers: bob,
      payload: { authorId: 'contact-bob', authorType: 'customer', text: 'Mild soap works' },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().replies[0]).toMatchObject({
      authorId: 'contact-bob',
      authorType: 'customer',
      text: 'Mild soap works',
    });
    for (const payload of [{ authorType: 'agent' }, { authorId: 'alice' }]) {
      const res = await t.inject({ method: 'POST', url, headers: bob, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(401);
      expect(res.json().errorCode).toBe('FORBIDDEN');
    }
    const adminReply = await t.inject({
      method: 'POST',
      url: `${admin(a)}/${th.id}/reply`,
      headers: a.auth,
      payload: { authorId: 'user_expert_sarah', authorType: 'brand_expert', text: 'Use the kit' },
    });
    expect(adminReply.json().replies[1]).toMatchObject({ authorId: 'user_expert_sarah', authorType: 'brand_expert' });
    const stored = await t.inject({ method: 'GET', url: `${admin(a)}/${th.id}`, headers: a.auth });
    expect(stored.json().replyCount).toBe(2);
  });

  it('a token or key of another collection cannot create or reply here', async () => {
    const th = await create(alice, { visibility: 'public' });
    const bobInB = bearer(await t.userToken(b.id, 'bob', 'contact-bob'));
    const before = await count();
    const created = await t.inject({
      method: 'POST',
      url: pub(a),
      headers: bobInB,
      payload: { authorId: 'contact-bob', authorType: 'customer' },
    });
    expect(created.statusCode).toBe(401);
    for (const [url, headers] of [
      [`${pub(a)}/${th.id}/reply`, bobInB],
      [`${admin(a)}/${th.id}/reply`, b.auth],
    ] as const) {
      const res = await t.inject({ method: 'POST', url, headers, payload: { authorType: 'customer', text: 'x' } });
      expect(res.statusCode).toBe(401);
    }
    expect(await count()).toBe(before);
    const stored = await t.inject({ method: 'GET', url: `${admin(a)}/${th.id}`, headers: a.auth });
    expect(stored.json().replyCount).toBe(0);
  });
});

describe('replies', () => {
  it('appends {at, authorId, authorType, ...extra}; users cannot speak for others', async () => {
    const th = await create(alice, { visibility: 'public' });
    const r = await t.inject({
      method: 'POST',
      url: `${pub(a)}/${th.id}/reply`,
      headers: bob,
      payload: { text: 'hi', at: 'fake' },
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().replyCount).toBe(1);
    expect(r.json().replies[0]).toMatchObject({ authorId: 'bob', authorType: 'user', text: 'hi' });
    expect(r.json().replies[0].at).not.toBe('fake');
    expect(r.json().lastReplyAt).toBe(r.json().replies[0].at);
    const spoof = await t.inject({
      method: 'POST',
      url: `${pub(a)}/${th.id}/reply`,
      headers: bob,
      payload: { authorId: 'alice' },
    });
    expect(spoof.statusCode).toBe(401);
    expect(spoof.json()).toMatchObject({ errorCode: 'FORBIDDEN', details: { fields: ['authorId'] } });
    const asAdmin = await t.inject({
      method: 'POST',
      url: `${admin(a)}/${th.id}/reply`,
      headers: a.auth,
      payload: { authorId: 'agent-7', authorType: 'agent', text: 'hello' },
    });
    expect(asAdmin.json().replies[1]).toMatchObject({ authorId: 'agent-7', authorType: 'agent' });
    const hidden = await create(alice, { visibility: 'owner' });
    expect(
      (await t.inject({ method: 'POST', url: `${pub(a)}/${hidden.id}/reply`, headers: bob, payload: {} })).statusCode,
    ).toBe(401);
    expect((await t.inject({ method: 'POST', url: `${pub(a)}/${hidden.id}/reply`, payload: {} })).statusCode).toBe(401);
    expect(
      (await t.inject({ method: 'POST', url: `${admin(b)}/${hidden.id}/reply`, headers: b.auth, payload: {} }))
        .statusCode,
    ).toBe(404);
    expect(
      (await t.inject({ method: 'POST', url: `${pub(a)}/${hidden.id}/reply`, headers: alice, payload: [] })).statusCode,
    ).toBe(400);
  });

  it('50 concurrent replies give replyCount 50 and 50 stored replies', async () => {
    const th = await create(alice, { visibility: 'public' });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        t.inject({ method: 'POST', url: `${pub(a)}/${th.id}/reply`, headers: i % 2 ? alice : bob, payload: { n: i } }),
      ),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(50).fill(200));
    const stored = (await t.inject({ method: 'GET', url: `${admin(a)}/${th.id}`, headers: a.auth })).json();
    expect(stored.replyCount).toBe(50);
    // The thread answers its latest 20; all 50 are on the replies route, each once.
    expect(stored.replies).toHaveLength(20);
    const page = (
      await t.inject({ method: 'GET', url: `${admin(a)}/${th.id}/replies?limit=200`, headers: a.auth })
    ).json();
    expect(page.pagination).toEqual({ total: 50, limit: 200, offset: 0, hasMore: false });
    expect(new Set(page.data.map((r: { n: number }) => r.n)).size).toBe(50);
    expect(page.data.slice(30)).toEqual(stored.replies);
  });

  it('a thread full of replies answers 409 (APP_THREAD_MAX_REPLIES)', async () => {
    // The limit comes from config; a service with a limit of 2 on the same database shows it.
    const { AppObjectServices, appObjectsSettings } = await import('../src/modules/app-objects/index.ts');
    const small = new AppObjectServices(t.testDb.db, appObjectsSettings({ APP_THREAD_MAX_REPLIES: '2' }));
    const caller = { role: 'admin', actorId: 'k' } as const;
    const th = await small.threads.create(a.id, 'forum', caller, {});
    await small.threads.reply(a.id, 'forum', th.id as string, caller, {});
    await small.threads.reply(a.id, 'forum', th.id as string, caller, {});
    await expect(small.threads.reply(a.id, 'forum', th.id as string, caller, {})).rejects.toMatchObject({
      statusCode: 409,
      errorCode: 'CONFLICT',
    });
    const stored = await t.inject({ method: 'GET', url: `${admin(a)}/${th.id}`, headers: a.auth });
    expect(stored.json().replyCount).toBe(2);
  });
});

describe('aggregate', () => {
  it('counts threads with reply metrics, groups and time series; unknown names are a 400', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `${admin(a)}/aggregate`,
      headers: a.auth,
      payload: {
        groupBy: ['status'],
        metrics: ['count', 'reply_count'],
        timeSeriesField: 'created_at',
        timeSeriesInterval: 'day',
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.count).toBeGreaterThan(0);
    expect(body.total_replies).toBeGreaterThanOrEqual(50);
    expect(body.groups.reduce((n: number, g: { count: number }) => n + g.count, 0)).toBe(body.count);
    expect(body.timeSeries[0].bucket).toBe(new Date().toISOString().slice(0, 10));
    expect(body.timeSeries[0].start).toBe(`${body.timeSeries[0].bucket}T00:00:00.000Z`);
    for (const payload of [
      { groupBy: ['password'] },
      { metrics: ['sum(1)'] },
      { timeSeriesField: 'x' },
      { filters: { nope: 1 } },
      { timeSeriesInterval: 'decade' },
    ]) {
      const bad = await t.inject({ method: 'POST', url: `${admin(a)}/aggregate`, headers: a.auth, payload });
      expect(bad.statusCode, JSON.stringify(payload)).toBe(400);
    }
    const asBob = await t.inject({ method: 'POST', url: `${pub(a)}/aggregate`, headers: bob, payload: {} });
    expect(asBob.statusCode).toBe(200);
    expect(asBob.json().count).toBeLessThan(body.count);
    expect(
      (await t.inject({ method: 'POST', url: `${admin(a)}/aggregate`, headers: b.auth, payload: {} })).statusCode,
    ).toBe(401);
    expect((await t.inject({ method: 'POST', url: `${pub(a)}/aggregate`, payload: {} })).statusCode).toBe(401);
  });
});
