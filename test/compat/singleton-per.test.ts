/**
 * `singletonPer` as the original's SDK spells it (`'collection' | 'product' | 'variant' |
 * 'batch' | 'proof'`) is accepted next to our field names, and both spellings mean the same:
 * a singleton per product made with one is refused when made again with the other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';

let t: TestApp;
let c: TestCollection;
const records = () => `/admin/collection/${c.id}/app/catalog/records`;

beforeAll(async () => {
  t = await createTestApp();
  c = await t.createCollection();
});
afterAll(() => t.close());

const create = (payload: Record<string, unknown>) =>
  t.inject({ method: 'POST', url: records(), headers: c.auth, payload });

describe('singletonPer spellings', () => {
  it.each([
    ['product', { productId: 'p1' }],
    ['variant', { productId: 'p1', variantId: 'v1' }],
    ['batch', { productId: 'p1', batchId: 'b1' }],
    ['proof', { productId: 'p1', proofId: 'pr1' }],
    ['collection', {}],
  ])("the SDK's %s: created once, refused the second time (409)", async (per, ids) => {
    const body = { recordType: `settings-${per}`, singletonPer: per, ...ids };
    const first = await create(body);
    expect(first.statusCode, first.body).toBe(200);
    const again = await create(body);
    expect(again.statusCode, again.body).toBe(409);
  });

  it('product and productId are one key: a singleton made with one is refused with the other', async () => {
    const first = await create({ recordType: 'prefs', singletonPer: 'product', productId: 'p9' });
    expect(first.statusCode, first.body).toBe(200);
    const other = await create({ recordType: 'prefs', singletonPer: 'productId', productId: 'p9' });
    expect(other.statusCode, other.body).toBe(409);
    const elsewhere = await create({ recordType: 'prefs', singletonPer: 'productId', productId: 'p10' });
    expect(elsewhere.statusCode, elsewhere.body).toBe(200);
  });

  it('the field it names must be set (400), and an unknown spelling is refused (400)', async () => {
    const missing = await create({ recordType: 'x', singletonPer: 'variant' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().message).toContain('variantId');
    const unknown = await create({ recordType: 'x', singletonPer: 'products' });
    expect(unknown.statusCode).toBe(400);
  });
});
