/**
 * Walks every operation of the generated OpenAPI document. For each admin, platform and webhook
 * route it checks that a call without a credential, a call with another collection's admin key
 * and a call with a user token of the route's own collection all answer 401; for every route
 * with a collection in its path, that collection A's admin key and A's user token get nothing
 * (401 or 404) from collection B's paths; for every route, that no such call answers 5xx. New
 * routes are covered the moment they are registered. It also checks each operation documents
 * itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let owner: CollectionWithUser;
let stranger: CollectionWithUser;
interface Operation {
  method: string;
  path: string;
  url: string;
  op: Record<string, unknown>;
}
const operations: Operation[] = [];

/** The URL of `path` in collection `collectionId`, `{zone}` as given, other parameters `x1`. */
const urlOf = (path: string, collectionId: string, zone: 'admin' | 'public') =>
  path
    .replace('{collectionId}', collectionId)
    .replace('{zone}', zone)
    .replace(/\{[^}]+\}/g, 'x1');
const payloadOf = (method: string) => (method === 'GET' || method === 'DELETE' ? undefined : {});
const errorBody = { code: expect.any(Number), errorCode: expect.any(String), message: expect.any(String) };

beforeAll(async () => {
  t = await createTestApp();
  ({ a: owner, b: stranger } = await twoCollections(t));
  const spec = (await t.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      operations.push({ method: method.toUpperCase(), path, url: urlOf(path, owner.id, 'admin'), op });
    }
  }
});
afterAll(() => t.close());

/** A route under a protected prefix, unless it declares itself public (`security: []`, as the event catalogue does). */
const isProtected = (path: string, op: Record<string, unknown>) =>
  !(Array.isArray(op.security) && op.security.length === 0) &&
  (/^\/(admin|platform|v1)\//.test(path) || path.startsWith('/{zone}/'));
const inCollection = (path: string) => path.includes('{collectionId}');
/**
 * Calls each operation with a collection in its path, in `zones` (both where the path has a
 * `{zone}`), on the stranger's (B's) URLs with the owner's (A's) `headers`: each must answer
 * 401 or 404 with the error body. Returns how many calls it made.
 */
async function refusedOnStrangersPaths(zones: ('admin' | 'public')[], headers: Record<string, string>) {
  const calls = operations
    .filter(({ path }) => inCollection(path))
    .flatMap(({ method, path }) => {
      const own = path.startsWith('/{zone}/') ? zones : zones.filter((z) => path.startsWith(`/${z}/`));
      return own.map((zone) => ({ method, where: `${method} ${path} (${zone})`, url: urlOf(path, stranger.id, zone) }));
    });
  for (const { method, where, url } of calls) {
    const res = await t.inject({ method: method as 'GET', url, headers, payload: payloadOf(method) });
    expect([401, 404], `${where}: ${res.statusCode} ${res.body}`).toContain(res.statusCode);
    expect(res.json(), where).toMatchObject(errorBody);
  }
  return calls.length;
}

describe('every operation in /openapi.json', () => {
  it('was found', () => {
    expect(operations.length).toBeGreaterThan(8);
  });

  it('documents a summary, an operationId and its error responses', () => {
    const ids = new Set<string>();
    for (const { method, path, op } of operations) {
      const where = `${method} ${path}`;
      expect(op.summary, where).toEqual(expect.any(String));
      expect(op.operationId, where).toEqual(expect.any(String));
      expect(ids.has(op.operationId as string), `duplicate operationId at ${where}`).toBe(false);
      ids.add(op.operationId as string);
      const responses = Object.keys(op.responses as object);
      for (const code of ['400', '401', '404']) expect(responses, where).toContain(code);
    }
  });

  it('refuses a call with no credential on every protected route, and never answers 500', async () => {
    for (const { method, path, url, op } of operations) {
      const res = await t.inject({
        method: method as 'GET',
        url,
        payload: payloadOf(method),
      });
      expect(res.statusCode, `${method} ${path}`).toBeLessThan(500);
      if (isProtected(path, op)) expect(res.statusCode, `${method} ${path}`).toBe(401);
    }
  });

  it('refuses another collection’s admin key on every protected route, and never answers 500', async () => {
    for (const { method, path, url, op } of operations) {
      const res = await t.inject({
        method: method as 'GET',
        url,
        headers: stranger.auth,
        payload: payloadOf(method),
      });
      expect(res.statusCode, `${method} ${path}`).toBeLessThan(500);
      if (isProtected(path, op) && !path.startsWith('/v1/')) expect(res.statusCode, `${method} ${path}`).toBe(401);
      // /v1/webhooks has no collection in its path: a key acts on its own collection, so a
      // foreign id is simply not found there.
      // The list is the key's own collection's (200), never the other one's.
      if (path.startsWith('/v1/') && isProtected(path, op)) {
        const allowed = method === 'GET' && path === '/v1/webhooks' ? [200] : [401, 404, 400];
        expect(allowed, `${method} ${path}`).toContain(res.statusCode);
      }
    }
  });

  it('has credentials that work where they belong (so the refusals below are not of a bad credential)', async () => {
    const admin = await t.inject({ method: 'GET', url: `/admin/collection/${owner.id}/links`, headers: owner.auth });
    expect(admin.statusCode, admin.body).toBe(200);
    const user = await t.inject({
      method: 'GET',
      url: `/public/collection/${owner.id}/app/x1/records`,
      headers: owner.userAuth,
    });
    expect(user.statusCode, user.body).toBe(200);
  });

  it('refuses a user token of the route’s own collection on every admin route: 401 FORBIDDEN or UNAUTHORIZED', async () => {
    let checked = 0;
    for (const { method, path, url, op } of operations) {
      if (!isProtected(path, op)) continue;
      const res = await t.inject({ method: method as 'GET', url, headers: owner.userAuth, payload: payloadOf(method) });
      const where = `${method} ${path}`;
      expect(res.statusCode, `${where}: ${res.body}`).toBe(401);
      expect(res.json(), where).toMatchObject(errorBody);
      expect(['FORBIDDEN', 'UNAUTHORIZED'], where).toContain(res.json().errorCode);
      checked++;
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('gives collection A’s admin key nothing of collection B’s paths (401 or 404), on every operation', async () => {
    expect(await refusedOnStrangersPaths(['admin', 'public'], owner.auth)).toBeGreaterThan(50);
  });

  it('gives collection A’s user token nothing of collection B’s public paths (401 or 404)', async () => {
    expect(await refusedOnStrangersPaths(['public'], owner.userAuth)).toBeGreaterThan(20);
  });

  it('answers a garbage body on every write route with a 4xx, never a 500', async () => {
    for (const { method, path, url } of operations) {
      if (method === 'GET' || method === 'DELETE') continue;
      for (const payload of ['[1,2,3]', '"str"', '{"a":{"b":{"c":[null,{}]}}}', 'null']) {
        const res = await t.inject({
          method: method as 'POST',
          url,
          headers: { ...owner.auth, 'content-type': 'application/json' },
          payload,
        });
        expect(res.statusCode, `${method} ${path} ${payload}`).toBeLessThan(500);
      }
    }
  });
});

describe('the docs page at /docs', () => {
  it('serves the page and its static assets', async () => {
    const page = await t.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const css = await t.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' });
    expect(css.statusCode).toBe(200);
    expect(css.headers['content-type']).toContain('text/css');
    expect(css.body.length).toBeGreaterThan(1000);
    const missing = await t.inject({ method: 'GET', url: '/docs/static/no-such-file.js' });
    expect(missing.statusCode).toBe(404);
  });
});
