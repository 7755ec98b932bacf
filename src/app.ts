/**
 * Builds the application from its dependencies; it never listens. Tests build it and call
 * it through `inject`; server.ts builds it and listens. The business modules are built in
 * one loop over their manifests (platform/module.ts), in dependency order; then come the
 * platform plugins (errors, request ids, OpenAPI, rate limits, auth), then each module's
 * routes under BASE_PATH.
 */
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from 'fastify';
import type { Config } from './config.ts';
import { analyticsRunner, type Db, pendingMigrations } from './db/index.ts';
import { appObjectsModule } from './modules/app-objects/index.ts';
import { collectionsModule } from './modules/collections/index.ts';
import { consoleModule } from './modules/console/index.ts';
import { httpTasksModule } from './modules/http-tasks/index.ts';
import { interactionsModule } from './modules/interactions/index.ts';
import { jobsModule } from './modules/jobs/index.ts';
import { journeysModule } from './modules/journeys/index.ts';
import { linksModule } from './modules/links/index.ts';
import { locationsModule } from './modules/locations/index.ts';
import { schedulesModule } from './modules/schedules/index.ts';
import { webhooksModule } from './modules/webhooks/index.ts';
import { limitAnalytics } from './platform/analytics-slots.ts';
import { AuthFailureBudget, registerAuth } from './platform/auth.ts';
import { AppError, registerErrorHandling } from './platform/errors.ts';
import { httpServerOptions } from './platform/http-server.ts';
import { registerJsonBodyParser } from './platform/json-body.ts';
import { logRequests } from './platform/logging.ts';
import { AppMetrics, METRICS_PATH } from './platform/metrics.ts';
import { buildModules, type ServicesOf } from './platform/module.ts';
import { registerOpenApi } from './platform/openapi.ts';
import { RedisFailureCount, registerRateLimit } from './platform/rate-limit.ts';
import { closeRedis, openRedis, redisReady } from './platform/redis.ts';
import { registerRoutes } from './platform/routes.ts';
import { ErrorBody } from './platform/schemas.ts';
import { buildSerializerCompiler, buildValidatorCompiler } from './platform/validation.ts';

export interface AppDeps {
  config: Config;
  db: Db;
  /** Fastify logger options, or a pino logger the caller shares with the database; tests pass false. */
  logger?: FastifyServerOptions['logger'] | FastifyBaseLogger;
}

/**
 * The modules, in dependency order: a module comes after every module it `needs`. Their
 * routes are registered in this order too.
 */
const MODULES = [
  collectionsModule,
  locationsModule,
  jobsModule,
  schedulesModule,
  webhooksModule,
  httpTasksModule,
  linksModule,
  appObjectsModule,
  interactionsModule,
  journeysModule,
  consoleModule,
] as const;

/** Each module's service, by module name (tests reach them through `app.services`). */
export type Services = ServicesOf<typeof MODULES>;

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** The app's Prometheus registry (GET /metrics; server.ts serves it on METRICS_PORT too). */
    metrics: AppMetrics;
    /** Resolves once no request handler is running (or after timeoutMs). */
    drain(timeoutMs: number): Promise<void>;
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The collection a request is about: the path's, else its credential's. */
function collectionOf(req: FastifyRequest): string | undefined {
  const fromPath = (req.params as { collectionId?: unknown } | undefined)?.collectionId;
  if (typeof fromPath === 'string') return fromPath;
  const p = req.principal as { collectionId?: string } | null;
  return p?.collectionId;
}

export async function buildApp({ config, db, logger }: AppDeps): Promise<FastifyInstance> {
  const loggerOption =
    logger && typeof (logger as FastifyBaseLogger).child === 'function'
      ? { loggerInstance: logger as FastifyBaseLogger }
      : { logger: (logger as FastifyServerOptions['logger']) ?? { level: config.logLevel } };
  const app = Fastify({
    ...loggerOption,
    bodyLimit: config.bodyLimitBytes,
    // Timeouts, and the error body for what Node's parser and Fastify's router refuse.
    ...httpServerOptions(config),
    // req.ip (the address rate limits count by) is the X-Forwarded-For client behind a trusted
    // proxy, as for clicks; otherwise every client of a load balancer would share one budget.
    trustProxy: config.trustedProxies ?? false,
    // A caller's own request id is kept when it is sane, so logs can be joined across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    // One line per request, written when it is answered (platform/logging.ts), not two. Errors
    // are logged by platform/errors.ts.
    logController: new LogController({ disableRequestLogging: true }),
    // Fastify types these factories for its own pools; ours return the same compiler shapes.
    schemaController: {
      compilersFactory: { buildValidator: buildValidatorCompiler as never, buildSerializer: buildSerializerCompiler },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  logRequests(app);
  // Before any route: each route gets its request count as it is registered (unless
  // METRICS_ENABLED=false: then no route pays for it).
  const metrics = new AppMetrics();
  const requests = config.metrics.enabled ? metrics.countRequests(app) : undefined;
  metrics.watchDatabase(db);
  const analytics = limitAnalytics(analyticsRunner(db, config.analyticsWorkMemMb), {
    concurrency: config.analyticsConcurrency,
    waitMs: config.analyticsWaitMs,
    timeoutMs: config.analyticsTimeoutMs,
  });
  metrics.watchAnalytics(analytics.slots);
  app.decorate('metrics', metrics);

  const { services, background, routes, plugins } = buildModules(
    MODULES,
    {
      db,
      log: app.log,
      role: config.role,
      publicBaseUrl: config.publicBaseUrl,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
      trustedProxies: config.trustedProxies ?? (() => false),
      analytics,
      metrics,
    },
    config.env,
  );
  for (const m of MODULES) services.webhooks.catalogue.add(m.events ?? []);
  // The jobs module is built before webhooks (which queue on it), so its events go out through
  // a publisher given here: job.completed and job.failed of visible tasks.
  services.jobs.publishEventsTo(services.webhooks);
  app.decorate('services', services);
  // Background work starts once the app is ready, in dependency order. It stops in preClose,
  // before any onClose hook closes the database: first the requests still running finish
  // (new ones are answered 503 by then), so that what they leave behind (buffered clicks,
  // enqueued jobs) is handled; then the modules stop in reverse order (links store their last
  // clicks while the job engine still runs; the engine releases what it could not finish).
  app.addHook('onReady', async () => {
    for (const b of background) await b.start();
  });
  app.addHook('preClose', async () => {
    // Long polls answer now rather than hold the drain below for their whole wait.
    for (const b of background) b.closing?.();
    await app.drain(config.shutdownTimeoutMs);
    for (const b of [...background].reverse()) await b.stop();
  });

  registerErrorHandling(app, requests?.notFound);
  // Handlers still running for a client that hung up keep no socket open, so the server's own
  // close does not wait for them; this count lets shutdown wait before closing the database.
  // Callback-style hooks: they run on every request (redirects included), and skipping the
  // promise of an async hook is measurable there.
  let inFlight = 0;
  app.addHook('onRequest', (req, reply, done) => {
    inFlight++;
    reply.header('x-request-id', req.id);
    done();
  });
  app.addHook('onSend', (req, _reply, payload, done) => {
    inFlight = Math.max(0, inFlight - 1);
    // Read-your-writes: a request that may have written keeps its collection's reads on the
    // primary until a read replica has replayed it (db/client.ts, `Db.read`). Marked before the
    // answer leaves, so the caller's next request already sees the mark.
    if (!READ_ONLY_METHODS.has(req.method) && !req.routeOptions.config?.reads) {
      const collectionId = collectionOf(req);
      if (collectionId) db.wrote(collectionId);
    }
    done(null, payload);
  });
  app.decorate('drain', async (timeoutMs: number) => {
    const until = Date.now() + timeoutMs;
    while (inFlight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  });
  // JSON only: anything else is a 415, not a string handed to a schema that wants an object.
  app.removeContentTypeParser('text/plain');
  registerJsonBodyParser(app, config.env);
  app.addSchema(ErrorBody);
  await registerOpenApi(app, config, services.webhooks.catalogue.openApiWebhooks());

  // Counts shared by every API process (REDIS_URL), else kept in this one. A worker serves no
  // requests and opens no connection to Redis.
  const shared =
    config.redis && config.role !== 'worker'
      ? { ...config.redis, redis: openRedis(config.redis, app.log), log: app.log }
      : undefined;
  if (shared) {
    // The first requests should be counted too; if Redis is away, they are served uncounted
    // rather than held (the connection keeps being retried).
    app.addHook('onReady', async () => {
      if (!(await redisReady(shared.redis, shared.connectTimeoutMs))) {
        app.log.warn({}, 'redis: not reachable at start; serving requests uncounted until it is');
      }
    });
    app.addHook('onClose', () => closeRedis(shared.redis));
  }
  await registerRateLimit(
    app,
    { max: config.rateLimitMax, windowMs: config.rateLimitWindowMs, collectionMax: config.rateLimitCollectionMax },
    shared,
  );

  registerAuth(
    app,
    services.collections.resolveCredential,
    (id) => services.collections.collectionExists(id),
    new AuthFailureBudget(
      config.authFailureLimit,
      config.authFailureWindowMs,
      undefined,
      shared && new RedisFailureCount(shared.redis, shared.keyPrefix, shared.log),
    ),
    new Set(config.metrics.enabled && config.metrics.token ? [METRICS_PATH] : []),
  );

  // The service's root, where a newcomer lands first: a browser goes on to the console, any
  // other client gets the addresses of the console, the API docs and the probes.
  const base = config.basePath;
  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    if ((req.headers.accept ?? '').includes('text/html')) return reply.redirect(`${base}/console`, 302);
    return {
      service: 'collection-platform',
      console: `${base}/console`,
      docs: `${base}/docs`,
      openapi: `${base}/openapi.json`,
      health: '/healthz',
      ready: '/readyz',
    };
  });

  // Probes. /readyz checks the migrations once, then asks the database on every call, so a load
  // balancer takes the node out while the database is away and back by itself when it returns.
  // They are not rate limited: a load balancer probes from one address, often many times a
  // second, and a 429 there would take a healthy node out of service.
  let migrated = false;
  const probe = { schema: { hide: true }, config: { rateLimit: false } } as const;
  app.get('/healthz', probe, async () => ({ status: 'ok' }));
  app.get('/readyz', probe, async () => {
    const unreachable = () => new AppError(503, 'NOT_READY', 'The database is not reachable');
    if (!migrated) {
      const pending = await pendingMigrations(db).catch(() => {
        throw unreachable();
      });
      if (pending.length > 0) throw new AppError(503, 'NOT_READY', `Migrations pending: ${pending.join(', ')}`);
      migrated = true;
    } else {
      await db.query('SELECT 1').catch(() => {
        throw unreachable();
      });
    }
    return { status: 'ready', listener: db.status().listener };
  });
  // Prometheus' scrape, beside the probes (docs/operations.md, "Metrics and traces").
  if (config.metrics.enabled) metrics.serve(app, config.metrics);

  await app.register(
    async (scoped) => {
      for (const p of plugins) await scoped.register(p.plugin, { service: p.service });
      registerRoutes(scoped, routes);
    },
    { prefix: config.basePath },
  );

  return app;
}
