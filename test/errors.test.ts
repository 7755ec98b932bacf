import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, superAuth, type TestApp, type TestCollection } from './helpers/app.ts';

let t: TestApp;
let a: TestCollection;
beforeAll(async () => {
  t = await createTestApp();
  a = await t.createCollection();
});
afterAll(() => t.close());

const expectErrorBody = (res: {
  json(): Record<string, unknown>;
  statusCode: number;
  headers: Record<string, unknown>;
}) => {
  const body = res.json();
  expect(body).toMatchObject({
    code: res.statusCode,
    errorCode: expect.any(String),
    message: expect.any(String),
    requestId: expect.any(String),
  });
  expect(res.headers['x-request-id']).toBe(body.requestId);
  return body;
};

describe('one error body for every failure', () => {
  it('unknown route: 404', async () => {
    const res = await t.inject({ method: 'GET', url: '/no/such/route' });
    expect(res.statusCode).toBe(404);
    expect(expectErrorBody(res).errorCode).toBe('NOT_FOUND');
  });

  it('malformed JSON: 400, nothing written', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: { ...a.auth, 'content-type': 'application/json' },
      payload: '{"name": "x",',
    });
    expect(res.statusCode).toBe(400);
    expect(expectErrorBody(res).errorCode).toBe('BAD_REQUEST');
  });

  it('empty JSON body: 400', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: { ...a.auth, 'content-type': 'application/json' },
      payload: '',
    });
    expect(res.statusCode).toBe(400);
    expectErrorBody(res);
  });

  it('wrong content type: 415', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: { ...a.auth, 'content-type': 'text/plain' },
      payload: 'name=x',
    });
    expect(res.statusCode).toBe(415);
    expect(expectErrorBody(res).errorCode).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('body over 1 MiB: 413', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: { ...a.auth, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x', description: 'y'.repeat(1024 * 1024 + 10) }),
    });
    expect(res.statusCode).toBe(413);
    expect(expectErrorBody(res).errorCode).toBe('PAYLOAD_TOO_LARGE');
  });

  it('wrong type is not coerced and unknown fields are refused, each named by its path', async () => {
    for (const [payload, path] of [
      [{ name: 123 }, 'body.name'],
      [{ name: 'x', bogus: 1 }, 'body.bogus'],
    ] as const) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/location`,
        headers: a.auth,
        payload,
      });
      expect(res.statusCode).toBe(400);
      const body = expectErrorBody(res);
      expect(body.errorCode).toBe('VALIDATION_FAILED');
      expect((body.details as { errors: { path: string }[] }).errors.map((e) => e.path)).toEqual([path]);
    }
  });

  it('a body is checked up to its first failing field; a query string lists each', async () => {
    const body = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: a.auth,
      payload: { name: 123, bogus: 1 },
    });
    expect(body.statusCode).toBe(400);
    expect((expectErrorBody(body).details as { errors: unknown[] }).errors).toHaveLength(1);
    const query = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/location/search?limit=0&bogus=1`,
      headers: a.auth,
    });
    expect(query.statusCode).toBe(400);
    const paths = (expectErrorBody(query).details as { errors: { path: string }[] }).errors.map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['querystring.limit', 'querystring.bogus']));
  });

  it('query strings are coerced: limit=5 is a number', async () => {
    const res = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/location/search?limit=5`,
      headers: a.auth,
    });
    expect(res.statusCode).toBe(200);
  });

  it('a hostile path parameter is a 4xx with the error body, never a 500', async () => {
    // 'x' × 200: over the schema's 100 (400); × 500: over the router's 256 (414); %E0%A4%A: not UTF-8.
    for (const id of [
      "'%3B DROP TABLE locations; --",
      '%00',
      'x'.repeat(200),
      'x'.repeat(500),
      '%F0%9F%92%A9',
      '%E0%A4%A',
    ]) {
      const res = await t.inject({ method: 'GET', url: `/public/location/${id}` });
      expect(res.statusCode, id).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, id).toBeLessThan(500);
      expectErrorBody(res);
    }
  });

  it('keeps a sane caller-supplied request id and replaces a hostile one', async () => {
    const kept = await t.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-123' } });
    expect(kept.headers['x-request-id']).toBe('trace-123');
    const replaced = await t.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-request-id': 'bad id\twith spaces' },
    });
    expect(replaced.headers['x-request-id']).not.toContain(' ');
  });
});

describe('rate limiting per credential', () => {
  it('answers 429 with Retry-After once a credential is over its budget, without touching others', async () => {
    const limited = await createTestApp({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' });
    try {
      const statuses: number[] = [];
      let last: Awaited<ReturnType<TestApp['inject']>> | undefined;
      for (let i = 0; i < 5; i++) {
        last = await limited.inject({ method: 'GET', url: '/platform/collections', headers: superAuth });
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
      expect(expectErrorBody(last!).errorCode).toBe('RATE_LIMITED');
      // Another caller (anonymous, by address) has its own budget.
      const other = await limited.inject({ method: 'GET', url: '/public/location/none' });
      expect(other.statusCode).toBe(404);
    } finally {
      await limited.close();
    }
  });
});

describe('health', () => {
  it('is live and ready once migrations are applied', async () => {
    expect((await t.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const ready = await t.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', listener: 'connected' });
  });
});

describe('BASE_PATH', () => {
  it('mounts every route under the configured base path', async () => {
    const based = await createTestApp({ BASE_PATH: '/api/v1' });
    try {
      const res = await based.inject({ method: 'GET', url: '/api/v1/platform/collections', headers: superAuth });
      expect(res.statusCode).toBe(200);
      expect((await based.inject({ method: 'GET', url: '/platform/collections', headers: superAuth })).statusCode).toBe(
        404,
      );
      const spec = await based.inject({ method: 'GET', url: '/api/v1/openapi.json' });
      expect(Object.keys(spec.json().paths)).toContain('/api/v1/platform/collections');
    } finally {
      await based.close();
    }
  });
});
