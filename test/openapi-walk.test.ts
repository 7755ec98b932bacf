/**
 * Walks every operation of the generated OpenAPI document. For each admin, platform and webhook
 * route it checks that a call without a credential and a call with another collection's admin
 * key both answer 401; for every route, that no such call answers 500. New routes are covered
 * the moment they are registered. It also checks each operation documents itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';

let t: TestApp;
let owner: TestCollection;
let stranger: TestCollection;
const operations: { method: string; path: string; url: string; op: Record<string, unknown> }[] = [];

beforeAll(async () => {
  t = await createTestApp();
  owner = await t.createCollection();
  stranger = await t.createCollection();
  const spec = (await t.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const url = path
        .replace('{collectionId}', owner.id)
        .replace('{zone}', 'admin')
        .replace(/\{[^}]+\}/g, 'x1');
      operations.push({ method: method.toUpperCase(), path, url, op });
    }
  }
});
afterAll(() => t.close());

const isProtected = (path: string) => /^\/(admin|platform|v1)\//.test(path) || path.startsWith('/{zone}/');

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
    for (const { method, path, url } of operations) {
      const res = await t.inject({
        method: method as 'GET',
        url,
        payload: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
      expect(res.statusCode, `${method} ${path}`).toBeLessThan(500);
      if (isProtected(path)) expect(res.statusCode, `${method} ${path}`).toBe(401);
    }
  });

  it('refuses another collection’s admin key on every protected route, and never answers 500', async () => {
    for (const { method, path, url } of operations) {
      const res = await t.inject({
        method: method as 'GET',
        url,
        headers: stranger.auth,
        payload: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
      expect(res.statusCode, `${method} ${path}`).toBeLessThan(500);
      if (isProtected(path) && !path.startsWith('/v1/')) expect(res.statusCode, `${method} ${path}`).toBe(401);
      // /v1/webhooks has no collection in its path: a key acts on its own collection, so a
      // foreign id is simply not found there.
      // The list is the key's own collection's (200), never the other one's.
      if (path.startsWith('/v1/')) {
        const allowed = method === 'GET' && path === '/v1/webhooks' ? [200] : [401, 404, 400];
        expect(allowed, `${method} ${path}`).toContain(res.statusCode);
      }
    }
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
