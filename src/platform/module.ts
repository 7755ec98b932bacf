/**
 * A module's one face to the application: its manifest. `buildApp` (src/app.ts) knows the
 * modules only through these, and builds them in one loop, in dependency order:
 *
 *   settings(env)  its own environment keys, parsed once at start-up (a bad value stops the
 *                  process with a message naming the variable);
 *   create(...)    its service, from the platform (database, logger, role, public address),
 *                  its settings and the services of the modules it `needs`, all passed to
 *                  constructors, so nothing is wired later and nothing can be forgotten;
 *   routes         a Fastify plugin given the service, registered under BASE_PATH;
 *   tasks(...)     its background tasks (platform/tasks.ts), registered on the job engine;
 *   events         the events it publishes (platform/events.ts), gathered into the catalogue;
 *   lifecycle(...) what it runs in the background in a role: started once the app is ready,
 *                  stopped in reverse dependency order before the database closes, after the
 *                  requests still running have finished.
 *
 * Trade-off: the loop hands `create` its dependencies by name, so their types are checked
 * where each manifest states them (`needs` and the `Deps` type), not by the loop; buildApp
 * fails at start-up when a module names one that is not built before it.
 */
import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { Db } from '../db/index.ts';
import type { EventDefinition } from './events.ts';
import type { Route } from './routes.ts';
import type { Env } from './settings.ts';
import type { TaskDefinition } from './tasks.ts';

/** What a process does: serve HTTP, run background work, or both. */
export type Role = 'api' | 'worker' | 'all';

/** The service-wide settings a module may read (parsed by src/config.ts). */
export interface PlatformSettings {
  role: Role;
  /** The service's public address with BASE_PATH, no trailing slash (short links are built on it). */
  publicBaseUrl: string;
  /** SHUTDOWN_TIMEOUT_MS: the whole budget of a graceful stop. */
  shutdownTimeoutMs: number;
}

/** What the platform hands every module. */
export interface Platform extends PlatformSettings {
  db: Db;
  log: FastifyBaseLogger;
}

/** Background work of a module in one process. */
export interface Lifecycle {
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

export interface ModuleManifest<Settings = unknown, Deps = unknown, Service = unknown> {
  name: string;
  /** Modules whose services `create` receives, by name; they are built before this one. */
  needs: readonly string[];
  /** Its own environment keys, parsed once; a bad value throws ConfigError. */
  settings(env: Env, platform: PlatformSettings): Settings;
  create(platform: Platform, settings: Settings, deps: Deps): Service;
  /** Its HTTP routes (platform/routes.ts), registered under BASE_PATH. */
  routes?(service: Service): readonly Route[];
  /** TRANSITION: a Fastify plugin given the service (being replaced by `routes`). */
  plugin?: FastifyPluginAsync<{ service: Service }>;
  tasks?(service: Service): TaskDefinition[];
  /** The event types it publishes, with their schemas (the webhooks module's catalogue). */
  events?: readonly EventDefinition[];
  lifecycle?(service: Service, role: Role): Lifecycle | undefined;
}

/** Keeps a manifest's own types while giving it the shape the loop reads. */
export const defineModule = <Settings, Deps, Service>(m: ModuleManifest<Settings, Deps, Service>) => m;

/** A module that reads no environment keys of its own. */
export const noSettings = (): undefined => undefined;
