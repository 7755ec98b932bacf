/**
 * Runs the service: reads config, opens the database, applies migrations, builds the app
 * and listens. On SIGTERM/SIGINT it stops accepting connections, lets in-flight requests
 * finish (bounded by SHUTDOWN_TIMEOUT_MS), then closes the database cleanly.
 *
 * Roles: `all` (default) serves HTTP and runs background workers in one process; `api`
 * serves HTTP only; `worker` runs background work only (no HTTP listener; supervise the
 * process). Workers start on app ready and stop first on close (see buildApp).
 */
// First, as a module of its own: traces, when configured, start before pg and Fastify are
// loaded (platform/tracing.ts, "Order").
import './platform/tracing.ts';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Role } from './config.ts';
import { DataDirLockedError, migrate, openDatabase } from './db/index.ts';
import { generatedSuperAdminKey } from './modules/collections/index.ts';
import { createLogger, logFormat, startBanner } from './platform/logging.ts';
import { listenForScrapes } from './platform/metrics.ts';
import { stopTracing } from './platform/tracing.ts';

function parseRoleFlag(argv: string[]): Role | undefined {
  const i = argv.indexOf('--role');
  const value = i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith('--role='))?.slice('--role='.length);
  return value as Role | undefined;
}

async function main(): Promise<void> {
  const roleFlag = parseRoleFlag(process.argv.slice(2));
  let config = loadConfig(roleFlag ? { ...process.env, ROLE: roleFlag } : process.env);
  // One logger for the database layer and the app: connection trouble shows in the same log.
  const format = logFormat(config.logFormat, process.stdout.isTTY === true);
  const log = createLogger(config.logLevel, format);
  const db = await openDatabase({ ...config, log, owner: `server (role ${config.role})` });
  await migrate(db);
  let generatedKey: string | undefined;
  if (!config.env.SUPER_ADMIN_KEY) {
    const { key, generated } = await generatedSuperAdminKey(db);
    // The collections module reads SUPER_ADMIN_KEY from the environment it is given.
    config = { ...config, env: { ...config.env, SUPER_ADMIN_KEY: key } };
    if (generated) generatedKey = key;
  }
  const app = await buildApp({ config, db, logger: log });
  // At a terminal the start banner shows the key instead; a worker prints no banner.
  if (generatedKey && (format === 'json' || config.role === 'worker')) {
    app.log.warn(
      { superAdminKey: generatedKey },
      'SUPER_ADMIN_KEY is unset: generated a super admin key and stored it in the database. It is printed only now (`npm run cli -- super-key` shows it again). Set SUPER_ADMIN_KEY in production.',
    );
  }
  app.addHook('onClose', async () => {
    await app.drain(config.shutdownTimeoutMs);
    await db.close();
  });
  const { port: metricsPort } = config.metrics;
  if (metricsPort !== undefined) {
    // Any role: a worker's jobs and deliveries are counted in its own registry.
    const scrapes = await listenForScrapes(app.metrics.registry, { ...config.metrics, port: metricsPort }, config.host);
    app.addHook('onClose', () => {
      const closed = new Promise<void>((resolve) => scrapes.close(() => resolve()));
      // A scraper keeps its connection alive between scrapes: it must not hold the stop.
      scrapes.closeAllConnections();
      return closed;
    });
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      app.log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    try {
      await app.close();
      await stopTracing();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  const storage = config.databaseUrl ? 'postgres' : `pglite:${config.dataDir}`;
  if (config.role === 'worker') {
    // Without a listener socket nothing else keeps a worker's event loop alive: its timers are
    // unref'd, and while the database is away it holds no connection either. It runs until a
    // signal stops it.
    const keepAlive = setInterval(() => {}, 60_000);
    app.addHook('onClose', async () => clearInterval(keepAlive));
    await app.ready();
    app.log.info(
      { role: config.role, storage, concurrency: app.services.jobs.engine.settings.concurrency },
      'worker started',
    );
    return;
  }
  await app.listen({ port: config.port, host: config.host });
  const { port } = app.server.address() as { port: number };
  const address = `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${port}`;
  if (format === 'pretty') {
    // A person at a terminal: where to go next, and the generated key once, in a few lines.
    app.log.info(
      startBanner({ address, basePath: config.basePath, role: config.role, storage, generatedSuperKey: generatedKey }),
    );
  } else {
    app.log.info({ role: config.role, storage, basePath: config.basePath || '/', address }, 'service ready');
  }
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    console.error(`Configuration error: ${err.message}`);
  } else if (err instanceof DataDirLockedError) {
    // Another server, or a CLI command, owns the embedded database: starting beside it would
    // read and write a copy it does not see.
    console.error(`${err.message} Stop that process first, or give this one another DATA_DIR.`);
  } else {
    console.error(err);
  }
  process.exit(1);
});
