/**
 * The Redis connection of an API process, for what several processes must count together:
 * the request rate limits and the failed-authentication budget (platform/rate-limit.ts).
 *
 * Redis is a helper here, never something the API waits on. While it is away, a command is
 * refused at once (no offline queue piling up requests, a short connect and command timeout)
 * and the caller serves the request uncounted: fail open. The client reconnects by itself,
 * and counting resumes with it. The log says so once when it happens, then at most once a
 * minute, not once per request (`FailOpenLog`).
 */
import { Redis } from 'ioredis';
import { ConfigError, type Env, intFrom } from './settings.ts';

export interface RedisSettings {
  url: string;
  /** Put before every key this service writes, so deployments (and test runs) can share one Redis. */
  keyPrefix: string;
  /** How long connecting may take before the attempt is given up and retried. */
  connectTimeoutMs: number;
  /** How long a request waits for Redis's answer before it is served uncounted (fail open). */
  commandTimeoutMs: number;
}

/** REDIS_URL and its companions; undefined when REDIS_URL is unset (counts stay in process). */
export function redisSettings(env: Env): RedisSettings | undefined {
  const url = env.REDIS_URL || undefined;
  if (url === undefined) return undefined;
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {}
  // The value is not echoed: it may hold a password.
  if (protocol !== 'redis:' && protocol !== 'rediss:')
    throw new ConfigError('REDIS_URL must be a redis:// or rediss:// address');
  const keyPrefix = env.REDIS_KEY_PREFIX ?? 'collection-platform:';
  if (keyPrefix.length > 100) throw new ConfigError('REDIS_KEY_PREFIX must be at most 100 characters long');
  return {
    url,
    keyPrefix,
    connectTimeoutMs: intFrom(env, 'REDIS_CONNECT_TIMEOUT_MS', 1000, 50, 60_000),
    commandTimeoutMs: intFrom(env, 'REDIS_COMMAND_TIMEOUT_MS', 500, 10, 60_000),
  };
}

/** Where connection trouble is reported (a pino logger fits). */
export interface RedisLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export function describeError(err: unknown): { message: string; code?: string } {
  const e = err as { message?: string; code?: string };
  return { message: String(e?.message ?? err), code: e?.code };
}

/** The longest wait between two attempts to reconnect. */
const RECONNECT_MAX_MS = 2000;

/**
 * A client that fails fast while disconnected and reconnects for ever, 100 ms doubling to 2 s.
 * Its connection state is logged once per outage (lost, then re-established).
 */
export function openRedis(settings: RedisSettings, log: RedisLog): Redis {
  const redis = new Redis(settings.url, {
    // Refused at once while not connected, instead of queued until Redis returns: a queue
    // would hold every request of an outage (and its memory) for as long as it lasts.
    enableOfflineQueue: false,
    // A command in flight when the connection drops fails now; it is not resent later.
    maxRetriesPerRequest: 0,
    connectTimeout: settings.connectTimeoutMs,
    // A Redis that accepts connections but does not answer (stopped, overloaded) must not
    // hold requests either.
    commandTimeout: settings.commandTimeoutMs,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times - 1, 10), RECONNECT_MAX_MS),
  });
  let down = false;
  let closing = false;
  const lost = (err?: unknown) => {
    if (down || closing) return;
    down = true;
    log.warn(
      { err: err === undefined ? undefined : describeError(err) },
      'redis: connection lost or refused; reconnecting (rate limits fail open meanwhile)',
    );
  };
  // Without a listener, ioredis prints every failed reconnect attempt itself.
  redis.on('error', lost);
  redis.on('close', () => {
    if (redis.status !== 'end') lost();
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({}, 'redis: connection re-established');
  });
  redis.once('end', () => {
    closing = true;
  });
  return redis;
}

/**
 * Resolves true once the client is ready, false at its first failure or after `timeoutMs`;
 * never throws. The client goes on reconnecting either way.
 */
export async function redisReady(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return true;
  return new Promise((resolve) => {
    const done = (ready: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      resolve(ready);
    };
    const onReady = () => done(true);
    const onError = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}

/** Closes the client: its pending answers are awaited briefly, then the socket is dropped. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') await redis.quit().catch(() => {});
  redis.disconnect();
}

/**
 * What a counter let through uncounted while Redis was away: a warning when the first request
 * of an outage goes uncounted, again at most once per `everyMs` while it lasts (with how many
 * went uncounted so far), and one line when counting resumes. `ok()` is on every request's
 * path, so it costs one comparison while Redis answers.
 */
export class FailOpenLog {
  private failing = false;
  private uncounted = 0;
  private lastWarning = 0;

  constructor(
    private readonly log: RedisLog,
    /** What is not being counted, the log lines' prefix (e.g. `rate limit`). */
    private readonly what: string,
    /** What happens meanwhile, for the warning. */
    private readonly meanwhile: string,
    private readonly everyMs = 60_000,
  ) {}

  failed(err: unknown): void {
    this.uncounted++;
    const now = Date.now();
    if (!this.failing || now - this.lastWarning >= this.everyMs) {
      this.lastWarning = now;
      this.log.warn(
        { err: describeError(err), uncounted: this.uncounted },
        `${this.what}: Redis unavailable; ${this.meanwhile} (fail open)`,
      );
    }
    this.failing = true;
  }

  ok(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.info({ uncounted: this.uncounted }, `${this.what}: Redis answers again; counting resumed`);
    this.uncounted = 0;
  }
}
