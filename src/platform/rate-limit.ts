/**
 * Where the rate-limit counts live. Without REDIS_URL, in process memory (@fastify/rate-limit's
 * own store): each process counts on its own, so N processes behind a load balancer give a
 * caller N times RATE_LIMIT_MAX, and a restart forgets every count. With REDIS_URL, in Redis
 * (the plugin's built-in Redis store, one atomic script per request): every process counts
 * against one budget per caller, and a restart forgets nothing.
 *
 * A Redis outage must not take the API down: a request whose count cannot be had (Redis away,
 * or not answering within REDIS_COMMAND_TIMEOUT_MS) is served uncounted (the plugin's
 * `skipOnError`), and the log says so once, then at most once a minute (FailOpenLog). The
 * failed-authentication budget (platform/auth.ts) is shared the same way, with the same rule.
 *
 * Two request budgets: per caller (the plugin, `rateLimitKey`) and per collection (all its
 * admin keys and users together, RATE_LIMIT_COLLECTION_MAX). Without the second, a collection's
 * admin multiplies its share of the service by minting keys or user tokens. The collection's
 * count uses the same stores (in process, or in Redis under keys of its own) and the same
 * fail-open rule.
 */
import { createRequire } from 'node:module';
import rateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Redis } from 'ioredis';
import { rateLimitKey, type SharedFailureCount } from './auth.ts';
import { AppError } from './errors.ts';
import { FailOpenLog, type RedisLog } from './redis.ts';

type Store = Omit<FastifyRateLimitStore, 'child'> & { child(routeOptions: unknown): Store };
type StoreCallback = Parameters<FastifyRateLimitStore['incr']>[1];

// The plugin's Redis store is not among its typed exports; it is its own file of the package.
const RedisStore = createRequire(import.meta.url)('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  keyPrefix: string,
) => Store;

const LocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache: number,
) => Store;

/**
 * The plugin's Redis store, reporting each count it could not get to `outage` (the plugin
 * itself drops the error silently under `skipOnError`).
 */
function sharedStore(redis: Redis, keyPrefix: string, outage: FailOpenLog): FastifyRateLimitStoreCtor {
  return class SharedCounts implements Store {
    private readonly inner: Store;

    /** The plugin passes its options; `inner` is given only by `child`. */
    constructor(params: { continueExceeding?: boolean; exponentialBackoff?: boolean }, inner?: Store) {
      this.inner =
        inner ??
        new RedisStore(params.continueExceeding === true, params.exponentialBackoff === true, redis, keyPrefix);
    }

    incr(key: string, callback: StoreCallback, timeWindow: number, max: number): void {
      this.inner.incr(
        key,
        (err, result) => {
          if (err) outage.failed(err);
          else outage.ok();
          callback(err, result);
        },
        timeWindow,
        max,
      );
    }

    /** A route with limits of its own counts under keys of its own. */
    child(routeOptions: unknown): Store {
      return new SharedCounts({}, this.inner.child(routeOptions));
    }
  } as unknown as FastifyRateLimitStoreCtor;
}

export interface RateLimitSettings {
  /** Requests per window of one caller (admin key, user, super admin, anonymous address). */
  max: number;
  windowMs: number;
  /** Requests per window of one collection: every admin key and user of it together. */
  collectionMax: number;
}

/**
 * Collections counted in one process's memory at most. Past it the least recently seen
 * collection's count is forgotten (it starts afresh): far more tenants than one process
 * serves within a window.
 */
const LOCAL_COLLECTIONS = 100_000;

/**
 * The request limits of every route (routes opt out with `config: { rateLimit: false }`),
 * counted per verified principal, else per client address (`rateLimitKey`).
 */
export async function registerRateLimit(
  app: FastifyInstance,
  settings: RateLimitSettings,
  shared?: { redis: Redis; keyPrefix: string; log: RedisLog },
): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: settings.max,
    timeWindow: settings.windowMs,
    // Per verified principal (admin key id, user and collection, super admin), else per
    // client address. Failed authentications never reach this: they have their own budget.
    keyGenerator: rateLimitKey,
    errorResponseBuilder: (_req, ctx) =>
      new AppError(
        429,
        'RATE_LIMITED',
        `Rate limit exceeded: this caller's budget of ${ctx.max} requests per ${settings.windowMs / 1000} s is spent; retry in ${ctx.after}`,
        { budget: 'caller', limit: ctx.max, windowMs: settings.windowMs },
      ),
    ...(shared && {
      store: sharedStore(
        shared.redis,
        `${shared.keyPrefix}rate:`,
        new FailOpenLog(shared.log, 'rate limit', 'requests are served without being counted'),
      ),
      // Fail open: a request whose count cannot be had is served, not refused.
      skipOnError: true,
    }),
  });
  const collectionStore = shared
    ? new (
        sharedStore(
          shared.redis,
          `${shared.keyPrefix}rate-collection:`,
          new FailOpenLog(shared.log, 'collection budget', 'requests are served without being counted'),
        ) as unknown as new (
          params: object,
        ) => Store
      )({})
    : new LocalStore(false, false, LOCAL_COLLECTIONS);
  const collectionBudget = collectionLimiter(collectionStore, settings);
  // Every route the caller's budget covers, the collection's covers too: same opt-out.
  app.addHook('onRoute', (route) => {
    if (route.config?.rateLimit === false) return;
    const hooks = route.onRequest ?? [];
    route.onRequest = [...(Array.isArray(hooks) ? hooks : [hooks]), collectionBudget];
  });
}

/** The collection a request is counted against: that of its admin key or user token. */
function collectionOf(req: FastifyRequest): string | undefined {
  const p = req.principal;
  // The super admin is the operator, not a tenant; anonymous callers are counted by address
  // only, or anyone could spend a collection's budget on its public routes.
  return p?.kind === 'admin' || p?.kind === 'user' ? p.collectionId : undefined;
}

/**
 * The collection budget's onRequest hook. It runs after the caller's (added to the route after
 * the plugin's), so a request the caller's budget refused is not counted here.
 */
function collectionLimiter(store: Store, settings: RateLimitSettings): onRequestHookHandler {
  // Callback style, as app.ts's hooks that run on every request: a request of no collection
  // (anonymous, the super admin) passes without a promise.
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const collectionId = collectionOf(req);
    if (collectionId === undefined) return done();
    store.incr(
      collectionId,
      (err, count) => {
        // Fail open as the caller's budget does; the shared store has logged the outage.
        if (err || !count || count.current <= settings.collectionMax) return done();
        const wait = Math.max(1, Math.ceil(count.ttl / 1000));
        reply.header('retry-after', String(wait));
        done(
          new AppError(
            429,
            'RATE_LIMITED',
            `Rate limit exceeded: collection ${collectionId}'s budget of ${settings.collectionMax} requests per ${settings.windowMs / 1000} s (all its keys and users together) is spent; retry in ${wait} s`,
            { budget: 'collection', limit: settings.collectionMax, windowMs: settings.windowMs },
          ),
        );
      },
      settings.windowMs,
      settings.collectionMax,
    );
  };
}

/** One failure more for a key, with the window starting at the first: [failures, ms left]. */
const FAILURE_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;

interface FailureCommand {
  authFailure(key: string, windowMs: number): Promise<[number, number]>;
}

/** The failed-authentication budget's count in Redis (see AuthFailureBudget). */
export class RedisFailureCount implements SharedFailureCount {
  private readonly outage: FailOpenLog;

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    log: RedisLog,
  ) {
    redis.defineCommand('authFailure', { numberOfKeys: 1, lua: FAILURE_SCRIPT });
    this.outage = new FailOpenLog(log, 'failed-authentication budget', 'failures are counted in this process only');
  }

  async add(address: string, windowMs: number): Promise<{ failures: number; ttlMs: number } | undefined> {
    try {
      const [failures, ttlMs] = await (this.redis as unknown as FailureCommand).authFailure(
        `${this.keyPrefix}auth-failures:${address}`,
        windowMs,
      );
      this.outage.ok();
      return { failures, ttlMs: Math.max(0, ttlMs) };
    } catch (err) {
      this.outage.failed(err);
      return undefined;
    }
  }
}
