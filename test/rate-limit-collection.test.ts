/**
 * The collection's request budget (RATE_LIMIT_COLLECTION_MAX, platform/rate-limit.ts): every
 * admin key and user of one collection count against it together, so minting keys no longer
 * multiplies what a collection may take; other collections are not touched. Counted in this
 * process, or in Redis when TEST_REDIS_URL is set (createTestApp then counts there). Two apps
 * sharing one collection budget in Redis: rate-limit-redis.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, superAuth, type TestApp, type TestCollection } from './helpers/app.ts';

// The super admin sets the collections up within its own caller budget (under 40 requests).
const PER_CALLER = 40;
const PER_COLLECTION = 60;
let t: TestApp;
/** The app's warnings: a Redis outage (requests served uncounted) shows in a failure's message. */
const lines: { level: number; msg: string }[] = [];

beforeAll(async () => {
  t = await createTestApp(
    {
      RATE_LIMIT_MAX: String(PER_CALLER),
      RATE_LIMIT_COLLECTION_MAX: String(PER_COLLECTION),
    },
    { logger: { level: 'warn', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } } },
  );
});
afterAll(() => t?.close());

/** A second admin key of the collection, minted by the super admin (which has a budget of its own). */
async function secondKey(c: TestCollection) {
  const res = await t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/api-keys`,
    headers: superAuth,
    payload: { name: 'second' },
  });
  expect(res.statusCode).toBe(200);
  return bearer(res.json().key);
}

const list = (c: TestCollection, headers: Record<string, string>) =>
  t.inject({ method: 'GET', url: `/admin/collection/${c.id}/links`, headers });

describe('per collection as well as per key', () => {
  it('two keys of one collection together spend the collection budget; another collection is unaffected', async () => {
    const a = await t.createCollection();
    const b = await t.createCollection();
    const keys = [a.auth, await secondKey(a)];
    const answers = [];
    // 2 × 40 requests: within each key's budget, over the collection's 60.
    for (let i = 0; i < 2 * PER_CALLER; i++) answers.push(await list(a, keys[i % 2]));
    expect(
      answers.map((r) => r.statusCode),
      JSON.stringify(lines),
    ).toEqual([...Array(PER_COLLECTION).fill(200), ...Array(2 * PER_CALLER - PER_COLLECTION).fill(429)]);
    const refused = answers[PER_COLLECTION];
    expect(refused.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(refused.json()).toMatchObject({
      code: 429,
      errorCode: 'RATE_LIMITED',
      details: { budget: 'collection', limit: PER_COLLECTION },
    });
    expect(refused.json().message).toContain(`collection ${a.id}`);
    // A third key minted now gets no fresh share either.
    expect((await list(a, await secondKey(a))).statusCode).toBe(429);

    // Collection b, and the super admin acting in a: untouched.
    for (let i = 0; i < PER_CALLER; i++) expect((await list(b, b.auth)).statusCode).toBe(200);
    expect((await list(a, superAuth)).statusCode).toBe(200);
  });

  it('counts a collection’s users with its keys; anonymous callers never spend it', async () => {
    const c = await t.createCollection();
    const users = await Promise.all(['u1', 'u2'].map(async (u) => bearer(await t.userToken(c.id, u))));
    const location = `/public/collection/${c.id}/location/none`;
    // Anonymous requests to the collection's public routes: counted per address only.
    for (let i = 0; i < 3; i++) {
      const res = await t.inject({ method: 'GET', url: location, remoteAddress: `10.1.0.${i + 1}` });
      expect(res.statusCode).not.toBe(429);
    }
    // Two users and the admin key, each within its own budget: the collection's 60 between them.
    const statuses = [];
    for (let i = 0; i < 40; i++) {
      statuses.push((await t.inject({ method: 'GET', url: location, headers: users[i % 2] })).statusCode);
    }
    for (let i = 0; i < PER_COLLECTION - 40; i++) statuses.push((await list(c, c.auth)).statusCode);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    const over = await list(c, c.auth);
    expect(over.statusCode).toBe(429);
    expect(over.json().details.budget).toBe('collection');
  });

  it('names the caller’s budget when that is what ran out', async () => {
    const c = await t.createCollection();
    for (let i = 0; i < PER_CALLER; i++) expect((await list(c, c.auth)).statusCode).toBe(200);
    const over = await list(c, c.auth);
    expect(over.statusCode).toBe(429);
    expect(over.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(over.json()).toMatchObject({ errorCode: 'RATE_LIMITED', details: { budget: 'caller', limit: PER_CALLER } });
    // The key's refusals did not spend the collection's budget: another key goes on.
    const other = await secondKey(c);
    for (let i = 0; i < PER_COLLECTION - PER_CALLER; i++) expect((await list(c, other)).statusCode).toBe(200);
    expect((await list(c, other)).json().details.budget).toBe('collection');
  });
});
