/**
 * Rate limits and the failed-authentication budget with REDIS_URL (platform/rate-limit.ts):
 * - Redis unreachable (a port where nothing listens): requests are served uncounted (fail
 *   open), the failure budget still holds in process, and the log says so once, not once per
 *   request;
 * - with a real Redis (TEST_REDIS_URL; skipped without it): two apps, as two API processes
 *   would be, share one request budget and one failure budget, and each collection's budget
 *   (RATE_LIMIT_COLLECTION_MAX) across its keys.
 * Several API processes on a real Redis, and Redis killed under them: multiprocess.process.test.ts.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { freePort } from '../support/service-process.ts';
import { createTestApp, superAuth, type TestApp } from './helpers/app.ts';

const wrongKey = () => ({ authorization: `Bearer ck_${randomBytes(32).toString('base64url')}` });

/** A logger option whose lines land in `lines` (pino JSON). */
function capture(lines: { level: number; msg: string }[]) {
  return { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line)) } };
}

describe('Redis unreachable: fail open', () => {
  let t: TestApp;
  const lines: { level: number; msg: string }[] = [];
  beforeAll(async () => {
    t = await createTestApp(
      {
        REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
        REDIS_CONNECT_TIMEOUT_MS: '200',
        RATE_LIMIT_MAX: '2',
        AUTH_FAILURE_LIMIT: '3',
      },
      { logger: capture(lines) },
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves every request, and warns once that they go uncounted', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push((await t.inject({ method: 'GET', url: '/platform/collections', headers: superAuth })).statusCode);
    }
    expect(statuses).toEqual(Array(8).fill(200));
    const warnings = lines.filter((l) => l.msg.startsWith('rate limit: Redis unavailable'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, uncounted: 1 });
    // The connection's own trouble: said once, not at every reconnect attempt.
    expect(lines.filter((l) => l.msg.startsWith('redis: connection lost or refused'))).toHaveLength(1);
  });

  it('still holds the failed-authentication budget, in this process', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await t.inject({ method: 'GET', url: '/platform/collections', headers: wrongKey() })).statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(lines.filter((l) => l.msg.startsWith('failed-authentication budget: Redis unavailable'))).toHaveLength(1);
  });
});

const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!redisUrl)('two apps on one Redis (TEST_REDIS_URL)', () => {
  const apps: TestApp[] = [];
  beforeAll(async () => {
    // One prefix for both: they count together, as two processes of one deployment do.
    const env = {
      REDIS_URL: redisUrl as string,
      REDIS_KEY_PREFIX: `test:${randomUUID()}:`,
      RATE_LIMIT_MAX: '6',
      AUTH_FAILURE_LIMIT: '3',
    };
    apps.push(await createTestApp(env), await createTestApp(env));
  });
  afterAll(async () => {
    for (const t of apps) await t.close();
  });

  it('share one request budget: exactly RATE_LIMIT_MAX successes across both', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        apps[i % 2].inject({ method: 'GET', url: '/platform/collections', headers: superAuth }),
      ),
    ).then((all) => all.map((r) => r.statusCode));
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });

  it('share the failed-authentication budget: the other app looks up one credential more, then refuses', async () => {
    const [a, b] = apps;
    const call = (t: TestApp, headers: Record<string, string>) =>
      t.inject({ method: 'GET', url: '/platform/collections', headers }).then((r) => r.statusCode);
    for (let i = 0; i < 3; i++) expect(await call(a, wrongKey())).toBe(401);
    expect(await call(a, wrongKey())).toBe(429);
    // b has not seen this address fail yet: its first failure tells it the shared count.
    expect(await call(b, wrongKey())).toBe(401);
    expect(await call(b, wrongKey())).toBe(429);
  });
});

describe.skipIf(!redisUrl)('two apps on one Redis share each collection’s budget (TEST_REDIS_URL)', () => {
  const PER_COLLECTION = 6;
  let t: TestApp;
  let second: FastifyInstance;
  beforeAll(async () => {
    const env = {
      REDIS_URL: redisUrl as string,
      REDIS_KEY_PREFIX: `test:${randomUUID()}:`,
      RATE_LIMIT_MAX: '100',
      RATE_LIMIT_COLLECTION_MAX: String(PER_COLLECTION),
    };
    t = await createTestApp(env);
    // A second app on the same database, as a second API process would be: it knows the keys.
    second = await buildApp({ config: t.config, db: t.testDb.db, logger: false });
    await second.ready();
  });
  afterAll(async () => {
    await second?.close();
    await t?.close();
  });

  it('two keys of a collection through two apps get RATE_LIMIT_COLLECTION_MAX between them; another collection is unaffected', async () => {
    const a = await t.createCollection();
    const b = await t.createCollection();
    const other = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/api-keys`,
      headers: superAuth,
      payload: { name: 'second' },
    });
    const keys = [a.auth, { authorization: `Bearer ${other.json().key}` }];
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        (i % 2 ? second : t.app).inject({
          method: 'GET',
          url: `/admin/collection/${a.id}/links`,
          headers: keys[Math.floor(i / 2) % 2],
        }),
      ),
    );
    expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(PER_COLLECTION);
    const refused = answers.filter((r) => r.statusCode === 429);
    expect(refused).toHaveLength(16 - PER_COLLECTION);
    for (const r of refused) {
      expect(r.json().details).toMatchObject({ budget: 'collection', limit: PER_COLLECTION });
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    }
    for (let i = 0; i < PER_COLLECTION; i++) {
      const app = i % 2 ? second : t.app;
      expect(
        (await app.inject({ method: 'GET', url: `/admin/collection/${b.id}/links`, headers: b.auth })).statusCode,
      ).toBe(200);
    }
  });
});
