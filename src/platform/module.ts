/**
 * A module's one face to the application: its manifest. `buildModules` knows the modules only
 * through these, and builds them in one loop, in dependency order:
 *
 *   needs          the manifests of the modules whose services it is built from (typed: `create`
 *                  receives `deps.<name>` as that module's service, with no cast anywhere);
 *   settings(env)  its own environment keys, parsed once at start-up (a bad value stops the
 *                  process with a message naming the variable), in its `*.settings.ts`;
 *   create(...)    its service, from the platform (database, logger, role, public address, the
 *                  job queue), its settings and the services it needs;
 *   routes(...)    its HTTP routes (platform/routes.ts), registered under BASE_PATH; `plugin`
 *                  for the little HTTP that is not a route of that vocabulary;
 *   tasks(...)     its background tasks (platform/tasks.ts), registered on the job queue;
 *   events         the events it publishes (platform/events.ts), gathered into the catalogue;
 *   tables         the tables it owns and the other modules' tables it reads (or hangs triggers
 *                  on): part of its boundary, checked against its SQL by test/boundaries.test.ts;
 *   background(...) what it runs in the background, each piece with the roles it runs in:
 *                  started once the app is ready, stopped in reverse order before the database
 *                  closes, after the requests still running have finished (`closing()`, when a
 *                  piece has it, runs before that wait: long polls end at once);
 *   housekeeping(...) its periodic upkeep (pruning, retention, compaction): functions with a
 *                  cadence, run by one process per tick among all the workers, not by a timer
 *                  in each.
 *
 * The job queue is a port of the platform (`Platform.queue`, platform/tasks.ts): the module that
 * provides it (`provides.queue`) binds it when it is built; the modules built after it enqueue
 * through it without naming that module. Housekeeping is a port in the same way: the module that
 * provides its runner (`provides.housekeeping`, the schedules module) is handed every module's
 * declared housekeeping once all are built, whatever their order.
 */
import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify';
import type { Analytics, Db, Queryable } from '../db/index.ts';
import type { TrustedProxies } from './client-address.ts';
import type { EventDefinition } from './events.ts';
import type { Metrics } from './metrics.ts';
import type { Route } from './routes.ts';
import type { Env } from './settings.ts';
import type { EnqueueOptions, JobQueue, QueuedJob, TaskBacklog, TaskDefinition } from './tasks.ts';

/** What a process does: serve HTTP, run background work, or both. */
export type Role = 'api' | 'worker' | 'all';

/** Roles as data, for `background`: every process, those that serve requests, those that run jobs. */
export const EVERY_ROLE: readonly Role[] = ['api', 'worker', 'all'];
export const SERVING: readonly Role[] = ['api', 'all'];
export const WORKING: readonly Role[] = ['worker', 'all'];

/** The service-wide settings a module may read (parsed by src/config.ts). */
export interface PlatformSettings {
  role: Role;
  /** The service's public address with BASE_PATH, no trailing slash (short links are built on it). */
  publicBaseUrl: string;
  /** SHUTDOWN_TIMEOUT_MS: the whole budget of a graceful stop. */
  shutdownTimeoutMs: number;
  /** TRUSTED_PROXIES (platform/client-address.ts): whose X-Forwarded-For names the client. */
  trustedProxies: TrustedProxies;
}

/** What the platform hands every module. */
export interface Platform extends PlatformSettings {
  db: Db;
  log: FastifyBaseLogger;
  /**
   * An analytics transaction (db/analytics.ts): work_mem raised to ANALYTICS_WORK_MEM_MB for
   * it alone. The interaction queries and the journeys' funnels over the same events share it.
   */
  analytics: Analytics;
  /** Enqueue jobs (in the caller's transaction); usable once the providing module is built. */
  queue: JobQueue;
  /** Where a module declares its metrics (the app's Prometheus registry, platform/metrics.ts). */
  metrics: Metrics;
}

/** One piece of a module's background work, and the roles whose processes run it. */
export interface Background {
  roles: readonly Role[];
  start(): Promise<void> | void;
  /**
   * The process begins to stop, before the requests still running are waited for: end what
   * holds a request open on purpose (a long poll), so that it does not hold the shutdown.
   */
  closing?(): void;
  stop(): Promise<void> | void;
}

/**
 * Periodic upkeep a module declares (its manifest's `housekeeping`). The runner (the schedules
 * module, as a system schedule) runs each in exactly one worker process per tick, at most once:
 * a process that stops mid-run leaves the rest to the next tick, so a function must be
 * idempotent and take up whatever a cut-off run left.
 */
export interface Housekeeping {
  /** Dotted lowerCamel words, unique across modules, e.g. `webhooks.prune`. */
  name: string;
  /** A 5-field cron in UTC; or `everyMs` for a cadence a setting gives in milliseconds. One of the two. */
  cron?: string;
  everyMs?: number;
  /** What it does, for the logs and docs/schedules.md. */
  description: string;
  /**
   * Its answer is logged at debug; one with a non-empty `postponed` list (steps that gave way,
   * a lock not granted in time, left to the next tick) at warn.
   */
  run(): Promise<unknown>;
}

/** What runs the housekeeping (`provides.housekeeping`): given every module's once all are built. */
export interface HousekeepingRunner {
  register(list: readonly Housekeeping[]): void;
}

export interface ModuleManifest<Name extends string, Settings, Needs extends readonly AnyModule[], Service> {
  name: Name;
  /** The modules whose services `create` receives, by their names; they are built before this one. */
  needs: Needs;
  /** Its own environment keys, parsed once; a bad value throws ConfigError. */
  settings(env: Env, platform: PlatformSettings): Settings;
  create(platform: Platform, settings: Settings, deps: ServicesOf<Needs>): Service;
  routes?(service: Service): readonly Route[];
  tasks?(service: Service): TaskDefinition[];
  /** The event types it publishes, with their schemas (the webhooks module's catalogue). */
  events?: readonly EventDefinition[];
  /**
   * Its tables, and the tables of other modules it reads or hangs triggers on (with the module
   * that owns them): what its repositories' SQL and its migrations may name.
   */
  tables: { owns: readonly string[]; reads?: readonly string[] };
  /**
   * What the platform takes from it: the job queue every module enqueues on; the runner of
   * every module's housekeeping.
   */
  provides?: { queue?(service: Service): JobQueue; housekeeping?(service: Service): HousekeepingRunner };
  background?(service: Service): readonly Background[];
  /** Its periodic upkeep (see Housekeeping), run by the housekeeping runner's module. */
  housekeeping?(service: Service): readonly Housekeeping[];
  /**
   * HTTP that is not a route of the vocabulary, as a Fastify plugin given the service: the
   * redirect (no guard hook, no context object on the hottest path, a 302) and the console's
   * static files (@fastify/static's own wildcard route). Everything else is in `routes`.
   */
  plugin?: FastifyPluginAsync<{ service: Service }>;
}

// biome-ignore lint/suspicious/noExplicitAny: a manifest of any settings and service, for lists of them
export type AnyModule = ModuleManifest<string, any, readonly any[], any>;

/** The service a manifest creates. */
export type ServiceOf<M> = M extends ModuleManifest<string, unknown, readonly AnyModule[], infer S> ? S : never;

/** The services of a list of manifests, by module name. */
export type ServicesOf<Ms extends readonly AnyModule[]> = { [M in Ms[number] as M['name']]: ServiceOf<M> };

/** Keeps a manifest's own types (its name as a literal) while giving it the shape the loop reads. */
export const defineModule = <const Name extends string, Settings, const Needs extends readonly AnyModule[], Service>(
  m: ModuleManifest<Name, Settings, Needs, Service>,
) => m;

/** A module that reads no environment keys of its own. */
export const noSettings = (): undefined => undefined;

/**
 * The platform's job queue before the module that provides it is built: a module that enqueues
 * while being created (none does today) would be told the order is wrong.
 */
class QueuePort implements JobQueue {
  private target: JobQueue | undefined;
  bind(q: JobQueue): void {
    this.target = q;
  }
  private get queue(): JobQueue {
    if (!this.target) throw new Error('No job queue yet: the module providing it must be built first');
    return this.target;
  }
  enqueue(q: Queryable, collectionId: string, job: EnqueueOptions): Promise<QueuedJob> {
    return this.queue.enqueue(q, collectionId, job);
  }
  enqueueMany(q: Queryable, collectionId: string, jobs: EnqueueOptions[]): Promise<QueuedJob[]> {
    return this.queue.enqueueMany(q, collectionId, jobs);
  }
  registerTask(def: TaskDefinition): void {
    this.queue.registerTask(def);
  }
  backlog(): Promise<readonly TaskBacklog[]> {
    return this.queue.backlog();
  }
}

export interface BuiltModules<Ms extends readonly AnyModule[]> {
  services: ServicesOf<Ms>;
  /** The background work of this process's role, in dependency order. */
  background: Background[];
  /** Every module's routes, in module order. */
  routes: Route[];
  /** The modules' plugins (`plugin`), each with its service. */
  plugins: { plugin: FastifyPluginAsync<{ service: unknown }>; service: unknown }[];
}

/**
 * Builds every module: settings parsed (a bad value throws ConfigError here, at start-up),
 * services created from the services they need, tasks registered on the job queue.
 */
export function buildModules<const Ms extends readonly AnyModule[]>(
  modules: Ms,
  base: Omit<Platform, 'queue'>,
  env: Env,
): BuiltModules<Ms> {
  const queue = new QueuePort();
  const platform: Platform = { ...base, queue };
  const built = new Map<string, unknown>();
  const background: Background[] = [];
  const routes: Route[] = [];
  const plugins: BuiltModules<Ms>['plugins'] = [];
  let runner: HousekeepingRunner | undefined;
  for (const m of modules) {
    const deps: Record<string, unknown> = {};
    for (const need of m.needs as readonly AnyModule[]) {
      if (!built.has(need.name))
        throw new Error(`Module "${m.name}" needs "${need.name}", which is not built before it`);
      deps[need.name] = built.get(need.name);
    }
    const service = m.create(platform, m.settings(env, platform), deps);
    built.set(m.name, service);
    const provided = m.provides?.queue?.(service);
    if (provided) queue.bind(provided);
    runner = m.provides?.housekeeping?.(service) ?? runner;
    background.push(...(m.background?.(service) ?? []).filter((b) => b.roles.includes(platform.role)));
    routes.push(...(m.routes?.(service) ?? []));
    if (m.plugin) plugins.push({ plugin: m.plugin, service });
  }
  for (const m of modules) for (const task of m.tasks?.(built.get(m.name)) ?? []) queue.registerTask(task);
  const chores = modules.flatMap((m) => m.housekeeping?.(built.get(m.name)) ?? []);
  const names = chores.map((c) => c.name);
  const twice = names.filter((n, i) => names.indexOf(n) !== i);
  if (twice.length) throw new Error(`Housekeeping declared twice: ${twice.join(', ')}`);
  if (chores.length && !runner)
    throw new Error(`Housekeeping (${names.join(', ')}) is declared but no module runs it (provides.housekeeping)`);
  runner?.register(chores);
  // The one place the loop's map becomes the typed record: each entry was made by the
  // manifest of that name, whose `create` the type reads.
  return { services: Object.fromEntries(built) as ServicesOf<Ms>, background, routes, plugins };
}
