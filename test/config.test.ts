import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

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
      superAdminFeatures: ['adminApps'],
      role: 'all',
      bodyLimitBytes: 1024 * 1024,
      authFailureLimit: 30,
      authFailureWindowMs: 60_000,
      httpHeadersTimeoutMs: 10_000,
      httpRequestTimeoutMs: 30_000,
      httpKeepAliveTimeoutMs: 72_000,
      httpIdleTimeoutMs: 120_000,
    });
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
      [{ SUPER_ADMIN_KEY: 'short' }, 'SUPER_ADMIN_KEY'],
      [{ AUTH_SECRET: 'short' }, 'AUTH_SECRET'],
      [{ DATABASE_POOL_SIZE: '0' }, 'DATABASE_POOL_SIZE'],
      [{ RATE_LIMIT_MAX: '-1' }, 'RATE_LIMIT_MAX'],
      [{ AUTH_FAILURE_LIMIT: '0' }, 'AUTH_FAILURE_LIMIT'],
      [{ HTTP_HEADERS_TIMEOUT_MS: '0' }, 'HTTP_HEADERS_TIMEOUT_MS'],
      [{ HTTP_HEADERS_TIMEOUT_MS: '40000' }, 'HTTP_HEADERS_TIMEOUT_MS'], // longer than the request timeout
      [{ HTTP_KEEP_ALIVE_TIMEOUT_MS: 'forever' }, 'HTTP_KEEP_ALIVE_TIMEOUT_MS'],
    ] as const) {
      expect(() => loadConfig(env), name).toThrow(ConfigError);
      expect(() => loadConfig(env), name).toThrow(name);
    }
  });
});
