/**
 * Clients written for the original send some paths with a trailing slash (its SDK posts to
 * `…/interactions/` and lists `…/interactions/?appId=…`). Every route answers the same with or
 * without one: first the SDK's own requests, then every operation of /openapi.json compared
 * with and without the slash (same status, same body apart from the request id).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type CollectionWithUser, collectionWithUser } from '../helpers/fixtures.ts';

let t: TestApp;
let c: CollectionWithUser;

beforeAll(async () => {
  t = await createTestApp();
  c = await collectionWithUser(t);
  const created = await t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/interactions`,
    headers: c.auth,
    payload: { id: 'vote', appId: 'polls', permissions: { allowPublicSubmit: true } },
  });
  expect(created.statusCode, created.body).toBe(200);
});
afterAll(() => t.close());

describe("the original SDK's paths with a trailing slash", () => {
  it('POST …/interactions/ creates a type', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${c.id}/interactions/`,
      headers: c.auth,
      payload: { id: 'like', appId: 'polls' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: 'like', appId: 'polls' });
  });

  it('GET …/interactions/?appId=… lists (admin and public), not a get with an empty id', async () => {
    const admin = await t.inject({
      method: 'GET',
      url: `/admin/collection/${c.id}/interactions/?appId=polls`,
      headers: c.auth,
    });
    expect(admin.statusCode, admin.body).toBe(200);
    expect(admin.json().items.map((i: { id: string }) => i.id)).toContain('vote');
    const pub = await t.inject({ method: 'GET', url: `/public/collection/${c.id}/interactions/` });
    expect(pub.statusCode, pub.body).toBe(200);
    expect(Array.isArray(pub.json().items)).toBe(true);
  });

  it('POST …/journeys/ creates a journey', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${c.id}/journeys/`,
      headers: c.auth,
      payload: { name: 'Onboarding', journeyType: 'event_triggered' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ name: 'Onboarding' });
  });
});

describe('every operation', () => {
  it('answers the same with and without a trailing slash', async () => {
    const spec = (await t.inject({ method: 'GET', url: '/openapi.json' })).json();
    const differences: string[] = [];
    let compared = 0;
    for (const [path, item] of Object.entries<Record<string, unknown>>(spec.paths)) {
      for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
        if (!(method in item)) continue;
        // Reads and refused writes only: a write that succeeds would change what the second
        // call sees. Parameters that name nothing (x1) make every write a 4xx or 404.
        const url = path
          .replace('{collectionId}', c.id)
          .replace('{zone}', 'admin')
          .replace(/\{[^}]+\}/g, 'x1');
        const payload = method === 'get' || method === 'delete' ? undefined : { unknownField: true };
        const call = (u: string) =>
          t.inject({ method: method.toUpperCase() as 'GET', url: u, headers: c.auth, payload });
        const plain = await call(url);
        const slashed = await call(`${url}/`);
        compared++;
        const body = (r: typeof plain) => r.body.replace(/"requestId":"[^"]*"/, '');
        if (plain.statusCode !== slashed.statusCode || body(plain) !== body(slashed)) {
          differences.push(
            `${method.toUpperCase()} ${path}: ${plain.statusCode} vs ${slashed.statusCode} with a slash`,
          );
        }
      }
    }
    expect(compared).toBeGreaterThan(80);
    expect(differences).toEqual([]);
  });
});
