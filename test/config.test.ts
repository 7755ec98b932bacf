import { describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { collectionsSettings } from '../src/modules/collections/index.ts';
import { logFormat } from '../src/platform/logging.ts';
import { createTestDb } from './helpers/db.ts';

describe('config', () => {
  it('runs with no settings at all', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      dataDir: './data',
      databaseUrl: undefined,
      databasePoolSize: 10,
      basePath: '',
      publicBaseUrl: 'http://localhost:3000',
      role: 'all',
      bodyLimitBytes: 1024 * 1024,
      authFailureLimit: 30,
      authFailureWindowMs: 60_000,
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 30_000,
      httpKeepAliveTimeoutMs: 72_000,
      httpIdleTimeoutMs: 120_000,
      redis: undefined,
    });
  });

  it('reads the Redis settings only when REDIS_URL is set', () => {
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/2' }).redis).toEqual({
      url: 'redis://127.0.0.1:6379/2',
      keyPrefix: 'collection-platform:',
      connectTimeoutMs: 1000,
      commandTimeoutMs: 500,
    });
    expect(loadConfig({ REDIS_KEY_PREFIX: 'x:', REDIS_COMMAND_TIMEOUT_MS: 'soon' }).redis).toBeUndefined();
  });

  it('normalises the base path into the public address', () => {
    const c = loadConfig({ BASE_PATH: '/api/v1/', PORT: '8080' });
    expect(c.basePath).toBe('/api/v1');
    expect(c.publicBaseUrl).toBe('http://localhost:8080/api/v1');
  });

  it('fails fast, naming the variable, on a bad value', () => {
    for (const [env, name] of [
      [{ PORT: 'eighty' }, 'PORT'],
      [{ PORT: '70000' }, 'PORT'],
      [{ ROLE: 'boss' }, 'ROLE'],
      [{ BASE_PATH: 'api' }, 'BASE_PATH'],
      [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL'],
      [{ DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE'],
      [{ RATE_LIMIT_MAX: '-1' }, 'RATE_LIMIT_MAX'],
      [{ AUTH_FAILURE_LIMIT: '0' }, 'AUTH_FAILURE_LIMIT'],
      [{ HTTP_HEADERS_TIMEOUT_MS: '0' }, 'HTTP_HEADERS_TIMEOUT_MS'],
      [{ HTTP_HEADERS_TIMEOUT_MS: '40000' }, 'HTTP_HEADERS_TIMEOUT_MS'], // longer than the request timeout
      [{ HTTP_KEEP_ALIVE_TIMEOUT_MS: 'forever' }, 'HTTP_KEEP_ALIVE_TIMEOUT_MS'],
      [{ REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL'],
      [{ REDIS_URL: 'not a url' }, 'REDIS_URL'],
      [{ REDIS_URL: 'redis://h', REDIS_COMMAND_TIMEOUT_MS: '0' }, 'REDIS_COMMAND_TIMEOUT_MS'],
      [{ REDIS_URL: 'redis://h', REDIS_CONNECT_TIMEOUT_MS: 'soon' }, 'REDIS_CONNECT_TIMEOUT_MS'],
      [{ REDIS_URL: 'redis://h', REDIS_KEY_PREFIX: 'x'.repeat(101) }, 'REDIS_KEY_PREFIX'],
    ] as const) {
      expect(() => loadConfig(env), name).toThrow(ConfigError);
      expect(() => loadConfig(env), name).toThrow(name);
    }
  });

  it('module settings: each module reads its own keys, and a bad one stops the build naming it', async () => {
    expect(collectionsSettings({})).toMatchObject({ superAdminFeatures: ['adminApps'], authCacheTtlMs: 5000 });
    for (const name of ['SUPER_ADMIN_KEY', 'AUTH_SECRET'])
      expect(() => collectionsSettings({ [name]: 'short' })).toThrow(name);
    // The log: readable at a terminal, JSON elsewhere, unless LOG_FORMAT says which.
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow('LOG_FORMAT');
    expect(logFormat(loadConfig({}).logFormat, true)).toBe('pretty');
    expect(logFormat(loadConfig({}).logFormat, false)).toBe('json');
    expect(logFormat(loadConfig({ LOG_FORMAT: 'json' }).logFormat, true)).toBe('json');
    expect(logFormat(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, false)).toBe('pretty');
    // This machine only unless HOST says otherwise (a first start's super key is live).
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    // The analytics work_mem is the platform's (interactions and journeys share it); the older
    // name is still read.
    expect(loadConfig({}).analyticsWorkMemMb).toBe(64);
    expect(loadConfig({ INTERACTIONS_ANALYTICS_WORK_MEM_MB: '128' }).analyticsWorkMemMb).toBe(128);
    expect(
      loadConfig({ ANALYTICS_WORK_MEM_MB: '32', INTERACTIONS_ANALYTICS_WORK_MEM_MB: '128' }).analyticsWorkMemMb,
    ).toBe(32);
    for (const name of ['ANALYTICS_WORK_MEM_MB', 'INTERACTIONS_ANALYTICS_WORK_MEM_MB'])
      expect(() => loadConfig({ [name]: 'lots' })).toThrow(name);
    // Analytics reads take half the pool unless told otherwise, never none.
    expect(loadConfig({}).analyticsConcurrency).toBe(5);
    expect(loadConfig({ DATABASE_POOL_SIZE: '1' }).analyticsConcurrency).toBe(1);
    expect(loadConfig({ DATABASE_POOL_SIZE: '30', ANALYTICS_CONCURRENCY: '4' }).analyticsConcurrency).toBe(4);
    expect(() => loadConfig({ ANALYTICS_CONCURRENCY: '0' })).toThrow('ANALYTICS_CONCURRENCY');
    expect(() => loadConfig({ ANALYTICS_WAIT_MS: 'soon' })).toThrow('ANALYTICS_WAIT_MS');
    // A request's analytics read may run 30 s a statement unless told otherwise; never unbounded.
    expect(loadConfig({}).analyticsTimeoutMs).toBe(30_000);
    expect(loadConfig({ ANALYTICS_TIMEOUT_MS: '120000' }).analyticsTimeoutMs).toBe(120_000);
    for (const bad of ['0', '99', 'forever']) {
      expect(() => loadConfig({ ANALYTICS_TIMEOUT_MS: bad })).toThrow('ANALYTICS_TIMEOUT_MS');
    }
    expect(() => loadConfig({ TRUSTED_PROXIES: 'not-an-address' })).toThrow(ConfigError);
    const testDb = await createTestDb({ migrate: false });
    try {
      for (const [name, value] of [
        ['SUPER_ADMIN_KEY', 'short'],
        ['JOBS_LOCK_TIMEOUT_MS', 'soon'],
        ['WEBHOOK_TIMEOUT_MS', '5'],
        ['LINK_CODE_LENGTH', '99'],
        ['APP_THREAD_MAX_REPLIES', '0'],
      ] as const) {
        const build = () => buildApp({ config: loadConfig({ [name]: value }), db: testDb.db, logger: false });
        await expect(build(), name).rejects.toThrow(ConfigError);
        await expect(build(), name).rejects.toThrow(name);
      }
    } finally {
      await testDb.drop();
    }
  });
});
