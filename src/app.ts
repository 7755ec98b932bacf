/**
 * Builds the application from its dependencies; it never listens. Tests build it and call
 * it through `inject`; server.ts builds it and listens. Platform plugins come first (errors,
 * request ids, OpenAPI, rate limits, auth), then each business module's routes under BASE_PATH.
 */
import { randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from './config.ts';
import { type Db, pendingMigrations } from './db/index.ts';
import { AppObjectsService, appObjectsRoutes, registerAppObjectTasks } from './modules/app-objects/index.ts';
import { CollectionsService, collectionsRoutes } from './modules/collections/index.ts';
import { exportTaskDefinition, InteractionsService, interactionsRoutes } from './modules/interactions/index.ts';
import { JobEngine, JobsService, jobsRoutes } from './modules/jobs/index.ts';
import { JourneysService, journeysRoutes } from './modules/journeys/index.ts';
import { LinksService, linksRoutes, parseTrustedProxies } from './modules/links/index.ts';
import { LocationsService, locationsRoutes } from './modules/locations/index.ts';
import { WebhooksService, webhooksRoutes } from './modules/webhooks/index.ts';
import { AuthFailureBudget, rateLimitKey, registerAuth } from './platform/auth.ts';
import { AppError, registerErrorHandling } from './platform/errors.ts';
import { httpServerOptions } from './platform/http-server.ts';
import { registerJsonBodyParser } from './platform/json-body.ts';
import { registerOpenApi } from './platform/openapi.ts';
import { ErrorBody } from './platform/schemas.ts';
import { buildValidatorCompiler } from './platform/validation.ts';

export interface AppDeps {
  config: Config;
  db: Db;
  /** Fastify logger options, or a pino logger the caller shares with the database; tests pass false. */
  logger?: FastifyServerOptions['logger'] | FastifyBaseLogger;
}

export interface Services {
  collections: CollectionsService;
  locations: LocationsService;
  appObjects: AppObjectsService;
  interactions: InteractionsService;
  journeys: JourneysService;
  links: LinksService;
  webhooks: WebhooksService;
  /** The job engine: modules register their tasks on it in buildApp. */
  jobs: JobEngine;
}

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    /** Resolves once no request handler is running (or after timeoutMs). */
    drain(timeoutMs: number): Promise<void>;
  }
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

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
    trustProxy: config.env.TRUSTED_PROXIES ? parseTrustedProxies(config.env.TRUSTED_PROXIES) : false,
    // A caller's own request id is kept when it is sane, so logs can be joined across services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
    // Fastify types this factory for its own Ajv pool; ours returns the same compiler shape.
    schemaController: { compilersFactory: { buildValidator: buildValidatorCompiler as never } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const services: Services = {
    collections: new CollectionsService(db, config),
    locations: new LocationsService(db),
    appObjects: new AppObjectsService(db, config),
    interactions: new InteractionsService(db, config),
    journeys: new JourneysService(db, config),
    links: new LinksService(db, config, app.log),
    webhooks: new WebhooksService(db, config, app.log),
    jobs: new JobEngine(db, config, app.log),
  };
  services.links.useEvents(services.webhooks);
  services.webhooks.useJobs(services.jobs);
  app.decorate('services', services);
  registerAppObjectTasks(services.jobs, services.appObjects);
  services.jobs.registerTask(exportTaskDefinition());
  // Workers run in ROLE=all and ROLE=worker. preClose: the engine stops (and releases what it
  // could not finish) before any onClose hook closes the database.
  if (config.role !== 'api') {
    app.addHook('onReady', () => services.jobs.start());
    app.addHook('preClose', () => services.jobs.stop());
  }

  registerErrorHandling(app);
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
  app.addHook('onSend', (_req, _reply, payload, done) => {
    inFlight = Math.max(0, inFlight - 1);
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
  await registerOpenApi(app, config);

  await app.register(rateLimit, {
    global: true,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindowMs,
    // Per verified principal (admin key id, user and collection, super admin), else per
    // client address. Failed authentications never reach this: they have their own budget.
    keyGenerator: rateLimitKey,
    errorResponseBuilder: (_req, ctx) =>
      new AppError(429, 'RATE_LIMITED', `Rate limit exceeded: ${ctx.max} requests per ${ctx.after}; retry later`),
  });

  registerAuth(
    app,
    services.collections.resolveCredential,
    (id) => services.collections.collectionExists(id),
    new AuthFailureBudget(config.authFailureLimit, config.authFailureWindowMs),
  );

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

  await app.register(
    async (scoped) => {
      await scoped.register(collectionsRoutes, { service: services.collections });
      await scoped.register(locationsRoutes, { service: services.locations });
      await scoped.register(appObjectsRoutes, { service: services.appObjects });
      await scoped.register(interactionsRoutes, { service: services.interactions, db });
      await scoped.register(journeysRoutes, { service: services.journeys });
      await scoped.register(linksRoutes, { service: services.links });
      await scoped.register(webhooksRoutes, { service: services.webhooks });
      await scoped.register(jobsRoutes, { service: new JobsService(db, services.jobs) });
    },
    { prefix: config.basePath },
  );

  return app;
}
