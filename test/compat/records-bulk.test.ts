/**
 * Records' bulk calls as the original's SDK makes them (under BASE_PATH=/api/v1, the admin key
 * as X-API-Key): `bulkUpsert` posts `{records: [...]}` and reads `{saved, failed, results}`
 * with one `{index, status, id, ref, created}` per item; `bulkDelete` posts refs mode
 * `{refs, recordType?}` or scope mode `{scope: {productId?, variantId?, batchId?, proofId?},
 * recordType?}` and reads `{deleted}`. The bodies are the guide's own examples. What the
 * guide says of soft deletes holds after either mode: deleted records are listed with
 * `includeDeleted`, restored one by one, and revived by a bulk upsert of their ref.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';

const BASE = '/api/v1';
let t: TestApp;
let c: TestCollection;
let adminKey: { 'x-api-key': string };

const records = () => `${BASE}/admin/collection/${c.id}/app/nutrition-app/records`;

beforeAll(async () => {
  t = await createTestApp({ BASE_PATH: BASE });
  c = await t.createCollection();
  adminKey = { 'x-api-key': c.key };
});
afterAll(() => t.close());

async function post(path: string, payload: object) {
  const res = await t.inject({ method: 'POST', url: `${records()}${path}`, headers: adminKey, payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function listed(query: string) {
  const res = await t.inject({ method: 'GET', url: `${records()}?${query}`, headers: adminKey });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as { id: string; ref: string; deletedAt: string | null }[];
}

/** The guide's two items, and a third under the same product for scope mode. */
const guideItems = [
  { ref: 'product:prod_abc', recordType: 'nutrition', productId: 'prod_abc', data: { calories: 250 } },
  { ref: 'product:prod_xyz', recordType: 'nutrition', productId: 'prod_xyz', data: { calories: 180 } },
];

describe("records' bulk calls as the original's SDK sends them", () => {
  it('bulkUpsert: {records} in, {saved, failed, results[]} with a status per item out', async () => {
    const result = await post('/bulk-upsert', { records: guideItems });
    expect(Object.keys(result).sort()).toEqual(['failed', 'results', 'saved']);
    expect(result).toMatchObject({ saved: 2, failed: 0 });
    expect(result.results).toEqual([
      { index: 0, status: 'created', id: expect.any(String), ref: 'product:prod_abc', created: true },
      { index: 1, status: 'created', id: expect.any(String), ref: 'product:prod_xyz', created: true },
    ]);

    // Again, with one new item: the existing one is updated (same id), the new one created.
    const again = await post('/bulk-upsert', {
      records: [
        { ref: 'product:prod_abc', recordType: 'nutrition', productId: 'prod_abc', data: { calories: 260 } },
        { ref: 'variant:prod_abc:v1', recordType: 'nutrition', productId: 'prod_abc', variantId: 'v1', data: {} },
        { ref: 'product:prod_abc:allergens', recordType: 'allergens', productId: 'prod_abc', data: {} },
      ],
    });
    expect(again).toMatchObject({ saved: 3, failed: 0 });
    expect(again.results.map((r: { status: string; created: boolean }) => [r.status, r.created])).toEqual([
      ['updated', false],
      ['created', true],
      ['created', true],
    ]);
    expect(again.results[0].id).toBe(result.results[0].id);
    const [abc] = await listed('ref=product:prod_abc');
    expect(abc).toMatchObject({ data: { calories: 260 } });
  });

  it('bulkDelete, refs mode: {refs, recordType} deletes those refs of that type', async () => {
    const result = await post('/bulk-delete', {
      refs: ['product:prod_abc', 'product:prod_xyz', 'product:prod_abc:allergens'],
      recordType: 'nutrition',
    });
    expect(result).toEqual({ deleted: 2 });
    expect((await listed('limit=50')).map((r) => r.ref).sort()).toEqual([
      'product:prod_abc:allergens',
      'variant:prod_abc:v1',
    ]);
  });

  it('bulkDelete, scope mode: {scope: {productId}} deletes every live record under the product', async () => {
    const result = await post('/bulk-delete', { scope: { productId: 'prod_abc' } });
    expect(result).toEqual({ deleted: 2 });
    expect(await listed('limit=50')).toEqual([]);
  });

  it('deleted records are listed with includeDeleted, restored by id, and revived by bulkUpsert', async () => {
    const all = await listed('includeDeleted=true&limit=50');
    expect(all).toHaveLength(4);
    for (const r of all) expect(typeof r.deletedAt).toBe('string');
    const variant = all.find((r) => r.ref === 'variant:prod_abc:v1');
    const restored = await post(`/${variant?.id}/restore`, {});
    expect(restored).toMatchObject({ ref: 'variant:prod_abc:v1', deletedAt: null });
    const revived = await post('/bulk-upsert', { records: [guideItems[1]] });
    expect(revived.results).toEqual([
      { index: 0, status: 'updated', id: expect.any(String), ref: 'product:prod_xyz', created: false },
    ]);
    expect((await listed('limit=50')).map((r) => r.ref).sort()).toEqual(['product:prod_xyz', 'variant:prod_abc:v1']);
  });

  it('refs and scope together, or an empty scope, are refused (400) and delete nothing', async () => {
    for (const payload of [{ refs: ['product:prod_xyz'], scope: { productId: 'prod_xyz' } }, { scope: {} }]) {
      const res = await t.inject({ method: 'POST', url: `${records()}/bulk-delete`, headers: adminKey, payload });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ code: 400, errorCode: 'BAD_REQUEST', details: { fields: ['scope'] } });
    }
    expect((await listed('limit=50')).map((r) => r.ref).sort()).toEqual(['product:prod_xyz', 'variant:prod_abc:v1']);
  });
});

/**
 * The SDK types most fields of `CreateRecordInput`, `UpsertRecordInput` and `BulkUpsertItem`
 * as `T | null`; a form with an empty field or a sync job with a missing column sends null.
 * On a create null is the default; on an upsert that updates, null clears the field and a field
 * left out is kept.
 */
describe("records' creates and upserts with the nulls the SDK's types allow", () => {
  const forms = () => `${BASE}/admin/collection/${c.id}/app/forms-app/records`;
  async function send(path: string, payload: object) {
    const res = await t.inject({ method: 'POST', url: `${forms()}${path}`, headers: adminKey, payload });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  it('records.create(…, {productId: null, …}, true): the defaults, as if the fields were left out', async () => {
    const created = await send('', {
      recordType: 'nutrition',
      productId: null,
      variantId: null,
      batchId: null,
      proofId: null,
      customId: null,
      sourceSystem: null,
      startsAt: null,
      expiresAt: null,
      scopeType: null,
      scopeId: null,
      facetRule: null,
      data: { calories: 100 },
    });
    expect(created).toMatchObject({
      recordType: 'nutrition',
      status: 'active',
      productId: null,
      facetRule: null,
      scopeType: 'collection',
      scopeId: c.id,
      specificity: 0,
      data: { calories: 100 },
      metadata: {},
    });
  });

  it('records.upsert: a second run with nulls clears those fields and keeps the ones left out', async () => {
    const first = await send('/upsert', {
      ref: 'pim:SKU-1',
      recordType: 'nutrition',
      productId: 'prod_null',
      variantId: 'v-null',
      customId: 'SKU 1',
      sourceSystem: 'pim',
      expiresAt: '2999-01-01',
      status: 'draft',
      data: { calories: 1 },
      metadata: { batch: 7 },
    });
    expect(first).toMatchObject({ created: true, scopeType: 'variant', specificity: 30, status: 'draft' });
    const second = await send('/upsert', {
      ref: 'pim:SKU-1',
      recordType: 'nutrition',
      productId: 'prod_null',
      variantId: null,
      batchId: null,
      proofId: null,
      startsAt: null,
      expiresAt: null,
      status: null,
      metadata: null,
      facetRule: null,
      data: { calories: 2 },
    });
    expect(second).toMatchObject({
      created: false,
      id: first.id,
      variantId: null,
      expiresAt: null,
      scopeType: 'product',
      scopeId: 'prod_null',
      specificity: 20,
      status: 'active',
      metadata: {},
      data: { calories: 2 },
      // Left out: kept.
      customId: 'SKU 1',
      sourceSystem: 'pim',
    });
  });

  it('records.bulkUpsert({records}) with nulls: per item, created or updated', async () => {
    const result = await send('/bulk-upsert', {
      records: [
        { ref: 'pim:SKU-1', customId: null, sourceSystem: null, data: null },
        { ref: 'pim:SKU-2', recordType: 'nutrition', productId: null, status: null, data: null, metadata: null },
      ],
    });
    expect(result).toMatchObject({ saved: 2, failed: 0 });
    expect(result.results.map((r: { status: string }) => r.status)).toEqual(['updated', 'created']);
    const listed = await t.inject({ method: 'GET', url: `${forms()}?refPrefix=pim:&sort=ref:asc`, headers: adminKey });
    expect(listed.json().data).toMatchObject([
      { ref: 'pim:SKU-1', customId: null, sourceSystem: null, data: {}, productId: 'prod_null', status: 'active' },
      { ref: 'pim:SKU-2', productId: null, status: 'active', data: {}, metadata: {}, scopeType: 'collection' },
    ]);
  });
});
