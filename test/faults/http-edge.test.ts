/**
 * The HTTP edge over real sockets: `inject` bypasses Node's HTTP parser, the server's
 * timeouts and the client address, which are the subjects here. The app listens on a random
 * port on 127.0.0.1; each test speaks from its own loopback address (127.0.0.x) so that
 * per-address budgets of one test do not leak into another.
 */
import { randomBytes } from 'node:crypto';
import { type AddressInfo, connect } from 'node:net';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/index.ts';
import { AuthFailureBudget } from '../../src/platform/auth.ts';
import { createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';

const RATE_LIMIT_MAX = 20;
const AUTH_FAILURE_LIMIT = 10;

let t: TestApp;
let a: TestCollection;
let port: number;
/** Queries that look an admin key up by its hash, counted through a pass-through database. */
let keyLookups = 0;
const agents: Agent[] = [];

beforeAll(async () => {
  const counting = (db: Db): Db =>
    new Proxy(db, {
      get(target, prop) {
        if (prop === 'query') {
          return (text: Parameters<Db['query']>[0], params?: unknown[]) => {
            const sqlText = typeof text === 'string' ? text : text.text;
            if (sqlText.includes('FROM api_keys WHERE key_hash')) keyLookups++;
            return target.query(text, params);
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  t = await createTestApp(
    {
      ROLE: 'api',
      RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      AUTH_FAILURE_LIMIT: String(AUTH_FAILURE_LIMIT),
      HTTP_HEADERS_TIMEOUT_MS: '500',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
      TRUSTED_PROXIES: '127.0.0.50',
    },
    { wrapDb: counting },
  );
  a = await t.createCollection();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.close()));
  await t.close();
});

/** An HTTP client whose connections come from one loopback address. */
function from(address: string) {
  const agent = new Agent({ localAddress: address });
  agents.push(agent);
  return async (path: string, headers: Record<string, string> = {}) => {
    const res = await request(`http://127.0.0.1:${port}${path}`, { dispatcher: agent, headers });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body: JSON.parse(text) as Record<string, unknown> };
  };
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
  /** The server closed the connection. */
  closed: boolean;
}

/**
 * Writes raw bytes (in pieces, `gapMs` apart) and reads until the server closes the socket
 * or `deadlineMs` passes. `sent` tells how many pieces went out before the server closed.
 */
function raw(
  pieces: (string | Buffer)[],
  { from = '127.0.0.1', gapMs = 0, deadlineMs = 20_000 } = {},
): Promise<RawResponse & { sent: number }> {
  return new Promise<RawResponse & { sent: number }>((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    const chunks: Buffer[] = [];
    let sent = 0;
    let closed = false;
    const deadline = setTimeout(() => socket.destroy(), deadlineMs);
    const writeNext = () => {
      if (closed || sent >= pieces.length) return;
      socket.write(pieces[sent++]);
      if (gapMs > 0) setTimeout(writeNext, gapMs);
      else writeNext();
    };
    socket.on('connect', writeNext);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => {}); // a reset after the answer is fine: 'close' follows
    socket.on('close', () => {
      closed = true;
      clearTimeout(deadline);
      try {
        resolve({ ...parse(Buffer.concat(chunks).toString('latin1')), sent });
      } catch (err) {
        reject(err);
      }
    });
  });

  function parse(text: string): RawResponse {
    const end = text.indexOf('\r\n\r\n');
    if (end < 0) return { status: 0, headers: {}, body: undefined, closed: true };
    const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
    }
    const bodyText = text.slice(end + 4);
    return {
      status: Number(statusLine.split(' ')[1]),
      headers,
      body: bodyText ? (JSON.parse(bodyText) as Record<string, unknown>) : undefined,
      closed: true,
    };
  }
}

/** The documented error body, with the request id also in the x-request-id header. */
function expectErrorBody(res: { status: number; headers: Record<string, unknown>; body: unknown }, errorCode: string) {
  expect(res.body).toMatchObject({
    code: res.status,
    errorCode,
    message: expect.any(String),
    requestId: expect.any(String),
  });
  expect(res.headers['x-request-id']).toBe((res.body as { requestId: string }).requestId);
}

const wrongKey = () => `ck_${randomBytes(32).toString('base64url')}`;

describe('probes', () => {
  it('are never rate limited: 120 concurrent probes from one address at a limit of 20', async () => {
    const call = from('127.0.0.5');
    const probes = await Promise.all(Array.from({ length: 120 }, (_, i) => call(i % 2 === 0 ? '/healthz' : '/readyz')));
    expect(probes.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
    // The same address's own budget is untouched by them, and is enforced.
    const others = await Promise.all(Array.from({ length: 30 }, () => call('/public/location/none')));
    const statuses = others.map((r) => r.status);
    expect(statuses.filter((s) => s === 404)).toHaveLength(RATE_LIMIT_MAX);
    expect(statuses.filter((s) => s === 429)).toHaveLength(30 - RATE_LIMIT_MAX);
  });
});

describe('failed authentication', () => {
  it('is budgeted per address: wrong keys get 429 once over it, without being looked up', async () => {
    const call = from('127.0.0.10');
    const statuses: number[] = [];
    let lookupsWhileBlocked = -1;
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 60; i++) {
      if (i === AUTH_FAILURE_LIMIT) lookupsWhileBlocked = keyLookups;
      const res = await call(`/admin/collection/${a.id}/api-keys`, { authorization: `Bearer ${wrongKey()}` });
      statuses.push(res.status);
      if (res.status === 429) refused = res;
    }
    expect(statuses.slice(0, AUTH_FAILURE_LIMIT)).toEqual(Array(AUTH_FAILURE_LIMIT).fill(401));
    expect(statuses.slice(AUTH_FAILURE_LIMIT)).toEqual(Array(60 - AUTH_FAILURE_LIMIT).fill(429));
    // Refused before the database: no key was looked up once the address was over budget.
    expect(keyLookups).toBe(lookupsWhileBlocked);
    expectErrorBody(refused!, 'RATE_LIMITED');
    const retryAfter = Number(refused!.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);

    // The documented choice: while the address is over budget, a valid credential from it is
    // refused too (it cannot be told apart without the lookup); anonymous calls are served.
    expect((await call(`/admin/collection/${a.id}/api-keys`, a.auth)).status).toBe(429);
    expect((await call('/public/location/none')).status).toBe(404);
    // Another address is unaffected, with the same valid key.
    const other = await from('127.0.0.11')(`/admin/collection/${a.id}/api-keys`, a.auth);
    expect(other.status).toBe(200);
  });

  it('holds against a concurrent burst: at most the budget of 60 parallel guesses is looked up', async () => {
    const call = from('127.0.0.12');
    const before = keyLookups;
    const results = await Promise.all(
      Array.from({ length: 60 }, () =>
        call(`/admin/collection/${a.id}/api-keys`, { authorization: `Bearer ${wrongKey()}` }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(AUTH_FAILURE_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(60 - AUTH_FAILURE_LIMIT);
    expect(keyLookups - before).toBe(AUTH_FAILURE_LIMIT);
  });

  it('counts the forwarded client behind a trusted proxy, and only there', async () => {
    const proxy = from('127.0.0.50');
    const viaProxy = (client: string, authorization: string) =>
      proxy(`/admin/collection/${a.id}/api-keys`, { authorization, 'x-forwarded-for': client });
    for (let i = 0; i < AUTH_FAILURE_LIMIT; i++) {
      expect((await viaProxy('203.0.113.7', `Bearer ${wrongKey()}`)).status).toBe(401);
    }
    expect((await viaProxy('203.0.113.7', a.auth.authorization)).status).toBe(429);
    // Another client behind the same proxy is not affected.
    expect((await viaProxy('203.0.113.8', a.auth.authorization)).status).toBe(200);
    // An untrusted peer's X-Forwarded-For is not believed: a fresh one per guess does not help.
    const direct = from('127.0.0.51');
    const statuses: number[] = [];
    for (let i = 0; i <= AUTH_FAILURE_LIMIT; i++) {
      const res = await direct(`/admin/collection/${a.id}/api-keys`, {
        authorization: `Bearer ${wrongKey()}`,
        'x-forwarded-for': `198.51.100.${i}`,
      });
      statuses.push(res.status);
    }
    expect(statuses.at(-1)).toBe(429);
  });

  it('a valid credential sent many times at once from one address is not refused', async () => {
    const call = from('127.0.0.13');
    const results = await Promise.all(
      Array.from({ length: RATE_LIMIT_MAX - 5 }, () => call(`/admin/collection/${a.id}/api-keys`, a.auth)),
    );
    expect(results.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
  });
});

describe('AuthFailureBudget', () => {
  it('renews an address once its window has passed', async () => {
    const budget = new AuthFailureBudget(2, 200);
    for (const key of ['k1', 'k2']) {
      expect(budget.begin('192.0.2.1', key)).toBe(0);
      budget.end('192.0.2.1', key, true);
    }
    expect(budget.begin('192.0.2.1', 'k3')).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(budget.begin('192.0.2.1', 'k3')).toBe(0);
  });

  it('stays bounded under a flood of addresses, keeping the budgets it can', () => {
    const budget = new AuthFailureBudget(1, 60_000, 100);
    budget.begin('198.51.100.1', 'guess');
    budget.end('198.51.100.1', 'guess', true);
    // Idle entries (addresses whose lookups succeeded) are dropped first.
    for (let i = 0; i < 500; i++) {
      budget.begin(`10.0.${i >> 8}.${i & 255}`, 'valid');
      budget.end(`10.0.${i >> 8}.${i & 255}`, 'valid', false);
    }
    expect(budget.size).toBeLessThanOrEqual(100);
    expect(budget.begin('198.51.100.1', 'another guess')).toBeGreaterThan(0);
  });
});

describe('rate-limit buckets follow the verified principal', () => {
  it('a user token with its last signature character changed is refused and counted as a failure', async () => {
    const token = await t.userToken(a.id, 'u-tamper');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(token.at(-1)!);
    // The three characters that differ from the last one only in bits base64url leaves unused
    // (a lenient decoder reads them as the same signature), then others that change the signature.
    const aliases = [1, 2, 3].map((d) => alphabet[(last & ~3) + ((last + d) & 3)]);
    const others = alphabet.split('').filter((c) => c !== token.at(-1) && !aliases.includes(c));
    const variants = [...aliases, ...others.slice(0, AUTH_FAILURE_LIMIT - aliases.length)].map(
      (c) => token.slice(0, -1) + c,
    );
    const call = from('127.0.0.14');
    const path = `/public/collection/${a.id}/location/none`;
    for (const variant of variants) {
      const res = await call(path, { authorization: `Bearer ${variant}` });
      expect(res.status, variant.slice(-3)).toBe(401);
      expect(res.body.errorCode).toBe('UNAUTHORIZED');
    }
    // Each variant was a failure: the address is now over its budget.
    const next = await call(path, { authorization: `Bearer ${token.slice(0, -1)}${others.at(-1)}` });
    expect(next.status).toBe(429);
    // The genuine token still works from another address.
    expect((await from('127.0.0.15')(path, { authorization: `Bearer ${token}` })).status).toBe(404);
  });

  it("two different tokens of one user share that user's bucket", async () => {
    // Different contact ids make different token texts for the same user and collection.
    const first = await t.userToken(a.id, 'u-bucket', 'contact-1');
    const second = await t.userToken(a.id, 'u-bucket', 'contact-2');
    expect(first).not.toBe(second);
    const call = from('127.0.0.16');
    const path = `/public/collection/${a.id}/location/none`;
    const statuses: number[] = [];
    for (let i = 0; i < RATE_LIMIT_MAX + 4; i++) {
      statuses.push((await call(path, { authorization: `Bearer ${i % 2 ? first : second}` })).status);
    }
    expect(statuses.filter((s) => s === 404)).toHaveLength(RATE_LIMIT_MAX);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
    // Another user of the same collection, from the same address, has a bucket of its own.
    const otherUser = await t.userToken(a.id, 'u-other');
    expect((await call(path, { authorization: `Bearer ${otherUser}` })).status).toBe(404);
  });
});

describe('one error body for what the parser and the router refuse', () => {
  const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: edge.test\r\n${extra}\r\n`;

  it('an over-long URL (100 KB path): 431 in the error body, connection closed', async () => {
    const res = await raw([get(`/${'a'.repeat(100_000)}`)], { from: '127.0.0.30' });
    expect(res.status).toBe(431);
    expectErrorBody(res, 'HEADERS_TOO_LARGE');
    expect(res.closed).toBe(true);
  });

  it('headers over the size limit: 431 in the error body', async () => {
    const res = await raw([get('/healthz', `X-Big: ${'b'.repeat(20_000)}\r\n`)], { from: '127.0.0.30' });
    expect(res.status).toBe(431);
    expectErrorBody(res, 'HEADERS_TOO_LARGE');
  });

  it('malformed HTTP: 400 in the error body', async () => {
    for (const request of [
      'GARBAGE\r\n\r\n',
      'POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      'POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'GET /healthz HTTP/1.1\r\n\r\n', // no Host
    ]) {
      const res = await raw([request], { from: '127.0.0.31' });
      expect(res.status, request).toBe(400);
      expectErrorBody(res, 'BAD_REQUEST');
    }
  });

  it('a %00 path segment and bad percent-encoding: 400 in the error body', async () => {
    for (const path of [
      '/public/location/%00',
      '/l/%00',
      `/public/collection/${a.id}/location/%00`,
      '/public/location/%zz',
      '/public/collection/%E0%A4%A/location/x',
      '/l/%C0%80',
    ]) {
      const res = await raw([get(path, 'Connection: close\r\n')], { from: '127.0.0.32' });
      expect(res.status, path).toBe(400);
      expectErrorBody(res, (res.body as { errorCode: string }).errorCode);
      expect(['BAD_REQUEST', 'VALIDATION_FAILED'], path).toContain(res.body!.errorCode);
    }
  });

  it('path parameters: ids as long as the schemas allow reach the route; beyond 4096 characters, 414', async () => {
    const long = await raw(
      [get(`/public/collection/${a.id}/interactions/${'t'.repeat(150)}`, 'Connection: close\r\n')],
      {
        from: '127.0.0.33',
      },
    );
    expect(long.status).toBe(404);
    expectErrorBody(long, 'NOT_FOUND');
    const tooLong = await raw([get(`/l/${'x'.repeat(5000)}`, 'Connection: close\r\n')], { from: '127.0.0.33' });
    expect(tooLong.status).toBe(414);
    expectErrorBody(tooLong, 'URI_TOO_LONG');
  });
});

// Concurrent: two slow clients from their own addresses, each waiting for the server's cut-off.
describe.concurrent('server timeouts', () => {
  it('takes its timeouts from the configuration', () => {
    const server = t.app.server;
    expect(server.headersTimeout).toBe(500);
    expect(server.requestTimeout).toBe(1000);
    expect(server.keepAliveTimeout).toBe(t.config.httpKeepAliveTimeoutMs);
    expect(server.timeout).toBe(t.config.httpIdleTimeoutMs);
  });

  it('cuts off a client sending its headers one byte at a time: 408 in the error body, connection closed', async () => {
    const head = 'GET /healthz HTTP/1.1\r\nHost: edge.test\r\nX-Slow: ';
    const drip = 'abcdefghijklmnopqrstuvwxyz0123'.split('');
    const res = await raw([head, ...drip, '\r\n\r\n'], { from: '127.0.0.40', gapMs: 400, deadlineMs: 45_000 });
    // Closed by the server while the client still had headers to send.
    expect(res.closed).toBe(true);
    expect(res.sent).toBeLessThan(drip.length + 2);
    expect(res.status).toBe(408);
    expectErrorBody(res, 'REQUEST_TIMEOUT');
  });

  it('cuts off a client sending its body too slowly: 408 in the error body', async () => {
    const head =
      `POST /public/collection/${a.id}/interactions/submit HTTP/1.1\r\nHost: edge.test\r\n` +
      'Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{';
    const drip = '"a":"bcdefghijklmnopqrstuvwxyz0123456"'.split('');
    const res = await raw([head, ...drip, '}'], { from: '127.0.0.41', gapMs: 200, deadlineMs: 45_000 });
    expect(res.sent).toBeLessThan(drip.length + 2);
    expect(res.status).toBe(408);
    expectErrorBody(res, 'REQUEST_TIMEOUT');
  });
});
