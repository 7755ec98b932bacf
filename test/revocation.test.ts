/**
 * A revoked admin key is refused by every app sharing the database at once, not after
 * AUTH_CACHE_TTL_MS (LISTEN/NOTIFY `api_keys_revoked`, collections.cache.ts). Two apps on one
 * database stand for two API processes: on PGlite two handles on one instance, on PostgreSQL
 * two pools with their own LISTEN connections. The cache lifetime is ten minutes here, so
 * only the notification (or the reconnect that stands in for lost ones) explains a refusal.
 * Real processes: multiprocess.process.test.ts.
 */
import { randomUUID } from 'node:crypto';
import type { PGlite } from '@electric-sql/pglite';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { type Db, openPostgres, pgliteDb } from '../src/db/index.ts';
import { CredentialCache } from '../src/modules/collections/collections.cache.ts';
import { bearer, createTestApp, SUPER_KEY, superAuth, type TestApp, type TestCollection } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';

const LONG_TTL = { AUTH_CACHE_TTL_MS: '600000' };

describe('a revocation reaches every app at once', () => {
  let a: TestApp;
  let b: FastifyInstance;
  let bDb: Db;
  let col: TestCollection;
  const appName = `revocation-${randomUUID().slice(0, 8)}`;
  const bLog: string[] = [];

  beforeAll(async () => {
    a = await createTestApp(LONG_TTL);
    col = await a.createCollection();
    if (onPostgres) {
      const url = new URL(a.testDb.url as string);
      url.searchParams.set('application_name', appName);
      bDb = await openPostgres({
        connectionString: url.toString(),
        listenRetryMaxMs: 200,
        log: { info: (_o, msg) => void bLog.push(msg), warn: (_o, msg) => void bLog.push(msg) },
      });
    } else {
      // A second handle on the same instance, which the test database owns and closes.
      bDb = pgliteDb((a.testDb.db as Db & { raw: PGlite }).raw, { close: async () => {} });
    }
    b = await buildApp({
      config: loadConfig({ SUPER_ADMIN_KEY: SUPER_KEY, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: '100000', ...LONG_TTL }),
      db: bDb,
      logger: false,
    });
    await b.ready();
  });
  afterAll(async () => {
    await b?.close();
    await bDb?.close();
    await a?.close();
  });

  const keysVia = async (app: FastifyInstance, key: string) =>
    (await app.inject({ method: 'GET', url: `/admin/collection/${col.id}/api-keys`, headers: bearer(key) })).statusCode;

  async function newKey(): Promise<{ id: string; key: string }> {
    const res = await a.inject({
      method: 'POST',
      url: `/admin/collection/${col.id}/api-keys`,
      headers: superAuth,
      payload: { name: 'k' },
    });
    return res.json();
  }

  /** Marks the key revoked in the database without announcing it: only a cache explains a 200 then. */
  const revokeSilently = (id: string) =>
    a.testDb.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);

  it('the other app drops its cached key on the notification', async () => {
    const k = await newKey();
    expect(await keysVia(b, k.key)).toBe(200); // now cached in b
    await revokeSilently(k.id);
    // The control: b still trusts its cache, for ten minutes.
    expect(await keysVia(b, k.key)).toBe(200);
    const revoked = await a.inject({
      method: 'DELETE',
      url: `/admin/collection/${col.id}/api-keys/${k.id}`,
      headers: superAuth,
    });
    expect(revoked.statusCode).toBe(200);
    expect(await keysVia(a.app, k.key)).toBe(401);
    await waitFor(async () => ((await keysVia(b, k.key)) === 401 ? true : undefined), 5000, 'b to refuse the key');
    // Keys that were not revoked are not affected.
    const other = await newKey();
    expect(await keysVia(b, other.key)).toBe(200);
  });

  it.skipIf(!onPostgres)('a lost LISTEN connection empties the cache once it is back (PostgreSQL)', async () => {
    const k = await newKey();
    expect(await keysVia(b, k.key)).toBe(200);
    // As if its notification had been sent while b's listener was away: never announced to b.
    await revokeSilently(k.id);
    expect(await keysVia(b, k.key)).toBe(200);
    const { rows } = await a.testDb.db.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
       WHERE application_name = $1 AND query ILIKE 'LISTEN%'`,
      [appName],
    );
    expect(rows[0].n).toBe(1);
    await waitFor(async () => ((await keysVia(b, k.key)) === 401 ? true : undefined), 10_000, 'b to refuse the key');
    expect(bLog).toContain('database: LISTEN connection re-established');
  });
});

describe('CredentialCache', () => {
  const admin = (keyId: string) => ({ kind: 'admin' as const, collectionId: 'c', keyId });

  it('keeps a read that started before a revocation out of the cache', () => {
    const cache = new CredentialCache(60_000);
    const token = cache.token();
    cache.dropKey('key_1'); // announced while the read ran
    cache.set('hash1', admin('key_1'), token);
    expect(cache.get('hash1')).toBeUndefined();
    cache.set('hash1', admin('key_1'), cache.token());
    expect(cache.get('hash1')).toEqual(admin('key_1'));
  });

  it('drops only the revoked key, by id', () => {
    const cache = new CredentialCache(60_000);
    cache.set('h1', admin('key_1'), cache.token());
    cache.set('h2', admin('key_2'), cache.token());
    cache.set('h3', null, cache.token());
    cache.dropKey('key_1');
    expect([cache.get('h1'), cache.get('h2'), cache.get('h3')]).toEqual([undefined, admin('key_2'), null]);
  });

  it('at its bound drops the oldest entry, one per insert, and expires entries after the TTL', () => {
    const cache = new CredentialCache(1000, 3);
    for (const h of ['h1', 'h2', 'h3', 'h4']) cache.set(h, null, cache.token(), 0);
    expect(cache.size).toBe(3);
    expect([cache.get('h1', 0), cache.get('h4', 0)]).toEqual([undefined, null]);
    expect(cache.get('h2', 999)).toBeNull();
    expect(cache.get('h2', 1000)).toBeUndefined();
    const off = new CredentialCache(0);
    off.set('h1', null, off.token());
    expect(off.size).toBe(0);
  });
});
