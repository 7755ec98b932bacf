/**
 * One typed configuration, parsed once from the environment at start-up.
 * A bad value stops the process with a message naming the variable, instead of
 * surfacing later as a confusing runtime error. Every key is documented in
 * docs/configuration.md and .env.example.
 */

import { parseDatabaseUrl, parseReadUrls } from './db/hosts.ts';
import { parseTrustedProxies, type TrustedProxies } from './platform/client-address.ts';
import { type MetricsSettings, metricsSettings } from './platform/metrics.ts';
import type { Role } from './platform/module.ts';
import { type RedisSettings, redisSettings } from './platform/redis.ts';
import { ConfigError, type Env, intFrom } from './platform/settings.ts';

export type { Role };

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /** Connections per process in the PostgreSQL pool. */
  databasePoolSize: number;
  /** How long a request waits for a pooled connection before it is answered 503. */
  databaseConnectTimeoutMs: number;
  /** DATABASE_READ_URL: read replicas' addresses (PostgreSQL only); empty without. */
  databaseReadUrls: string[];
  /** DATABASE_READ_MAX_LAG_MS: a replica further behind the primary is skipped. */
  databaseReadMaxLagMs: number;
  /** DATABASE_READ_CHECK_MS: how often each replica's state and lag are measured. */
  databaseReadCheckMs: number;
  basePath: string;
  publicBaseUrl: string;
  logLevel: string;
  /** LOG_FORMAT: `pretty` or `json`; unset, by whether standard output is a terminal (platform/logging.ts). */
  logFormat: 'pretty' | 'json' | undefined;
  role: Role;
  bodyLimitBytes: number;
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /** Requests per window of one collection, all its admin keys and users together. */
  rateLimitCollectionMax: number;
  /** Failed authentications one client address may make per window before it is refused. */
  authFailureLimit: number;
  authFailureWindowMs: number;
  /**
   * REDIS_URL and its companions: where the rate-limit counts and the failed-authentication
   * budget live when several processes must share them; undefined keeps them in process memory.
   */
  redis: RedisSettings | undefined;
  /** Server timeouts (see docs/configuration.md, "HTTP server"). */
  httpHeadersTimeoutMs: number;
  httpRequestTimeoutMs: number;
  httpKeepAliveTimeoutMs: number;
  httpIdleTimeoutMs: number;
  shutdownTimeoutMs: number;
  /** ANALYTICS_WORK_MEM_MB (formerly INTERACTIONS_ANALYTICS_WORK_MEM_MB, still read): work_mem of analytics transactions. */
  analyticsWorkMemMb: number;
  /** ANALYTICS_CONCURRENCY, ANALYTICS_WAIT_MS: analytics reads at once, and a read's wait for a slot (platform/analytics-slots.ts). */
  analyticsConcurrency: number;
  analyticsWaitMs: number;
  /** ANALYTICS_TIMEOUT_MS: how long a request's analytics read may run once it has its slot (platform/analytics-slots.ts). */
  analyticsTimeoutMs: number;
  /** TRUSTED_PROXIES: peers whose X-Forwarded-For names the client (rate limits, clicks); undefined: none. */
  trustedProxies: TrustedProxies | undefined;
  /** METRICS_ENABLED, METRICS_TOKEN, METRICS_PORT: the Prometheus endpoint (platform/metrics.ts). */
  metrics: MetricsSettings;
  /** Module-specific settings are read through this so each module parses its own keys once. */
  env: Readonly<Record<string, string | undefined>>;
}

export { ConfigError };

function normaliseBasePath(raw: string | undefined): string {
  if (!raw || raw === '/') return '';
  if (!/^\/[A-Za-z0-9/_.-]*$/.test(raw))
    throw new ConfigError(`BASE_PATH must start with "/" and hold only path characters, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

function parseLogFormat(raw: string | undefined): 'pretty' | 'json' | undefined {
  if (!raw) return undefined;
  if (raw !== 'pretty' && raw !== 'json') throw new ConfigError(`LOG_FORMAT must be pretty or json, got "${raw}"`);
  return raw;
}

export function loadConfig(env: Env = process.env): Config {
  const port = intFrom(env, 'PORT', 3000, 0, 65535);
  // This machine only unless told otherwise: a first `npm start` has a fresh super key live, and
  // must not answer the network with it. A deployment sets HOST=0.0.0.0 (docs/operations.md).
  const host = env.HOST || '127.0.0.1';
  const role = (env.ROLE || 'all') as Role;
  if (!['api', 'worker', 'all'].includes(role))
    throw new ConfigError(`ROLE must be api, worker or all, got "${env.ROLE}"`);
  const basePath = normaliseBasePath(env.BASE_PATH);
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl) parseDatabaseUrl(databaseUrl);
  const databaseReadUrls = parseReadUrls(env.DATABASE_READ_URL);
  // The embedded database is one process's: there is nothing to replicate from.
  if (databaseReadUrls.length && !databaseUrl)
    throw new ConfigError(
      'DATABASE_READ_URL needs DATABASE_URL: read replicas are PostgreSQL standbys, and the embedded database has none',
    );
  const publicBaseUrl = (env.PUBLIC_BASE_URL || `http://localhost:${port}${basePath}`).replace(/\/+$/, '');
  try {
    const u = new URL(publicBaseUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new ConfigError(`PUBLIC_BASE_URL must be an absolute http(s) address, got "${env.PUBLIC_BASE_URL}"`);
  }
  const rateLimitMax = intFrom(env, 'RATE_LIMIT_MAX', 6000, 1);
  const httpHeadersTimeoutMs = intFrom(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100);
  const httpRequestTimeoutMs = intFrom(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100);
  // Node refuses a headers timeout longer than the whole-request timeout it is part of.
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs)
    throw new ConfigError(
      `HTTP_HEADERS_TIMEOUT_MS (${httpHeadersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${httpRequestTimeoutMs})`,
    );
  const databasePoolSize = intFrom(env, 'DATABASE_POOL_SIZE', 10, 1, 1000);
  return {
    port,
    host,
    dataDir: env.DATA_DIR || './data',
    databaseUrl,
    databasePoolSize,
    databaseConnectTimeoutMs: intFrom(env, 'DATABASE_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    databaseReadUrls,
    databaseReadMaxLagMs: intFrom(env, 'DATABASE_READ_MAX_LAG_MS', 5000, 0, 3_600_000),
    databaseReadCheckMs: intFrom(env, 'DATABASE_READ_CHECK_MS', 1000, 100, 60_000),
    basePath,
    publicBaseUrl,
    logLevel: env.LOG_LEVEL || 'info',
    logFormat: parseLogFormat(env.LOG_FORMAT),
    role,
    bodyLimitBytes: intFrom(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    rateLimitMax,
    rateLimitWindowMs: intFrom(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1000),
    // Ten callers' worth by default: room for a collection's several keys and busy users,
    // while minting more of them no longer multiplies what one tenant may take.
    rateLimitCollectionMax: intFrom(env, 'RATE_LIMIT_COLLECTION_MAX', rateLimitMax * 10, 1),
    authFailureLimit: intFrom(env, 'AUTH_FAILURE_LIMIT', 30, 1),
    authFailureWindowMs: intFrom(env, 'AUTH_FAILURE_WINDOW_MS', 60_000, 1000),
    redis: redisSettings(env),
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    httpKeepAliveTimeoutMs: intFrom(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 72_000, 1000),
    httpIdleTimeoutMs: intFrom(env, 'HTTP_IDLE_TIMEOUT_MS', 120_000, 1000),
    shutdownTimeoutMs: intFrom(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0),
    trustedProxies: trustedProxiesFrom(env),
    metrics: metricsSettings(env),
    analyticsWorkMemMb: intFrom(
      env,
      env.ANALYTICS_WORK_MEM_MB ? 'ANALYTICS_WORK_MEM_MB' : 'INTERACTIONS_ANALYTICS_WORK_MEM_MB',
      64,
      1,
      4096,
    ),
    // Half the pool by default: the other half answers everything else meanwhile.
    analyticsConcurrency: intFrom(env, 'ANALYTICS_CONCURRENCY', Math.max(1, Math.floor(databasePoolSize / 2)), 1, 1000),
    analyticsWaitMs: intFrom(env, 'ANALYTICS_WAIT_MS', 10_000, 0, 600_000),
    analyticsTimeoutMs: intFrom(env, 'ANALYTICS_TIMEOUT_MS', 30_000, 100, 3_600_000),
    env,
  };
}

function trustedProxiesFrom(env: Env): TrustedProxies | undefined {
  if (!env.TRUSTED_PROXIES?.trim()) return undefined;
  try {
    return parseTrustedProxies(env.TRUSTED_PROXIES);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}
