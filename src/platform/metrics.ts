/**
 * Metrics in Prometheus' text format (prom-client): one Registry per app, never prom-client's
 * global one, so that the many apps a test process builds count apart. The platform measures
 * the HTTP requests (by route template), the database pool and the replicas; each module
 * declares its own metrics through `Metrics` (the jobs engine's runs and backlog, webhook
 * attempts and lag, the click buffer), and gauges are read when scraped (`gauge({collect})`),
 * so nothing polls between scrapes. What each metric means, with example queries:
 * docs/operations.md, "Metrics and traces".
 *
 * Design
 * - The request count is on the hottest path (the redirect). It costs one route-level
 *   onResponse hook, added to each route as it is registered (`onRoute`), closing over that
 *   route's series: no look-up by URL, no `req.routeOptions` (which builds an object on every
 *   read), no label object, no string made per request; a Map update and a few additions. The
 *   series become prom-client's text only when scraped (`HttpSeries.counterValues`).
 * - Label values are bounded: the route template (`/l/:code`, never the path), the method,
 *   the status; requests no route matched share the route `(unmatched)`.
 * - A gauge whose reading fails (the database is away) is left out of that scrape rather than
 *   failing it: the process metrics still tell what happened.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import { Counter, collectDefaultMetrics, Gauge, Histogram, type Metric, Registry } from 'prom-client';
import type { Db } from '../db/index.ts';
import type { SlotCounts } from './analytics-slots.ts';
import { unauthorized } from './errors.ts';
import { boolFrom, ConfigError, type Env, intFrom } from './settings.ts';

/** METRICS_ENABLED, METRICS_TOKEN, METRICS_PORT (docs/configuration.md, "Metrics and traces"). */
export interface MetricsSettings {
  /** GET /metrics on the API's port. */
  enabled: boolean;
  /** When set, /metrics asks for `Authorization: Bearer <token>`. */
  token: string | undefined;
  /** A listener of its own for /metrics (any role, a worker's too); undefined: none. */
  port: number | undefined;
}

export function metricsSettings(env: Env): MetricsSettings {
  const token = env.METRICS_TOKEN || undefined;
  if (token !== undefined && token.length < 16)
    throw new ConfigError('METRICS_TOKEN must be at least 16 characters long (or unset)');
  return {
    enabled: boolFrom(env, 'METRICS_ENABLED', true),
    token,
    port: env.METRICS_PORT ? intFrom(env, 'METRICS_PORT', 0, 0, 65535) : undefined,
  };
}

/** Seconds; from a fast redirect (under a millisecond) to a slow export. */
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const UNMATCHED = '(unmatched)';
/** Where Prometheus scrapes, beside the probes (outside BASE_PATH). */
export const METRICS_PATH = '/metrics';

type Labels<L extends string> = { name: string; help: string; labelNames?: readonly L[] };

/** What a module may declare: counters and histograms it moves, gauges read when scraped. */
export interface Metrics {
  counter<L extends string = never>(o: Labels<L>): Counter<L>;
  /** A count kept elsewhere since the process started (a field of a service), read at each scrape. */
  countedElsewhere(o: { name: string; help: string; read(): number }): void;
  histogram<L extends string = never>(o: Labels<L> & { buckets?: number[] }): Histogram<L>;
  /** Read at each scrape by `collect`; left out of a scrape whose reading throws. */
  gauge<L extends string = never>(o: Labels<L> & { collect(g: Gauge<L>): void | Promise<void> }): Gauge<L>;
}

/** One route and method's counts: requests by status, and the duration histogram's buckets. */
class RouteSeries {
  readonly statuses = new Map<number, number>();
  /** Per bucket (not cumulative); the last one is +Inf. */
  readonly buckets: number[] = new Array(HTTP_BUCKETS.length + 1).fill(0);
  sum = 0;
  count = 0;
  constructor(
    readonly route: string,
    readonly method: string,
  ) {}

  record(status: number, seconds: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < HTTP_BUCKETS.length && seconds > HTTP_BUCKETS[i]) i++;
    this.buckets[i]++;
    this.sum += seconds;
    this.count++;
  }
}

/** The HTTP series of one app, rendered for prom-client when scraped. */
class HttpSeries {
  private readonly all: RouteSeries[] = [];
  private readonly unmatched = new Map<string, RouteSeries>();

  series(route: string, method: string): RouteSeries {
    const s = new RouteSeries(route, method);
    this.all.push(s);
    return s;
  }

  /** A request no route matched (Node's parser admits only known methods: bounded). */
  unmatchedOf(method: string): RouteSeries {
    let s = this.unmatched.get(method);
    if (!s) {
      s = this.series(UNMATCHED, method);
      this.unmatched.set(method, s);
    }
    return s;
  }

  counterValues() {
    return this.all.flatMap((s) =>
      [...s.statuses].map(([status, value]) => ({
        labels: { route: s.route, method: s.method, status: String(status) },
        value,
      })),
    );
  }

  histogramValues(name: string) {
    return this.all
      .filter((s) => s.count > 0)
      .flatMap((s) => {
        const labels = { route: s.route, method: s.method };
        let cumulative = 0;
        const buckets = s.buckets.map((n, i) => {
          cumulative += n;
          const le = i < HTTP_BUCKETS.length ? String(HTTP_BUCKETS[i]) : '+Inf';
          return { metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative };
        });
        return [
          ...buckets,
          { metricName: `${name}_sum`, labels, value: s.sum },
          { metricName: `${name}_count`, labels, value: s.count },
        ];
      });
  }
}

/** The registry of one app, with the platform's own metrics. */
export class AppMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly http = new HttpSeries();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // The two HTTP metrics are rendered from HttpSeries (see "Design"): prom-client's registry
    // takes any object that answers `get()` in its metric shape.
    const http = this.http;
    this.rendered(
      'http_requests_total',
      'HTTP requests answered, by route template, method and status',
      'counter',
      () => http.counterValues(),
    );
    this.rendered(
      'http_request_duration_seconds',
      'Time to answer an HTTP request, by route template and method',
      'histogram',
      () => http.histogramValues('http_request_duration_seconds'),
    );
  }

  /** A metric whose values are computed at each scrape by `values` (prom-client's metric shape). */
  private rendered(name: string, help: string, type: 'counter' | 'histogram', values: () => object[]): void {
    this.registry.registerMetric({
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
    } as unknown as Metric);
  }

  counter<L extends string = never>(o: Labels<L>): Counter<L> {
    return new Counter<L>({ ...o, labelNames: o.labelNames ?? [], registers: [this.registry] });
  }

  countedElsewhere(o: { name: string; help: string; read(): number }): void {
    new Counter({
      name: o.name,
      help: o.help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(o.read());
      },
    });
  }

  histogram<L extends string = never>(o: Labels<L> & { buckets?: number[] }): Histogram<L> {
    return new Histogram<L>({ ...o, labelNames: o.labelNames ?? [], registers: [this.registry] });
  }

  gauge<L extends string = never>(o: Labels<L> & { collect(g: Gauge<L>): void | Promise<void> }): Gauge<L> {
    const read = o.collect;
    return new Gauge<L>({
      name: o.name,
      help: o.help,
      labelNames: o.labelNames ?? [],
      registers: [this.registry],
      async collect() {
        this.reset();
        try {
          await read(this);
        } catch {
          // Left out of this scrape (see "Design"); the next one reads again.
          this.reset();
        }
      },
    });
  }

  /**
   * Counts every route registered from now on (call it before any route), and requests no
   * route matched through `notFound`, which the not-found handler calls.
   */
  countRequests(app: FastifyInstance): { notFound(req: FastifyRequest, reply: FastifyReply): void } {
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const byMethod = new Map(methods.map((m) => [m, this.http.series(route.url, m)]));
      const only = methods.length === 1 ? byMethod.get(methods[0]) : undefined;
      // Callback style, as app.ts's hooks on every request: no promise per request.
      const count: onResponseHookHandler = (req, reply, done) => {
        const s = only ?? byMethod.get(req.method);
        s?.record(reply.statusCode, reply.elapsedTime / 1000);
        done();
      };
      const hooks = route.onResponse ?? [];
      route.onResponse = [...(Array.isArray(hooks) ? hooks : [hooks]), count];
    });
    return {
      notFound: (req, reply) => this.http.unmatchedOf(req.method).record(404, reply.elapsedTime / 1000),
    };
  }

  /** The analytics reads' slots (platform/analytics-slots.ts), read when scraped. */
  watchAnalytics(slots: () => SlotCounts): void {
    this.gauge({
      name: 'analytics_reads',
      help: 'Analytics reads running in their slots, and waiting for one (ANALYTICS_CONCURRENCY)',
      labelNames: ['state'],
      collect(g) {
        const s = slots();
        g.set({ state: 'running' }, s.running);
        g.set({ state: 'waiting' }, s.waiting);
      },
    });
    // A counter read at scrape: the slots keep the count, prom-client only shows it.
    this.rendered(
      'analytics_reads_refused_total',
      'Analytics reads answered 503 because no slot came free within ANALYTICS_WAIT_MS',
      'counter',
      () => [{ value: slots().refused, labels: {} }],
    );
  }

  /** The database pool's connections and the replicas' lag, read when scraped. */
  watchDatabase(db: Db): void {
    // node-postgres' pool of the primary (PostgreSQL), read at each scrape: a failover replaces
    // it. PGlite has one connection and no pool: no series.
    type PoolCounts = { totalCount: number; idleCount: number; waitingCount: number };
    const holder = db as { pool?: PoolCounts };
    if ('pool' in db) {
      this.gauge({
        name: 'db_pool_connections',
        help: "Connections of the primary's pool: total open, idle, and requests waiting for one",
        labelNames: ['state'],
        collect(g) {
          const pool = holder.pool;
          if (!pool) return; // between a lost primary and the next one
          g.set({ state: 'total' }, pool.totalCount);
          g.set({ state: 'idle' }, pool.idleCount);
          g.set({ state: 'waiting' }, pool.waitingCount);
        },
      });
    }
    this.gauge({
      name: 'db_replica_lag_seconds',
      help: 'How far each read replica is behind the primary, in seconds (when the database reports replicas)',
      labelNames: ['replica'],
      collect(g) {
        for (const r of db.status().replicas ?? []) if (r.lagSeconds !== null) g.set({ replica: r.name }, r.lagSeconds);
      },
    });
    this.gauge({
      name: 'db_replica_state',
      help: 'Each read replica in its state (ok, lagging: skipped for being too far behind, down): 1 for its state',
      labelNames: ['replica', 'state'],
      collect(g) {
        for (const r of db.status().replicas ?? []) g.set({ replica: r.name, state: r.state }, 1);
      },
    });
  }

  /** GET /metrics on this app (a probe: not in the OpenAPI document, not rate limited). */
  serve(app: FastifyInstance, settings: MetricsSettings): void {
    const expected = settings.token ? Buffer.from(`Bearer ${settings.token}`) : undefined;
    app.get(METRICS_PATH, { schema: { hide: true }, config: { rateLimit: false } }, async (req, reply) => {
      if (expected && !sameSecret(req.headers.authorization, expected))
        throw unauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
      reply.type(this.registry.contentType);
      return this.registry.metrics();
    });
  }
}

/**
 * /metrics on a listener of its own (METRICS_PORT), for any role: a worker serves no HTTP
 * otherwise, yet its jobs and deliveries are counted in its own registry. Anything else there
 * is a 404; the token, when set, is asked for as on the API's port.
 */
export async function listenForScrapes(
  registry: Registry,
  settings: MetricsSettings & { port: number },
  host: string,
): Promise<Server> {
  const expected = settings.token ? Buffer.from(`Bearer ${settings.token}`) : undefined;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== METRICS_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: GET /metrics\n');
      return;
    }
    if (expected && !sameSecret(req.headers.authorization, expected)) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('Authorization: Bearer <METRICS_TOKEN> needed\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(503, { 'content-type': 'text/plain' }).end('Metrics unavailable; retry\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, host, () => resolve());
  });
  return server;
}

function sameSecret(given: string | undefined, expected: Buffer): boolean {
  const g = Buffer.from(given ?? '');
  return g.length === expected.length && timingSafeEqual(g, expected);
}
