/**
 * `singletonPer` as clients of the original use it: "pass `singletonPer` on creation and the
 * server will upsert instead … If a record with the same key already exists the server updates
 * it in place (clearing `deletedAt` if it was soft-deleted) and returns the existing `id`";
 * calling `create` twice is idempotent. Both spellings of a field (`product`, `productId`) are
 * one key; a person's singleton is one per person (the guide's key: appId + recordType +
 * contactId + productId), and a user's create never changes someone else's record. Requests
 * as the SDK sends them: BASE_PATH=/api/v1, the admin key as X-API-Key, a user token as Bearer.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';

const BASE = '/api/v1';
let t: TestApp;
let c: TestCollection;
let other: TestCollection;
let adminKey: { 'x-api-key': string };
/** The guide's `user`: a contact id that differs from the token's user id. */
const user = { userId: 'u-1', contactId: 'contact-1' };
let userAuth: { authorization: string };
let otherUserAuth: { authorization: string };

const records = (zone: 'admin' | 'public', col = c) => `${BASE}/${zone}/collection/${col.id}/app/catalog/records`;

beforeAll(async () => {
  t = await createTestApp({ BASE_PATH: BASE });
  c = await t.createCollection();
  other = await t.createCollection();
  adminKey = { 'x-api-key': c.key };
  userAuth = bearer(await t.userToken(c.id, user.userId, user.contactId));
  otherUserAuth = bearer(await t.userToken(c.id, 'u-2', 'contact-2'));
});
afterAll(() => t.close());

type Headers = Record<string, string>;
const post = (url: string, headers: Headers, payload: object) => t.inject({ method: 'POST', url, headers, payload });
const createAs = (headers: Headers, payload: Record<string, unknown>, zone: 'admin' | 'public' = 'admin') =>
  post(records(zone), headers, payload);

async function ok(headers: Headers, payload: Record<string, unknown>, zone: 'admin' | 'public' = 'admin') {
  const res = await createAs(headers, payload, zone);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** Every record of a type, deleted ones included, as stored. */
async function stored(recordType: string) {
  const res = await t.inject({
    method: 'GET',
    url: `${records('admin')}?recordType=${recordType}&includeDeleted=true&limit=500`,
    headers: adminKey,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as Record<string, unknown>[];
}
const live = async (recordType: string) => (await stored(recordType)).filter((r) => r.deletedAt === null);

describe('a create with singletonPer finds or updates (the guide: "calling create twice should be idempotent")', () => {
  it.each([
    ['product', { productId: 'p1' }],
    ['variant', { productId: 'p1', variantId: 'v1' }],
    ['batch', { productId: 'p1', batchId: 'b1' }],
    ['proof', { productId: 'p1', proofId: 'pr1' }],
    ['collection', {}],
  ])("the SDK's %s: the second create answers 200 with the same id and updates it in place", async (per, ids) => {
    const recordType = `settings-${per}`;
    const first = await ok(adminKey, { recordType, singletonPer: per, ...ids, data: { a: 1, keep: true } });
    expect(first.singletonKey).toEqual(expect.any(String));
    const again = await ok(adminKey, { recordType, singletonPer: per, ...ids, data: { a: 2, b: 3 } });
    expect(again.id).toBe(first.id);
    // Merged by top-level key, as an upsert by ref merges.
    expect(again.data).toEqual({ a: 2, b: 3, keep: true });
    expect(again.createdAt).toBe(first.createdAt);
    expect(again.singletonKey).toBe(first.singletonKey);
    expect(await live(recordType)).toHaveLength(1);
  });

  it('product and productId are one key; another product is another record', async () => {
    const first = await ok(adminKey, { recordType: 'prefs', singletonPer: 'product', productId: 'p9' });
    const other = await ok(adminKey, { recordType: 'prefs', singletonPer: 'productId', productId: 'p9' });
    expect(other.id).toBe(first.id);
    const elsewhere = await ok(adminKey, { recordType: 'prefs', singletonPer: 'productId', productId: 'p10' });
    expect(elsewhere.id).not.toBe(first.id);
    expect(await live('prefs')).toHaveLength(2);
  });

  it("an admin's update sets the fields given, resets those sent as null, keeps the rest and the author", async () => {
    const first = await ok(adminKey, {
      recordType: 'nutrition-label',
      singletonPer: 'product',
      productId: 'p1',
      variantId: 'v1',
      status: 'draft',
      sourceSystem: 'erp',
      authorId: 'staff-1',
      admin: { cost: 3 },
      metadata: { m: 1 },
    });
    expect(first).toMatchObject({ scopeType: 'variant', authorId: 'staff-1' });
    const again = await ok(adminKey, {
      recordType: 'nutrition-label',
      singletonPer: 'product',
      productId: 'p1',
      variantId: null,
      status: 'active',
      admin: { reviewed: true },
    });
    expect(again).toMatchObject({
      id: first.id,
      status: 'active',
      variantId: null,
      // The scope is derived again from the anchors the record keeps.
      scopeType: 'product',
      scopeId: 'p1',
      specificity: 20,
      sourceSystem: 'erp',
      authorId: 'staff-1',
      authorType: 'admin',
      admin: { cost: 3, reviewed: true },
      metadata: { m: 1 },
    });
  });

  it('a scopeId given is kept by the update, as by the create', async () => {
    const body = { recordType: 'scoped', singletonPer: 'product', productId: 'p1', scopeId: 'shelf-1' };
    const first = await ok(adminKey, body);
    expect(first).toMatchObject({ scopeType: 'product', scopeId: 'shelf-1' });
    const again = await ok(adminKey, body);
    expect(again).toMatchObject({ id: first.id, scopeType: 'product', scopeId: 'shelf-1' });
  });

  it('a soft-deleted singleton is revived with its id (deletedAt cleared); of several, the latest deleted', async () => {
    const first = await ok(adminKey, { recordType: 'card', singletonPer: 'product', productId: 'p1', data: { n: 1 } });
    const del = await t.inject({ method: 'DELETE', url: `${records('admin')}/${first.id}`, headers: adminKey });
    expect(del.statusCode).toBe(200);
    const revived = await ok(adminKey, {
      recordType: 'card',
      singletonPer: 'product',
      productId: 'p1',
      data: { m: 2 },
    });
    expect(revived).toMatchObject({ id: first.id, deletedAt: null, data: { n: 1, m: 2 } });
    expect(await stored('card')).toHaveLength(1);

    // Two deleted records of one contact's key: a user's create never revives (see below), so
    // the user's second create after deleting makes a second record.
    const older = await ok(userAuth, { recordType: 'loyalty', singletonPer: 'product', productId: 'p1' }, 'public');
    expect(
      (await t.inject({ method: 'DELETE', url: `${records('public')}/${older.id}`, headers: userAuth })).statusCode,
    ).toBe(200);
    const newer = await ok(userAuth, { recordType: 'loyalty', singletonPer: 'product', productId: 'p1' }, 'public');
    expect(newer.id).not.toBe(older.id);
    expect(
      (await t.inject({ method: 'DELETE', url: `${records('public')}/${newer.id}`, headers: userAuth })).statusCode,
    ).toBe(200);
    const back = await ok(adminKey, {
      recordType: 'loyalty',
      singletonPer: 'product',
      productId: 'p1',
      contactId: user.contactId,
    });
    expect(back).toMatchObject({ id: newer.id, deletedAt: null });
    const all = await stored('loyalty');
    expect(all.find((r) => r.id === older.id)?.deletedAt).not.toBeNull();

    // Restoring the older one while the newer holds the key stays a 409, and changes nothing.
    const restore = await post(`${records('admin')}/${older.id}/restore`, adminKey, {});
    expect(restore.statusCode, restore.body).toBe(409);
    expect((await live('loyalty')).map((r) => r.id)).toEqual([newer.id]);
  });
});

describe("a person's singleton: one per contact, and only the caller's own", () => {
  /** The guide's call, word for word but for the values. */
  const registration = (registeredAt: string) => ({
    recordType: 'product_registration',
    visibility: 'owner',
    contactId: user.contactId,
    productId: 'prod-1',
    singletonPer: 'product', // one per (appId + recordType + contactId + productId)
    data: { registeredAt },
  });

  it("the guide's product registration, twice: one record, the existing id, data updated", async () => {
    const first = await ok(userAuth, registration('2026-01-01T00:00:00.000Z'), 'public');
    expect(first).toMatchObject({ contactId: user.contactId, singletonKey: expect.any(String), deletedAt: null });
    const again = await ok(userAuth, registration('2026-02-01T00:00:00.000Z'), 'public');
    expect(again.id).toBe(first.id);
    expect(again.data).toEqual({ registeredAt: '2026-02-01T00:00:00.000Z' });
    expect(await live('product_registration')).toHaveLength(1);
  });

  it("another customer's registration of the same product is their own record; the first is untouched", async () => {
    const mine = await ok(userAuth, registration('2026-03-01T00:00:00.000Z'), 'public');
    const theirs = await ok(
      otherUserAuth,
      { ...registration('2026-03-02T00:00:00.000Z'), contactId: 'contact-2' },
      'public',
    );
    expect(theirs.id).not.toBe(mine.id);
    expect(theirs.contactId).toBe('contact-2');
    const after = await t.inject({ method: 'GET', url: `${records('public')}/${mine.id}`, headers: userAuth });
    expect(after.json().data).toEqual({ registeredAt: '2026-03-01T00:00:00.000Z' });
    // Naming the first customer's contact is not allowed at all (401), and changes nothing.
    const foreign = await createAs(otherUserAuth, registration('2026-03-03T00:00:00.000Z'), 'public');
    expect(foreign.statusCode).toBe(401);
    const still = await t.inject({ method: 'GET', url: `${records('public')}/${mine.id}`, headers: userAuth });
    expect(still.json().data).toEqual({ registeredAt: '2026-03-01T00:00:00.000Z' });
  });

  it('an admin singleton without a contact is not a user’s: the user gets their own record', async () => {
    const shared = await ok(adminKey, { recordType: 'warranty_terms', singletonPer: 'product', productId: 'prod-1' });
    const mine = await ok(
      userAuth,
      { recordType: 'warranty_terms', singletonPer: 'product', productId: 'prod-1', data: { x: 1 } },
      'public',
    );
    expect(mine.id).not.toBe(shared.id);
    const adminView = (await live('warranty_terms')).find((r) => r.id === shared.id);
    expect(adminView?.data).toEqual({});
  });

  it("a user's update changes data and owner only; status, visibility and times stay as stored", async () => {
    const made = await ok(adminKey, {
      recordType: 'membership',
      singletonPer: 'product',
      productId: 'prod-1',
      contactId: user.contactId,
      visibility: 'owner',
      status: 'suspended',
      expiresAt: '2030-01-01T00:00:00.000Z',
      data: { tier: 'gold' },
      admin: { note: 'x' },
    });
    const mine = await ok(
      userAuth,
      {
        recordType: 'membership',
        singletonPer: 'product',
        productId: 'prod-1',
        visibility: 'public',
        status: 'active',
        expiresAt: '2099-01-01T00:00:00.000Z',
        data: { nickname: 'me' },
        owner: { phone: '555' },
      },
      'public',
    );
    expect(mine).toMatchObject({
      id: made.id,
      status: 'suspended',
      visibility: 'owner',
      expiresAt: '2030-01-01T00:00:00.000Z',
      data: { tier: 'gold', nickname: 'me' },
      owner: { phone: '555' },
    });
    expect(mine.admin).toBeUndefined();
    const [adminView] = await live('membership');
    expect(adminView.admin).toEqual({ note: 'x' });
  });

  it('an admin-only record holding the key is not the user’s to change: 409, nothing written', async () => {
    const hidden = await ok(adminKey, {
      recordType: 'fraud_flag',
      singletonPer: 'product',
      productId: 'prod-1',
      contactId: user.contactId,
      visibility: 'admin',
      data: { flagged: true },
    });
    const res = await createAs(
      userAuth,
      { recordType: 'fraud_flag', singletonPer: 'product', productId: 'prod-1', data: { flagged: false } },
      'public',
    );
    expect(res.statusCode, res.body).toBe(409);
    expect(await live('fraud_flag')).toMatchObject([{ id: hidden.id, data: { flagged: true } }]);
  });
});

describe('bad input and foreign credentials change nothing', () => {
  it('the field it names must be set, and an unknown spelling is refused (400)', async () => {
    const missing = await createAs(adminKey, { recordType: 'bad', singletonPer: 'variant' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().message).toContain('variantId');
    const unknown = await createAs(adminKey, { recordType: 'bad', singletonPer: 'products', productId: 'p' });
    expect(unknown.statusCode).toBe(400);
    expect(await stored('bad')).toEqual([]);
  });

  it('a bad field, a ref another record holds, another collection’s key: the singleton is left as it was', async () => {
    const first = await ok(adminKey, {
      recordType: 'guarded',
      singletonPer: 'product',
      productId: 'p1',
      ref: 'G-1',
      data: { v: 1 },
    });
    await ok(adminKey, { recordType: 'other', ref: 'TAKEN' });
    const body = { recordType: 'guarded', singletonPer: 'product', productId: 'p1' };
    const badTime = await createAs(adminKey, { ...body, startsAt: 'soon', data: { v: 2 } });
    expect(badTime.statusCode).toBe(400);
    const takenRef = await createAs(adminKey, { ...body, ref: 'TAKEN', data: { v: 3 } });
    expect(takenRef.statusCode, takenRef.body).toBe(409);
    const foreignKey = await post(records('admin'), { 'x-api-key': other.key }, { ...body, data: { v: 4 } });
    expect(foreignKey.statusCode).toBe(401);
    const noKey = await post(records('admin'), {}, { ...body, data: { v: 5 } });
    expect(noKey.statusCode).toBe(401);
    const [now] = await live('guarded');
    expect(now).toMatchObject({ id: first.id, ref: 'G-1', data: { v: 1 }, updatedAt: first.updatedAt });
  });
});

describe('concurrent creates of one singleton end with one record', () => {
  it('20 at once: every answer 200 with the same id, every data key kept', async () => {
    const body = (i: number) => ({
      recordType: 'race',
      singletonPer: 'product',
      productId: 'p1',
      data: { [`k${i}`]: i },
    });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => createAs(adminKey, body(i))));
    expect(answers.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
    const ids = new Set(answers.map((r) => r.json().id));
    expect(ids.size).toBe(1);
    const all = await stored('race');
    expect(all).toHaveLength(1);
    expect(Object.keys(all[0].data as object)).toHaveLength(20);
  });

  it('20 at once while the singleton is deleted: it is revived once, no second record', async () => {
    const first = await ok(adminKey, { recordType: 'race-revive', singletonPer: 'collection' });
    await t.inject({ method: 'DELETE', url: `${records('admin')}/${first.id}`, headers: adminKey });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        createAs(adminKey, { recordType: 'race-revive', singletonPer: 'collection', data: { [`k${i}`]: i } }),
      ),
    );
    expect(answers.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((r) => r.json().id))).toEqual(new Set([first.id]));
    const all = await stored('race-revive');
    expect(all).toHaveLength(1);
    expect(all[0].deletedAt).toBeNull();
    expect(Object.keys(all[0].data as object)).toHaveLength(20);
  });

  it('a user’s creates (a new record) and an admin’s (reviving the deleted one) at once: one live record', async () => {
    for (let round = 0; round < 5; round++) {
      const recordType = `race-mixed-${round}`;
      const body = { recordType, singletonPer: 'product', productId: 'p1' };
      const gone = await ok(userAuth, body, 'public');
      await t.inject({ method: 'DELETE', url: `${records('public')}/${gone.id}`, headers: userAuth });
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          i % 2
            ? createAs(userAuth, { ...body, data: { [`u${i}`]: i } }, 'public')
            : createAs(adminKey, { ...body, contactId: user.contactId, data: { [`a${i}`]: i } }),
        ),
      );
      expect(answers.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
      const now = await live(recordType);
      expect(now).toHaveLength(1);
      expect(new Set(answers.map((r) => r.json().id))).toEqual(new Set([now[0].id]));
    }
  });

  it.runIf(onPostgres)(
    'a revival that meets a record made live meanwhile looks again and updates that record',
    async () => {
      // Deterministic on PostgreSQL: another session holds an uncommitted live record with the
      // key, so the revival waits on the unique index and fails when that session commits.
      const deleted = await ok(adminKey, { recordType: 'race-clash', singletonPer: 'product', productId: 'p1' });
      await t.inject({ method: 'DELETE', url: `${records('admin')}/${deleted.id}`, headers: adminKey });
      const session = new pg.Client({ connectionString: t.testDb.url });
      await session.connect();
      try {
        await session.query('BEGIN');
        await session.query(
          `INSERT INTO app_records (collection_id, app_id, id, record_type, product_id, singleton_key)
           VALUES ($1, 'catalog', 'rec_otherSession', 'race-clash', 'p1', $2)`,
          [c.id, deleted.singletonKey],
        );
        const pending = createAs(adminKey, {
          recordType: 'race-clash',
          singletonPer: 'product',
          productId: 'p1',
          data: { k: 1 },
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        await session.query('COMMIT');
        const res = await pending;
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ id: 'rec_otherSession', data: { k: 1 } });
        const all = await stored('race-clash');
        expect(all.find((r) => r.id === deleted.id)?.deletedAt).not.toBeNull();
      } finally {
        await session.end();
      }
    },
  );

  it('20 users’ registrations at once, two each: one record per user', async () => {
    const tokens = await Promise.all(
      Array.from({ length: 10 }, (_, i) => t.userToken(c.id, `racer-${i}`, `racer-contact-${i}`)),
    );
    const answers = await Promise.all(
      [...tokens, ...tokens].map((token) =>
        createAs(
          bearer(token),
          { recordType: 'race-users', singletonPer: 'product', productId: 'p1', data: { at: 1 } },
          'public',
        ),
      ),
    );
    expect(answers.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
    const all = await stored('race-users');
    expect(all).toHaveLength(10);
    expect(new Set(all.map((r) => r.contactId)).size).toBe(10);
  });
});
