import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../src/db/index.ts';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { createTestDbBefore } from './helpers/db.ts';

let t: TestApp;
let a: TestCollection;
let b: TestCollection;
let alice: { authorization: string };
let bob: { authorization: string };

const admin = (c: TestCollection) => `/admin/collection/${c.id}/app/catalog/records`;
const pub = (c: TestCollection) => `/public/collection/${c.id}/app/catalog/records`;

beforeAll(async () => {
  t = await createTestApp();
  a = await t.createCollection();
  b = await t.createCollection();
  alice = bearer(await t.userToken(a.id, 'alice', 'contact-alice'));
  bob = bearer(await t.userToken(a.id, 'bob', 'contact-bob'));
});
afterAll(() => t.close());

async function create(headers: Record<string, string>, payload: Record<string, unknown>, base = admin(a)) {
  const res = await t.inject({ method: 'POST', url: base, headers, payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

const refs = async (qs: string, headers: Record<string, string>, base = admin(a)) => {
  const res = await t.inject({ method: 'GET', url: `${base}${qs}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  return res
    .json()
    .data.map((r: { ref: string }) => r.ref)
    .sort();
};

describe('create and read', () => {
  it('creates with every field; status defaults to active; derived fields are set', async () => {
    const r = await create(a.auth, {
      recordType: 'warranty',
      visibility: 'public',
      ref: 'W-1',
      productId: 'prod-1',
      variantId: 'var-1',
      customId: '  ABC 123 ',
      sourceSystem: 'erp',
      contactId: 'contact-alice',
      parentType: 'case',
      parentId: 'case_1',
      startsAt: '2020-01-01T00:00:00.000Z',
      facetRule: { all: [{ facetKey: 'color', anyOf: ['red'] }] },
      data: { months: 24 },
      owner: { serial: 'S1' },
      admin: { cost: 3 },
      metadata: { imported: true },
    });
    expect(r).toMatchObject({
      status: 'active',
      recordType: 'warranty',
      ref: 'W-1',
      scopeType: 'variant',
      scopeId: 'var-1',
      specificity: 30,
      customId: '  ABC 123 ',
      customIdNormalized: 'abc 123',
      startsAt: '2020-01-01T00:00:00.000Z',
      expiresAt: null,
      facetRule: { all: [{ facetKey: 'color', anyOf: ['red'] }] },
      metadata: { imported: true },
      admin: { cost: 3 },
      singletonKey: null,
    });
    expect(r.id).toMatch(/^rec_/);
    const asAlice = await t.inject({ method: 'GET', url: `${pub(a)}/${r.id}`, headers: alice });
    expect(asAlice.json().owner).toEqual({ serial: 'S1' });
    expect(asAlice.json().admin).toBeUndefined();
    const asBob = await t.inject({ method: 'GET', url: `${pub(a)}/${r.id}`, headers: bob });
    expect(asBob.json().owner).toBeUndefined();
    const plain = await create(alice, { data: { x: 1 } }, pub(a));
    expect(plain).toMatchObject({
      scopeType: 'collection',
      scopeId: a.id,
      specificity: 0,
      authorId: 'alice',
      contactId: 'contact-alice',
    });
  });

  it('refuses bad input, duplicate refs, missing and foreign credentials', async () => {
    for (const payload of [
      { startsAt: 'soon' },
      { facetRule: { all: 'x' } },
      { nope: 1 },
      { singletonPer: 'contactId' },
    ]) {
      expect(
        (await t.inject({ method: 'POST', url: admin(a), headers: a.auth, payload })).statusCode,
        JSON.stringify(payload),
      ).toBe(400);
    }
    await create(a.auth, { ref: 'DUP' });
    const dup = await t.inject({ method: 'POST', url: admin(a), headers: a.auth, payload: { ref: 'DUP' } });
    expect(dup.statusCode).toBe(409);
    expect(
      (await t.inject({ method: 'POST', url: pub(a), headers: alice, payload: { contactId: 'x' } })).statusCode,
    ).toBe(401);
    expect((await t.inject({ method: 'POST', url: admin(a), payload: {} })).statusCode).toBe(401);
    expect((await t.inject({ method: 'POST', url: admin(a), headers: b.auth, payload: {} })).statusCode).toBe(401);
    expect((await t.inject({ method: 'GET', url: `${admin(b)}?ref=DUP`, headers: b.auth })).json().data).toHaveLength(
      0,
    );
  });

  it('singletonPer keeps one live record per key: a second create updates it and answers its id', async () => {
    const first = await create(a.auth, { recordType: 'pref', contactId: 'c-s', singletonPer: 'contactId' });
    const again = await create(a.auth, {
      recordType: 'pref',
      contactId: 'c-s',
      singletonPer: 'contactId',
      data: { lang: 'fr' },
    });
    expect(again).toMatchObject({ id: first.id, data: { lang: 'fr' } });
    expect(await refs('?recordType=pref', a.auth)).toHaveLength(1);
  });
});

describe("authors: the caller's own identity", () => {
  it('a user may send their own contactId, authorId and a self-description, as the original’s guide does', async () => {
    const r = await create(
      alice,
      {
        recordType: 'product_registration',
        visibility: 'owner',
        status: 'active',
        productId: 'prod-9',
        contactId: 'contact-alice',
        authorId: 'contact-alice',
        authorType: 'customer',
        data: { registrationNumber: 'REG-1' },
      },
      pub(a),
    );
    expect(r).toMatchObject({ contactId: 'contact-alice', authorId: 'contact-alice', authorType: 'customer' });
    const plain = await create(alice, { recordType: 'note' }, pub(a));
    expect(plain).toMatchObject({ contactId: 'contact-alice', authorId: 'alice', authorType: 'user' });
  });

  it('another contact, another author or a staff author type is refused (401 FORBIDDEN); nothing is written', async () => {
    const list = async () =>
      (await t.inject({ method: 'GET', url: `${admin(a)}?recordType=spoof`, headers: a.auth })).json().pagination.total;
    for (const payload of [
      { contactId: 'contact-bob' },
      { authorId: 'bob' },
      { authorType: 'system' },
      { authorType: 'Admin' },
    ]) {
      const res = await t.inject({
        method: 'POST',
        url: pub(a),
        headers: alice,
        payload: { recordType: 'spoof', ...payload },
      });
      expect(res.statusCode, JSON.stringify(payload)).toBe(401);
      expect(res.json().errorCode).toBe('FORBIDDEN');
    }
    expect(await list()).toBe(0);
    const bobInB = bearer(await t.userToken(b.id, 'bob', 'contact-bob'));
    const foreign = await t.inject({
      method: 'POST',
      url: pub(a),
      headers: bobInB,
      payload: { recordType: 'spoof', contactId: 'contact-bob' },
    });
    expect(foreign.statusCode).toBe(401);
    expect(await list()).toBe(0);
  });

  it('admin writes are authored by admin: creates and upsert-creates; an upsert keeps an existing author', async () => {
    expect((await create(a.auth, { recordType: 'by-admin' })).authorType).toBe('admin');
    expect((await create(a.auth, { recordType: 'by-admin', authorType: 'importer' })).authorType).toBe('importer');
    const up = await t.inject({ method: 'POST', url: `${admin(a)}/upsert`, headers: a.auth, payload: { ref: 'UP-A' } });
    expect(up.json()).toMatchObject({ authorType: 'admin', created: true });
    const users = await create(alice, { ref: 'UP-U', authorType: 'customer' }, pub(a));
    const again = await t.inject({
      method: 'POST',
      url: `${admin(a)}/upsert`,
      headers: a.auth,
      payload: { ref: 'UP-U', data: { checked: true } },
    });
    expect(again.json()).toMatchObject({
      id: users.id,
      created: false,
      authorType: 'customer',
      data: { checked: true },
    });
  });
});

describe("null as the original's SDK sends it (CreateRecordInput, UpsertRecordInput, BulkUpsertItem)", () => {
  /** Every field those types let a client send as null. */
  const NULLS = {
    productId: null,
    variantId: null,
    batchId: null,
    proofId: null,
    customId: null,
    sourceSystem: null,
    startsAt: null,
    expiresAt: null,
    status: null,
    data: null,
    metadata: null,
    facetRule: null,
  };
  const RULE = { all: [{ facetKey: 'color', anyOf: ['red'] }] };
  /** Every field of a record, set. */
  const FULL = {
    recordType: 'nulls',
    productId: 'p1',
    variantId: 'v1',
    batchId: 'b1',
    proofId: 'pr1',
    customId: ' Ext 1 ',
    sourceSystem: 'erp',
    startsAt: '2020-01-01T00:00:00.000Z',
    expiresAt: '2999-01-01T00:00:00.000Z',
    status: 'draft',
    data: { a: 1, b: 2 },
    metadata: { m: 1 },
    facetRule: RULE,
  };

  async function upsert(payload: Record<string, unknown>) {
    const res = await t.inject({ method: 'POST', url: `${admin(a)}/upsert`, headers: a.auth, payload });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }
  async function get(id: string) {
    const res = await t.inject({ method: 'GET', url: `${admin(a)}/${id}`, headers: a.auth });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }
  async function patch(id: string, payload: Record<string, unknown>) {
    const res = await t.inject({ method: 'PATCH', url: `${admin(a)}/${id}`, headers: a.auth, payload });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }
  /** What a client set or the service derived: a record without its identity and times. */
  const settable = (r: Record<string, unknown>) => {
    const { id: _i, ref: _r, createdAt: _c, updatedAt: _u, created: _cr, ...rest } = r;
    return rest;
  };

  it('a create with nulls is the same as one without those fields: the defaults apply', async () => {
    const withNulls = await create(a.auth, { recordType: 'nulls', ...NULLS, scopeType: null, scopeId: null });
    const without = await create(a.auth, { recordType: 'nulls' });
    expect(settable(withNulls)).toEqual(settable(without));
    expect(withNulls).toMatchObject({
      status: 'active',
      data: {},
      metadata: {},
      productId: null,
      facetRule: null,
      customIdNormalized: null,
      scopeType: 'collection',
      scopeId: a.id,
      specificity: 0,
    });
    // A null anchor next to a set one: the set one names the scope.
    expect(await create(a.auth, { recordType: 'nulls', productId: null, variantId: 'v-n' })).toMatchObject({
      productId: null,
      scopeType: 'variant',
      scopeId: 'v-n',
      specificity: 30,
    });
    // An upsert that creates: the same.
    const up = await upsert({ ref: 'NL-new', recordType: 'nulls', ...NULLS });
    expect(up.created).toBe(true);
    expect(settable(up)).toEqual(settable(without));
    // A user's create from a form with empty fields.
    const mine = await create(alice, { recordType: 'nulls', productId: null, status: null, startsAt: null }, pub(a));
    expect(mine).toMatchObject({ status: 'active', productId: null, startsAt: null, contactId: 'contact-alice' });
  });

  it('singletonPer needs its field set: a null is no value (400, nothing written)', async () => {
    const refused = await t.inject({
      method: 'POST',
      url: admin(a),
      headers: a.auth,
      payload: { recordType: 'single-null', singletonPer: 'product', productId: null },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().details).toMatchObject({ fields: ['singletonPer'] });
    expect(await refs('?recordType=single-null', a.auth)).toEqual([]);
    const one = await create(a.auth, {
      recordType: 'single-null',
      singletonPer: 'variant',
      productId: null,
      variantId: 'v1',
    });
    expect(one).toMatchObject({ productId: null, scopeType: 'variant', singletonKey: expect.any(String) });
    const again = await create(a.auth, {
      recordType: 'single-null',
      singletonPer: 'variantId',
      productId: null,
      variantId: 'v1',
    });
    expect(again.id).toBe(one.id);
  });

  it('an upsert that updates: null sets a field back to its default, a field left out is kept', async () => {
    const first = await upsert({ ref: 'NL-1', ...FULL });
    expect(first).toMatchObject({ created: true, scopeType: 'proof', scopeId: 'pr1', specificity: 50 });
    // Only the ref: nothing changes.
    expect(settable(await upsert({ ref: 'NL-1' }))).toEqual(settable(first));
    // The proof and batch cleared: the record is now its variant's; everything else is kept.
    const variant = await upsert({ ref: 'NL-1', proofId: null, batchId: null });
    expect(variant).toMatchObject({ created: false, id: first.id });
    expect(settable(variant)).toEqual({
      ...settable(first),
      proofId: null,
      batchId: null,
      scopeType: 'variant',
      scopeId: 'v1',
      specificity: 30,
    });
    // Without anchors the facet rule names the scope; without it too, the collection.
    expect(await upsert({ ref: 'NL-1', productId: null, variantId: null })).toMatchObject({
      scopeType: 'facet',
      scopeId: null,
      specificity: 10,
      facetRule: RULE,
      status: 'draft',
    });
    const cleared = await upsert({ ref: 'NL-1', ...NULLS });
    expect(cleared).toMatchObject({
      recordType: 'nulls',
      facetRule: null,
      scopeType: 'collection',
      scopeId: a.id,
      specificity: 0,
      customId: null,
      customIdNormalized: null,
      sourceSystem: null,
      startsAt: null,
      expiresAt: null,
      status: 'active',
      data: {},
      metadata: {},
    });
    // It reads as a record upserted with its ref and recordType alone.
    expect(settable(cleared)).toEqual(settable(await upsert({ ref: 'NL-plain', recordType: 'nulls' })));
    // The cleared customId no longer finds it.
    expect(await refs('?customId=ext%201', a.auth)).toEqual([]);
    // A key of a section sent as null is removed, as a PATCH does.
    await upsert({ ref: 'NL-1', data: { x: 1, y: 2 } });
    expect((await upsert({ ref: 'NL-1', data: { y: null, z: 3 } })).data).toEqual({ x: 1, z: 3 });
    // An anchor set again names the scope again.
    expect(await upsert({ ref: 'NL-1', productId: 'p2' })).toMatchObject({
      scopeType: 'product',
      scopeId: 'p2',
      specificity: 20,
      data: { x: 1, z: 3 },
    });
  });

  it('bulk-upsert: the same for each item, in either form, creates and updates in one call', async () => {
    for (const [form, wrap] of [
      ['array', (items: object[]) => items],
      ['records', (items: object[]) => ({ records: items })],
    ] as const) {
      const existing = await upsert({ ref: `NB-${form}-1`, ...FULL, proofId: undefined, batchId: undefined });
      const res = await t.inject({
        method: 'POST',
        url: `${admin(a)}/bulk-upsert`,
        headers: a.auth,
        payload: wrap([
          { ref: `NB-${form}-1`, variantId: null, status: null, data: null, startsAt: null },
          { ref: `NB-${form}-2`, recordType: 'nulls', ...NULLS },
        ]),
      });
      expect(res.statusCode, res.body).toBe(200);
      const { results } = res.json();
      expect(results.map((r: { status: string }) => r.status)).toEqual(['updated', 'created']);
      expect(settable(await get(results[0].id))).toEqual({
        ...settable(existing),
        variantId: null,
        status: 'active',
        data: {},
        startsAt: null,
        scopeType: 'product',
        scopeId: 'p1',
        specificity: 20,
      });
      expect(await get(results[1].id)).toMatchObject({
        status: 'active',
        data: {},
        metadata: {},
        productId: null,
        scopeType: 'collection',
        authorType: 'admin',
      });
    }
  });

  it("an admin's PATCH with a null anchor derives the scope from the anchors left; a null customId clears its normalised form", async () => {
    const r = await create(a.auth, { recordType: 'nulls', productId: 'p1', variantId: 'v1', customId: 'Z 9' });
    expect(r).toMatchObject({ scopeType: 'variant', customIdNormalized: 'z 9' });
    expect(await patch(r.id, { variantId: null, customId: null })).toMatchObject({
      variantId: null,
      scopeType: 'product',
      scopeId: 'p1',
      specificity: 20,
      customId: null,
      customIdNormalized: null,
    });
    expect(await refs('?customId=z%209', a.auth)).toEqual([]);
    expect(await patch(r.id, { productId: null })).toMatchObject({
      scopeType: 'collection',
      scopeId: a.id,
      specificity: 0,
    });
    expect(await patch(r.id, { batchId: 'b2', status: 'archived' })).toMatchObject({
      scopeType: 'batch',
      scopeId: 'b2',
      specificity: 40,
    });
    // A scope the admin sets is kept, with its specificity.
    expect(await patch(r.id, { batchId: null, scopeType: 'product', scopeId: 'p-x' })).toMatchObject({
      batchId: null,
      scopeType: 'product',
      scopeId: 'p-x',
      specificity: 20,
    });
  });

  it('a scopeId sent as null next to a facet rule, on a singleton create that updates, is derived from the rule', async () => {
    // The fuzz test found this: the change both reset scope_id and derived it (a 500).
    const body = { recordType: 'rule-null-scope', facetRule: { all: [] }, scopeId: null, singletonPer: 'collection' };
    const first = await create(a.auth, body);
    const again = await create(a.auth, body);
    expect(again).toMatchObject({ id: first.id, scopeType: 'facet', scopeId: null, specificity: 10 });
  });

  it('concurrent changes of different anchors leave the scope of the anchors that remain', async () => {
    for (let round = 0; round < 5; round++) {
      const ref = `NC-${round}`;
      const r = await upsert({ ref, recordType: 'nulls', productId: 'p', variantId: 'v', batchId: 'b' });
      await Promise.all([
        patch(r.id, { batchId: null }),
        patch(r.id, { variantId: null }),
        upsert({ ref, productId: null }),
      ]);
      expect(await get(r.id)).toMatchObject({
        productId: null,
        variantId: null,
        batchId: null,
        scopeType: 'collection',
        scopeId: a.id,
        specificity: 0,
      });
    }
  });
});

describe('lists', () => {
  it('filters as the original; public callers see only active records in their window', async () => {
    await create(a.auth, {
      ref: 'L-active',
      recordType: 'doc',
      visibility: 'public',
      sourceSystem: 'crm',
      batchId: 'b1',
    });
    await create(a.auth, { ref: 'L-draft', recordType: 'doc', visibility: 'public', status: 'draft' });
    await create(a.auth, {
      ref: 'L-future',
      recordType: 'doc',
      visibility: 'public',
      startsAt: '2999-01-01T00:00:00Z',
    });
    await create(a.auth, {
      ref: 'L-expired',
      recordType: 'doc',
      visibility: 'public',
      expiresAt: '2001-01-01T00:00:00Z',
    });
    expect(await refs('?recordType=doc', a.auth)).toEqual(['L-active', 'L-draft', 'L-expired', 'L-future']);
    expect(await refs('?recordType=doc', bob, pub(a))).toEqual(['L-active']);
    expect(await refs('?recordType=doc&status=draft', bob, pub(a))).toEqual([]);
    expect(await refs('?recordType=doc&includeScheduled=true&includeExpired=true', bob, pub(a))).toEqual([
      'L-active',
      'L-expired',
      'L-future',
    ]);
    expect(await refs('?recordType=doc&at=2999-06-01T00:00:00Z', a.auth)).toEqual(['L-active', 'L-draft', 'L-future']);
    expect(await refs('?recordType=doc&status=in:draft,active', a.auth)).toEqual([
      'L-active',
      'L-draft',
      'L-expired',
      'L-future',
    ]);
    expect(await refs('?refPrefix=L-f', a.auth)).toEqual(['L-future']);
    expect(await refs('?q=expir', a.auth)).toEqual(['L-expired']);
    expect(await refs('?sourceSystem=crm&batchId=b1', a.auth)).toEqual(['L-active']);
    expect(await refs('?recordType=doc&startsAt=notnull', a.auth)).toEqual(['L-future']);
    expect(await refs('?customId=abc%20123', a.auth)).toEqual(['W-1']);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await refs(`?recordType=doc&createdAt=gte:${future}`, a.auth)).toEqual([]);
    expect(await refs(`?recordType=doc&createdAt=lte:${future}&sort=ref:asc&limit=2&offset=1`, a.auth)).toEqual([
      'L-draft',
      'L-expired',
    ]);
    const page = await t.inject({ method: 'GET', url: `${admin(a)}?recordType=doc&limit=2&offset=1`, headers: a.auth });
    expect(page.json().pagination).toEqual({ total: 4, limit: 2, offset: 1, hasMore: true });
    for (const qs of [
      '?at=tomorrow',
      '?status=in:',
      '?updatedAt=gte:2020-13-45',
      '?sort=data:asc',
      '?includeScheduled=maybe',
    ]) {
      expect((await t.inject({ method: 'GET', url: `${admin(a)}${qs}`, headers: a.auth })).statusCode, qs).toBe(400);
    }
  });
});

describe('update, delete, restore', () => {
  it('owner edits data/owner only; admin anything; restore brings a record back', async () => {
    const r = await create(alice, { data: { a: 1 } }, pub(a));
    const ok = await t.inject({
      method: 'PATCH',
      url: `${pub(a)}/${r.id}`,
      headers: alice,
      payload: { data: { b: 2 } },
    });
    expect(ok.json().data).toEqual({ a: 1, b: 2 });
    const bad = await t.inject({
      method: 'PATCH',
      url: `${pub(a)}/${r.id}`,
      headers: alice,
      payload: { status: 'x', metadata: {} },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details.fields).toEqual(['status', 'metadata']);
    const adm = await t.inject({
      method: 'PATCH',
      url: `${admin(a)}/${r.id}`,
      headers: a.auth,
      payload: { proofId: 'proof-9', metadata: { m: 1 }, customId: 'X Y' },
    });
    expect(adm.json()).toMatchObject({
      proofId: 'proof-9',
      scopeType: 'proof',
      specificity: 50,
      customIdNormalized: 'x y',
      metadata: { m: 1 },
    });
    expect((await t.inject({ method: 'DELETE', url: `${pub(a)}/${r.id}`, headers: bob })).statusCode).toBe(401);
    expect((await t.inject({ method: 'GET', url: `${pub(a)}/${r.id}`, headers: bob })).statusCode).toBe(404);
    expect((await t.inject({ method: 'DELETE', url: `${pub(a)}/${r.id}`, headers: alice })).json()).toEqual({
      success: true,
    });
    expect((await t.inject({ method: 'GET', url: `${pub(a)}/${r.id}`, headers: alice })).statusCode).toBe(404);
    expect((await t.inject({ method: 'POST', url: `${pub(a)}/${r.id}/restore`, headers: alice })).statusCode).toBe(401);
    expect((await t.inject({ method: 'POST', url: `${admin(a)}/${r.id}/restore`, headers: b.auth })).statusCode).toBe(
      401,
    );
    expect((await t.inject({ method: 'POST', url: `${admin(b)}/${r.id}/restore`, headers: b.auth })).statusCode).toBe(
      404,
    );
    const restored = await t.inject({ method: 'POST', url: `${admin(a)}/${r.id}/restore`, headers: a.auth });
    expect(restored.statusCode).toBe(200);
    expect(restored.json().deletedAt).toBeNull();
    expect((await t.inject({ method: 'GET', url: `${pub(a)}/${r.id}`, headers: alice })).statusCode).toBe(200);
  });
});

describe('upsert and bulk', () => {
  it('upsert creates then updates by ref, merging sections', async () => {
    const first = await t.inject({
      method: 'POST',
      url: `${admin(a)}/upsert`,
      headers: a.auth,
      payload: { ref: 'U-1', data: { a: 1 }, productId: 'p' },
    });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ created: true, ref: 'U-1', scopeType: 'product' });
    const second = await t.inject({
      method: 'POST',
      url: `${admin(a)}/upsert`,
      headers: a.auth,
      payload: { ref: 'U-1', data: { b: 2 }, status: 'archived' },
    });
    expect(second.json()).toMatchObject({
      created: false,
      id: first.json().id,
      data: { a: 1, b: 2 },
      status: 'archived',
      scopeType: 'product',
    });
    expect(
      (await t.inject({ method: 'POST', url: `${admin(a)}/upsert`, headers: a.auth, payload: { data: {} } }))
        .statusCode,
    ).toBe(400);
    expect(
      (await t.inject({ method: 'POST', url: `${pub(a)}/upsert`, headers: alice, payload: { ref: 'x' } })).statusCode,
    ).toBe(401);
    expect((await t.inject({ method: 'POST', url: `${admin(a)}/upsert`, payload: { ref: 'x' } })).statusCode).toBe(401);
    expect(
      (await t.inject({ method: 'POST', url: `${admin(a)}/upsert`, headers: b.auth, payload: { ref: 'x' } }))
        .statusCode,
    ).toBe(401);
  });

  it('bulk-upsert writes all in one transaction', async () => {
    const items = Array.from({ length: 500 }, (_, i) => ({ ref: `B-${i}`, recordType: 'bulk', data: { i } }));
    const res = await t.inject({ method: 'POST', url: `${admin(a)}/bulk-upsert`, headers: a.auth, payload: items });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ saved: 500, failed: 0 });
    expect(body.results).toHaveLength(500);
    expect(body.results[7]).toEqual({ index: 7, status: 'created', id: expect.any(String), ref: 'B-7', created: true });
    const again = await t.inject({
      method: 'POST',
      url: `${admin(a)}/bulk-upsert`,
      headers: a.auth,
      payload: items.slice(0, 3),
    });
    expect(again.json().results).toEqual(
      [0, 1, 2].map((i) => ({ index: i, status: 'updated', id: body.results[i].id, ref: `B-${i}`, created: false })),
    );
    for (const payload of [[...items, { ref: 'B-500' }], { records: [...items, { ref: 'B-500' }] }]) {
      const tooMany = await t.inject({ method: 'POST', url: `${admin(a)}/bulk-upsert`, headers: a.auth, payload });
      expect(tooMany.statusCode).toBe(400);
    }
    expect(await refs('?ref=B-500&includeDeleted=true', a.auth)).toEqual([]);
  });

  it('bulk-upsert takes the items wrapped as {records}, answered the same', async () => {
    const url = `${admin(a)}/bulk-upsert`;
    await create(a.auth, { ref: 'K-1', recordType: 'wrapped', data: { v: 0 } });
    const res = await t.inject({
      method: 'POST',
      url,
      headers: a.auth,
      payload: {
        records: [
          { ref: 'K-0', recordType: 'wrapped', productId: 'p-w', data: { v: 1 } },
          { ref: 'K-1', data: { w: 1 } },
        ],
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { saved, failed, results } = res.json();
    expect({ saved, failed }).toEqual({ saved: 2, failed: 0 });
    expect(results.map((r: { index: number; status: string; ref: string }) => [r.index, r.status, r.ref])).toEqual([
      [0, 'created', 'K-0'],
      [1, 'updated', 'K-1'],
    ]);
    const k1 = await t.inject({ method: 'GET', url: `${admin(a)}/${results[1].id}`, headers: a.auth });
    expect(k1.json()).toMatchObject({ ref: 'K-1', recordType: 'wrapped', data: { v: 0, w: 1 } });
    // Neither form may carry anything else, nor be empty; none of these writes anything.
    for (const payload of [
      { records: [{ ref: 'K-2' }], extra: true },
      { records: [] },
      { records: { ref: 'K-2' } },
      { items: [{ ref: 'K-2' }] },
      {},
      [],
    ]) {
      const bad = await t.inject({ method: 'POST', url, headers: a.auth, payload });
      expect(bad.statusCode, JSON.stringify(payload)).toBe(400);
    }
    // Admin only, and only with the collection's own key.
    const wrongKey = await t.inject({ method: 'POST', url, headers: b.auth, payload: { records: [{ ref: 'K-2' }] } });
    expect(wrongKey.statusCode).toBe(401);
    const user = await t.inject({
      method: 'POST',
      url: `${pub(a)}/bulk-upsert`,
      headers: alice,
      payload: { records: [{ ref: 'K-2' }] },
    });
    expect(user.statusCode).toBe(401);
    expect(await refs('?refPrefix=K-&includeDeleted=true', a.auth)).toEqual(['K-0', 'K-1']);
  });

  it('a bulk-upsert with one invalid item writes nothing and names the item, in either form', async () => {
    const items = [{ ref: 'N-0' }, { ref: 'N-1' }, { ref: 'N-2', startsAt: 'not a date' }, { ref: 'N-3' }];
    const res = await t.inject({ method: 'POST', url: `${admin(a)}/bulk-upsert`, headers: a.auth, payload: items });
    expect(res.statusCode).toBe(400);
    expect(JSON.stringify(res.json().details)).toContain('body.2.startsAt');
    const wrapped = await t.inject({
      method: 'POST',
      url: `${admin(a)}/bulk-upsert`,
      headers: a.auth,
      payload: { records: items },
    });
    expect(wrapped.statusCode).toBe(400);
    expect(JSON.stringify(wrapped.json().details)).toContain('body.records.2.startsAt');
    // An item the schema accepts but the database refuses (a NUL character in jsonb) rolls back the items before it.
    const late = [{ ref: 'N-0' }, { ref: 'N-1' }, { ref: 'N-2', data: { text: 'a\u0000b' } }];
    for (const payload of [late, { records: late }]) {
      const refused = await t.inject({ method: 'POST', url: `${admin(a)}/bulk-upsert`, headers: a.auth, payload });
      expect(refused.statusCode, refused.body).toBe(400);
      expect(refused.json().details).toMatchObject({ index: 2, ref: 'N-2' });
      expect(refused.json().message).toContain('Item 2');
    }
    const list = await t.inject({
      method: 'GET',
      url: `${admin(a)}?refPrefix=N-&includeDeleted=true`,
      headers: a.auth,
    });
    expect(list.json().data).toHaveLength(0);
  });

  it('bulk-delete soft-deletes by ids and refs', async () => {
    const one = await create(a.auth, { ref: 'D-1' });
    await create(a.auth, { ref: 'D-2' });
    await create(a.auth, { ref: 'D-3' });
    const res = await t.inject({
      method: 'POST',
      url: `${admin(a)}/bulk-delete`,
      headers: a.auth,
      payload: { ids: [one.id], refs: ['D-2', 'missing'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ deleted: 2 });
    expect(await refs('?refPrefix=D-', a.auth)).toEqual(['D-3']);
    expect(
      (await t.inject({ method: 'POST', url: `${admin(a)}/bulk-delete`, headers: a.auth, payload: {} })).statusCode,
    ).toBe(400);
    expect(
      (await t.inject({ method: 'POST', url: `${admin(a)}/bulk-delete`, headers: a.auth, payload: { ids: 'x' } }))
        .statusCode,
    ).toBe(400);
    expect(
      (await t.inject({ method: 'POST', url: `${pub(a)}/bulk-delete`, headers: alice, payload: { refs: ['D-3'] } }))
        .statusCode,
    ).toBe(401);
    expect(
      (await t.inject({ method: 'POST', url: `${admin(a)}/bulk-delete`, headers: b.auth, payload: { refs: ['D-3'] } }))
        .statusCode,
    ).toBe(401);
    const foreign = await t.inject({
      method: 'POST',
      url: `${admin(b)}/bulk-delete`,
      headers: b.auth,
      payload: { refs: ['D-3'] },
    });
    expect(foreign.json()).toEqual({ deleted: 0 });
  });

  it('bulk-delete by ids or refs takes only records of the recordType given', async () => {
    const url = `${admin(a)}/bulk-delete`;
    const t1 = await create(a.auth, { ref: 'T-1', recordType: 'nutrition' });
    await create(a.auth, { ref: 'T-2', recordType: 'warranty' });
    const t3 = await create(a.auth, { ref: 'T-3', recordType: 'warranty' });
    const res = await t.inject({
      method: 'POST',
      url,
      headers: a.auth,
      payload: { ids: [t1.id, t3.id], refs: ['T-2'], recordType: 'warranty' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ deleted: 2 });
    expect(await refs('?refPrefix=T-', a.auth)).toEqual(['T-1']);
    const byRef = await t.inject({ method: 'POST', url, headers: a.auth, payload: { refs: ['T-1'], recordType: 'x' } });
    expect(byRef.json()).toEqual({ deleted: 0 });
    // A type alone names no records.
    const typeOnly = await t.inject({ method: 'POST', url, headers: a.auth, payload: { recordType: 'nutrition' } });
    expect(typeOnly.statusCode).toBe(400);
    expect(await refs('?refPrefix=T-', a.auth)).toEqual(['T-1']);
  });

  describe('bulk-delete by scope', () => {
    const app = (c: TestCollection, appId: string) => `/admin/collection/${c.id}/app/${appId}/records`;
    const scoped = () => app(a, 'scoped');
    const live = async (c: TestCollection, appId: string) => refs('?limit=500', c.auth, app(c, appId));
    const seed = [
      { ref: 'p1', recordType: 'nutrition', productId: 'p1' },
      { ref: 'p1-warranty', recordType: 'warranty', productId: 'p1' },
      { ref: 'p1-v1', recordType: 'nutrition', productId: 'p1', variantId: 'v1' },
      { ref: 'p1-v1-b1', recordType: 'nutrition', productId: 'p1', variantId: 'v1', batchId: 'b1' },
      { ref: 'v1-only', recordType: 'nutrition', variantId: 'v1' },
      { ref: 'p2', recordType: 'nutrition', productId: 'p2' },
      { ref: 'proof', recordType: 'nutrition', productId: 'p1', proofId: 'pr1' },
    ];
    const del = (payload: object, headers: Record<string, string> = a.auth, url = `${scoped()}/bulk-delete`) =>
      t.inject({ method: 'POST', url, headers, payload });

    beforeAll(async () => {
      for (const [c, appId] of [
        [a, 'scoped'],
        [a, 'neighbour'],
        [b, 'scoped'],
      ] as const) {
        const res = await t.inject({
          method: 'POST',
          url: `${app(c, appId)}/bulk-upsert`,
          headers: c.auth,
          payload: seed,
        });
        expect(res.statusCode, res.body).toBe(200);
      }
    });

    it('refuses a bad scope, and a scope with ids or refs, changing nothing', async () => {
      const everything = seed.map((r) => r.ref).sort();
      for (const payload of [
        { scope: {} },
        { scope: { productId: 'p1' }, refs: ['p2'] },
        { scope: { productId: 'p1' }, refs: [] },
        { scope: { productId: 'p1' }, ids: ['rec_x'] },
        { scope: { sku: 'p1' } },
        { scope: { productId: 7 } },
        { scope: { productId: null } },
        { scope: 'p1' },
        { scope: { productId: 'p1' }, recordType: 5 },
      ]) {
        const res = await del(payload);
        expect(res.statusCode, JSON.stringify(payload)).toBe(400);
        expect(res.json().code).toBe(400);
      }
      // Another collection's key, a user, no credential: 401.
      expect((await del({ scope: { productId: 'p1' } }, b.auth)).statusCode).toBe(401);
      expect(
        (await del({ scope: { productId: 'p1' } }, alice, `/public/collection/${a.id}/app/scoped/records/bulk-delete`))
          .statusCode,
      ).toBe(401);
      expect((await del({ scope: { productId: 'p1' } }, {})).statusCode).toBe(401);
      expect(await live(a, 'scoped')).toEqual(everything);
    });

    it('soft-deletes the live records whose anchors equal every field given, of one type if named; others untouched', async () => {
      const narrow = await del({ scope: { productId: 'p1', variantId: 'v1' } });
      expect(narrow.statusCode, narrow.body).toBe(200);
      expect(narrow.json()).toEqual({ deleted: 2 });
      expect(await live(a, 'scoped')).toEqual(['p1', 'p1-warranty', 'p2', 'proof', 'v1-only']);

      const typed = await del({ scope: { productId: 'p1' }, recordType: 'nutrition' });
      expect(typed.json()).toEqual({ deleted: 2 });
      expect(await live(a, 'scoped')).toEqual(['p1-warranty', 'p2', 'v1-only']);

      // Already deleted records are not counted again.
      const rest = await del({ scope: { productId: 'p1' } });
      expect(rest.json()).toEqual({ deleted: 1 });
      expect((await del({ scope: { productId: 'p1' } })).json()).toEqual({ deleted: 0 });
      expect(await live(a, 'scoped')).toEqual(['p2', 'v1-only']);

      // Another app of the collection, and the same app of another collection: untouched.
      const everything = seed.map((r) => r.ref).sort();
      expect(await live(a, 'neighbour')).toEqual(everything);
      expect(await live(b, 'scoped')).toEqual(everything);

      // Soft-deleted: listed with includeDeleted, restorable one by one, revived by an upsert.
      const deleted = await t.inject({
        method: 'GET',
        url: `${scoped()}?includeDeleted=true&refPrefix=p1`,
        headers: a.auth,
      });
      const byRef = new Map(deleted.json().data.map((r: { ref: string }) => [r.ref, r]));
      expect((byRef.get('p1-warranty') as { deletedAt: string | null }).deletedAt).toEqual(expect.any(String));
      const restored = await t.inject({
        method: 'POST',
        url: `${scoped()}/${(byRef.get('p1-warranty') as { id: string }).id}/restore`,
        headers: a.auth,
      });
      expect(restored.statusCode, restored.body).toBe(200);
      const revived = await t.inject({
        method: 'POST',
        url: `${scoped()}/bulk-upsert`,
        headers: a.auth,
        payload: { records: [{ ref: 'p1' }] },
      });
      expect(revived.json().results[0]).toMatchObject({ status: 'updated', ref: 'p1' });
      expect(await live(a, 'scoped')).toEqual(['p1', 'p1-warranty', 'p2', 'v1-only']);
    });
  });

  it('aggregates records by record_type', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `${admin(a)}/aggregate`,
      headers: a.auth,
      payload: { record_type: 'bulk', groupBy: ['record_type'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ count: 500, groups: [{ record_type: 'bulk', count: 500 }] });
    const bad = await t.inject({
      method: 'POST',
      url: `${admin(a)}/aggregate`,
      headers: a.auth,
      payload: { metrics: ['avg_replies'] },
    });
    expect(bad.statusCode).toBe(400);
  });
});

describe('migration 0102 (authorType of existing objects)', () => {
  it('gives threads and records written before it by admins (no author type) the type admin, and keeps the rest', async () => {
    const testDb = await createTestDbBefore('0102');
    try {
      const db = testDb.db;
      await db.query("INSERT INTO collections (id, name) VALUES ('old', 'Old')");
      for (const table of ['app_threads', 'app_records']) {
        await db.query(
          `INSERT INTO ${table} (collection_id, app_id, id, author_type) VALUES
           ('old', 'app', 'by-admin', NULL), ('old', 'app', 'by-user', 'user'), ('old', 'app', 'by-customer', 'customer')`,
        );
      }
      expect(await migrate(db)).toContain('0102_app_author_type.sql');
      for (const table of ['app_threads', 'app_records']) {
        const { rows } = await db.query<{ id: string; author_type: string }>(
          `SELECT id, author_type FROM ${table} ORDER BY id`,
        );
        expect(rows, table).toEqual([
          { id: 'by-admin', author_type: 'admin' },
          { id: 'by-customer', author_type: 'customer' },
          { id: 'by-user', author_type: 'user' },
        ]);
        // An insert that leaves the column out (an upsert of a process not yet upgraded) is an admin's.
        await db.query(`INSERT INTO ${table} (collection_id, app_id, id) VALUES ('old', 'app', 'later')`);
        const later = await db.query<{ author_type: string }>(`SELECT author_type FROM ${table} WHERE id = 'later'`);
        expect(later.rows[0].author_type).toBe('admin');
        await expect(
          db.query(`INSERT INTO ${table} (collection_id, app_id, id, author_type) VALUES ('old', 'app', 'x', NULL)`),
        ).rejects.toThrow();
      }
    } finally {
      await testDb.drop();
    }
  });
});

describe('migration 0103 (the contact in singleton keys)', () => {
  it('adds the contact to the keys of records that have one, and leaves the rest', async () => {
    const testDb = await createTestDbBefore('0103');
    try {
      const db = testDb.db;
      await db.query("INSERT INTO collections (id, name) VALUES ('old', 'Old')");
      await db.query(
        `INSERT INTO app_records (collection_id, app_id, id, contact_id, singleton_key, deleted_at) VALUES
         ('old', 'app', 'person', 'c1', 'reg|productId|p1', NULL),
         ('old', 'app', 'person-deleted', 'c2', 'reg|productId|p1', now()),
         ('old', 'app', 'settings', NULL, 'reg|productId|p2', NULL),
         ('old', 'app', 'plain', 'c1', NULL, NULL),
         -- A key whose own text already ends as the new key of the next row would: kept.
         ('old', 'app', 'odd', NULL, 'x|productId|p|contact:c9', NULL),
         ('old', 'app', 'odd-person', 'c9', 'x|productId|p', NULL)`,
      );
      expect(await migrate(db)).toContain('0103_app_record_singleton_contact.sql');
      const { rows } = await db.query<{ id: string; singleton_key: string | null }>(
        'SELECT id, singleton_key FROM app_records ORDER BY id',
      );
      expect(rows).toEqual([
        { id: 'odd', singleton_key: 'x|productId|p|contact:c9' },
        { id: 'odd-person', singleton_key: 'x|productId|p' },
        { id: 'person', singleton_key: 'reg|productId|p1|contact:c1' },
        { id: 'person-deleted', singleton_key: 'reg|productId|p1|contact:c2' },
        { id: 'plain', singleton_key: null },
        { id: 'settings', singleton_key: 'reg|productId|p2' },
      ]);
    } finally {
      await testDb.drop();
    }
  });

  it('the keys it writes are the ones creates make now (so older singletons are found)', async () => {
    const first = await create(alice, { recordType: 'reg-0103', singletonPer: 'product', productId: 'p1' }, pub(a));
    expect(first.singletonKey).toBe('reg-0103|productId|p1|contact:contact-alice');
    const shared = await create(a.auth, { recordType: 'reg-0103', singletonPer: 'product', productId: 'p1' });
    expect(shared.singletonKey).toBe('reg-0103|productId|p1');
  });
});
