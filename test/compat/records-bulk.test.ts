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
