/**
 * Several processes on one database, as a deployment behind a load balancer runs: two
 * `ROLE=api` and two `ROLE=worker` service processes on one PostgreSQL schema and one Redis
 * (the machine's, under a key prefix of this run). PostgreSQL only (PGlite has one owner
 * process); Redis is required, and its absence fails the suite with a message saying so.
 *
 * - a link changed through API 1 redirects to its new destination through API 2 at once;
 * - a key revoked through API 1 is refused by API 2 at once;
 * - the rate limit holds across both API processes: exactly RATE_LIMIT_MAX successes;
 * - 2,000 jobs enqueued through both APIs run exactly once each, across both workers;
 * - every link event is delivered exactly once to a real receiver, and a registration
 *   disabled or deleted through API 1 gets nothing more from events written through API 2.
 *
 * "At once": the caches' lifetimes (AUTH_CACHE_TTL_MS, LINK_CACHE_TTL_MS) are ten minutes
 * here, and the checks poll for at most 5 s; a control step first changes the row behind the
 * API's back (no notification) and sees the other process still answer from its cache, so
 * only the notification explains the change being seen.
 *
 * Then Redis going away under an API process: a `redis-server` child of this test (when the
 * binary exists; else a port where nothing listens) is killed with SIGKILL: requests are
 * still served (fail open), the warning is logged once, and counting resumes when it is back.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RunningProcess, spawnTs } from '../support/service-process.ts';
import { SUPER_KEY } from './helpers/app.ts';
import { type ChildStorage, childStorage, onPostgres } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const PREFIX = `test-multiprocess:${randomUUID()}:`;
const RATE_LIMIT_MAX = 200;
const JOBS = 2000;
/**
 * Keys that enqueue the jobs, so that none of them goes over RATE_LIMIT_MAX (the collection's
 * own budget, RATE_LIMIT_COLLECTION_MAX, is set above what they make together: not the
 * subject here, see rate-limit-redis.test.ts).
 */
const JOB_KEYS = 20;
/** How long "at once" may take: far below the caches' ten minutes. */
const AT_ONCE_MS = 5000;
const EVENTS = ['link.created', 'link.updated', 'link.deleted', 'link.clicked'];

const running: RunningProcess[] = [];
let storage: ChildStorage | undefined;
let rx: Receiver | undefined;
let db: pg.Pool | undefined;
let api: RunningProcess[] = [];

/** A JSON call to one process. */
async function call(p: RunningProcess, method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${p.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

async function ok(p: RunningProcess, method: string, path: string, key: string, body?: unknown) {
  const res = await call(p, method, path, key, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Where a short link sends its visitor through one process (302), or its status. */
async function redirect(p: RunningProcess, code: string): Promise<string> {
  const res = await fetch(`${p.url}/l/${code}`, { redirect: 'manual' });
  await res.arrayBuffer();
  return res.status === 302 ? (res.headers.get('location') ?? '') : String(res.status);
}

/** Runs `fn` over `items`, `parallel` at a time. */
async function pool<T, R>(items: T[], parallel: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i], i);
      }
    }),
  );
  return results;
}

/** The process's database address, named so that its connections can be told apart. */
function databaseUrl(name: string): string {
  const url = new URL(storage?.env.DATABASE_URL as string);
  url.searchParams.set('application_name', name);
  return url.toString();
}

function start(name: string, role: 'api' | 'worker', env: Record<string, string> = {}): Promise<RunningProcess> {
  const p = spawnTs('src/server.ts', {
    env: {
      DATABASE_URL: databaseUrl(name),
      ROLE: role,
      SUPER_ADMIN_KEY: SUPER_KEY,
      REDIS_URL,
      REDIS_KEY_PREFIX: PREFIX,
      RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      RATE_LIMIT_WINDOW_MS: '600000',
      RATE_LIMIT_COLLECTION_MAX: String(JOBS * 10),
      AUTH_CACHE_TTL_MS: '600000',
      LINK_CACHE_TTL_MS: '600000',
      CLICK_FLUSH_MS: '50',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      JOBS_CONCURRENCY: '8',
      // The wake-ups come by NOTIFY; the poll is only the safety net.
      JOBS_POLL_INTERVAL_MS: '1000',
      LOG_LEVEL: role === 'worker' ? 'info' : 'warn',
      ...env,
    },
    ...(role === 'worker' ? { readyLine: 'worker started' } : { readyPath: '/readyz' }),
    capture: true,
  });
  return p.then((r) => {
    running.push(r);
    return r;
  });
}

/** Fails the suite, saying why, when the Redis it needs is not there. */
async function requireRedis(): Promise<void> {
  const probe = new Redis(REDIS_URL, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
  } catch (err) {
    throw new Error(
      `Redis is not reachable at ${REDIS_URL} (${(err as Error).message}). The multi-process suite needs it: ` +
        'start it (`redis-server --daemonize yes`) or point TEST_REDIS_URL at one.',
    );
  } finally {
    probe.disconnect();
  }
}

/** Deletes this run's keys (they would expire with their windows anyway). */
async function dropRedisKeys(): Promise<void> {
  const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
      if (keys.length) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } catch {
  } finally {
    r.disconnect();
  }
}

describe.skipIf(!onPostgres)('two API and two worker processes on one PostgreSQL and one Redis', () => {
  let w: RunningProcess[] = [];
  const keys: Record<string, { id: string; key: string }> = {};

  beforeAll(async () => {
    await requireRedis();
    rx = await startReceiver();
    storage = await childStorage('multiprocess');
    // The first process applies the migrations; the others start against a migrated schema.
    const api1 = await start('mp-api1', 'api');
    const [api2, w1, w2] = await Promise.all([
      start('mp-api2', 'api'),
      start('mp-worker1', 'worker'),
      start('mp-worker2', 'worker'),
    ]);
    api = [api1, api2];
    w = [w1, w2];
    db = new pg.Pool({ connectionString: databaseUrl('mp-test'), max: 2 });
    // Every write of a record, and which process made it: a job run twice writes twice.
    await db.query(`
      CREATE TABLE test_record_writes (ref text NOT NULL, writer text NOT NULL);
      CREATE FUNCTION test_record_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO test_record_writes (ref, writer) VALUES (NEW.ref, current_setting('application_name'));
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_record_write AFTER INSERT OR UPDATE ON app_records
        FOR EACH ROW EXECUTE FUNCTION test_record_write();`);
    for (const id of ['mp', 'hooks']) await ok(api1, 'POST', '/platform/collections', SUPER_KEY, { id, name: id });
    const names = ['links', 'revoked', 'rate', 'hooks', ...Array.from({ length: JOB_KEYS }, (_, i) => `jobs${i}`)];
    await pool(names, 4, async (name, i) => {
      const collection = name === 'hooks' ? 'hooks' : 'mp';
      const made = await ok(api[i % 2], 'POST', `/admin/collection/${collection}/api-keys`, SUPER_KEY, { name });
      keys[name] = { id: made.id as string, key: made.key as string };
    });
  });

  afterAll(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
    await rx?.close();
    await db?.end();
    await dropRedisKeys();
    await storage?.release();
    storage = undefined;
  });

  it('a link changed through API 1 redirects to its new destination through API 2 at once', async () => {
    const { key } = keys.links;
    const link = await ok(api[0], 'POST', '/admin/collection/mp/links', key, { url: 'https://before.example/' });
    const code = link.code as string;
    expect(await redirect(api[1], code)).toBe('https://before.example/');
    // The control: changed behind the API's back, API 2 keeps its cached destination. The
    // creation's own NOTIFY (it drops a negative entry for the new code) may reach API 2 after
    // the redirect above cached the link, and drop it once; a second try is then cached for good.
    let kept = false;
    for (let attempt = 0; attempt < 3 && !kept; attempt++) {
      const cached = await redirect(api[1], code); // cached in API 2 now
      await db?.query('UPDATE links SET destination_url = $2 WHERE id = $1', [
        link.id,
        `https://silent${attempt}.example/`,
      ]);
      kept = (await redirect(api[1], code)) === cached;
    }
    expect(kept).toBe(true);

    await ok(api[0], 'PATCH', `/admin/collection/mp/links/${link.id}`, key, { url: 'https://after.example/' });
    await waitFor(
      async () => ((await redirect(api[1], code)) === 'https://after.example/' ? true : undefined),
      AT_ONCE_MS,
      'API 2 to redirect to the new destination',
    );
    await ok(api[1], 'DELETE', `/admin/collection/mp/links/${link.id}`, key);
    await waitFor(
      async () => ((await redirect(api[0], code)) === '404' ? true : undefined),
      AT_ONCE_MS,
      'API 1 to answer 404 for the deleted link',
    );
  });

  it('a key revoked through API 1 is refused by API 2 at once', async () => {
    const { id, key } = keys.revoked;
    const list = () => call(api[1], 'GET', '/admin/collection/mp/api-keys', key).then((r) => r.status);
    expect(await list()).toBe(200); // cached in API 2 now
    await db?.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [id]);
    expect(await list()).toBe(200); // the control: API 2 trusts its cache
    expect((await call(api[0], 'DELETE', `/admin/collection/mp/api-keys/${id}`, SUPER_KEY)).status).toBe(200);
    await waitFor(async () => ((await list()) === 401 ? true : undefined), AT_ONCE_MS, 'API 2 to refuse the key');
  });

  it('the rate limit holds across both API processes: exactly RATE_LIMIT_MAX successes', async () => {
    const { key } = keys.rate;
    const statuses = await pool(Array.from({ length: RATE_LIMIT_MAX + 60 }), 16, (_, i) =>
      call(api[i % 2], 'GET', '/admin/collection/mp/api-keys', key).then((r) => r.status),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(RATE_LIMIT_MAX);
    expect(statuses.filter((s) => s === 429)).toHaveLength(60);
  });

  it('2,000 jobs enqueued through both APIs run exactly once each, across both workers', async () => {
    const started = Date.now();
    const ids = await pool(Array.from({ length: JOBS }), 16, async (_, i) => {
      const made = await ok(api[i % 2], 'POST', '/admin/collection/mp/async/jobs', keys[`jobs${i % JOB_KEYS}`].key, {
        task: 'records.import',
        payload: { appId: 'mp', items: [{ ref: `r${i}` }] },
      });
      return made.id as number;
    });
    expect(new Set(ids).size).toBe(JOBS);
    const pending = async () =>
      (
        await db!.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobs WHERE collection_id = 'mp' AND status <> 'completed'",
        )
      ).rows[0].n;
    await waitFor(async () => ((await pending()) === 0 ? true : undefined), 60_000, 'every job to complete');
    const elapsed = Date.now() - started;
    const { rows: jobs } = await db!.query<{ n: number; once: number; created: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE attempts = 1)::int AS once,
         count(*) FILTER (WHERE (result->>'created')::int = 1)::int AS created
       FROM jobs WHERE collection_id = 'mp' AND task = 'records.import'`,
    );
    expect(jobs[0]).toEqual({ n: JOBS, once: JOBS, created: JOBS });
    const { rows: writes } = await db!.query<{ writer: string; n: number; refs: number }>(
      'SELECT writer, count(*)::int AS n, count(DISTINCT ref)::int AS refs FROM test_record_writes GROUP BY writer ORDER BY writer',
    );
    const { rows: twice } = await db!.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM (SELECT ref FROM test_record_writes GROUP BY ref HAVING count(*) > 1) x',
    );
    expect(twice[0].n).toBe(0);
    expect(writes.reduce((sum, r) => sum + r.n, 0)).toBe(JOBS);
    // Both workers took part (and nothing else wrote records).
    expect(writes.map((r) => r.writer)).toEqual(['mp-worker1', 'mp-worker2']);
    console.log(
      `jobs: ${JOBS} enqueued through 2 API processes and run by 2 workers in ${elapsed} ms; per worker: ${writes.map((r) => `${r.writer} ${r.n}`).join(', ')}`,
    );
  });

  it('delivers every link event exactly once; a registration disabled or deleted through API 1 gets nothing more', async () => {
    const receiver = rx as Receiver;
    const { key } = keys.hooks;
    const register = async (path: string) =>
      (await ok(api[0], 'POST', '/v1/webhooks', key, { url: `${receiver.url}${path}`, events: EVENTS })).id as string;
    const [all, off, gone] = [await register('/all'), await register('/off'), await register('/gone')];

    // All three receive the first event: they work.
    const first = await ok(api[1], 'POST', '/admin/collection/hooks/links', key, { url: 'https://e.example/0' });
    await waitFor(
      async () => (['/all', '/off', '/gone'].every((p) => receiver.on(p).length === 1) ? true : undefined),
      30_000,
      'the first event at every registration',
    );
    expect(receiver.on('/off')[0].body.data.link_id).toBe(first.id);

    await ok(api[0], 'PATCH', `/v1/webhooks/${off}`, key, { active: false });
    await ok(api[0], 'DELETE', `/v1/webhooks/${gone}`, key);

    // Everything else through both API processes; the workers deliver.
    const links = await pool([1, 2, 3, 4, 5, 6], 3, async (i) => {
      const link = await ok(api[i % 2], 'POST', '/admin/collection/hooks/links', key, {
        url: `https://e.example/${i}`,
      });
      await ok(api[(i + 1) % 2], 'PATCH', `/admin/collection/hooks/links/${link.id}`, key, {
        url: `https://e.example/${i}/new`,
      });
      for (const p of api) expect(await redirect(p, link.code as string)).toBe(`https://e.example/${i}/new`);
      return link;
    });
    const of = (type: string) => receiver.on('/all').filter((r) => r.body.type === type);
    // Clicks are stored in batches: all of them before the links go.
    await waitFor(async () => (of('link.clicked').length >= 12 ? true : undefined), 30_000, 'the click events');
    await pool(links, 3, (link, i) => ok(api[i % 2], 'DELETE', `/admin/collection/hooks/links/${link.id}`, key));

    // Once no delivery job is left, nothing more can arrive: then count.
    await waitFor(
      async () => {
        const { rows } = await db!.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobs WHERE collection_id = 'hooks' AND status <> 'completed'",
        );
        return rows[0].n === 0 && of('link.deleted').length >= 6 ? true : undefined;
      },
      30_000,
      'every delivery to be done',
    );
    const delivered = receiver.on('/all');
    const counts = Object.fromEntries(EVENTS.map((t) => [t, of(t).length]));
    expect(counts).toEqual({ 'link.created': 7, 'link.updated': 6, 'link.deleted': 6, 'link.clicked': 12 });
    expect(new Set(delivered.map((r) => r.body.id)).size).toBe(delivered.length);
    const { rows: stored } = await db!.query<{ id: string }>(
      "SELECT id FROM webhook_events WHERE collection_id = 'hooks' ORDER BY id",
    );
    expect(delivered.map((r) => r.body.id).sort()).toEqual(stored.map((r) => r.id).sort());
    const { rows: deliveries } = await db!.query<{ webhook_id: string; status: string; attempt_count: number }>(
      "SELECT webhook_id, status, attempt_count FROM webhook_deliveries WHERE collection_id = 'hooks'",
    );
    expect(
      deliveries.filter((d) => d.webhook_id === all).every((d) => d.status === 'succeeded' && d.attempt_count === 1),
    ).toBe(true);
    // The disabled registration: its one delivery from before, none written since.
    expect(deliveries.filter((d) => d.webhook_id === off)).toHaveLength(1);
    expect(deliveries.filter((d) => d.webhook_id === gone)).toHaveLength(0);
    expect(receiver.on('/off')).toHaveLength(1);
    expect(receiver.on('/gone')).toHaveLength(1);
  });

  it('every process stops gracefully', async () => {
    const codes = await Promise.all([...api, ...w].map((p) => p.stop()));
    expect(codes).toEqual([0, 0, 0, 0]);
    const logs = [...api, ...w].map((p) => p.output()).join('\n');
    expect(logs).not.toContain('"level":50');
  });
});

/** Starts `redis-server` on `port` without persistence, or returns undefined when it is not installed. */
async function startRedisServer(port: number): Promise<ChildProcess | undefined> {
  try {
    execFileSync('which', ['redis-server'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited (${child.exitCode})`);
        try {
          if (probe.status !== 'ready') await probe.connect();
          return (await probe.ping()) === 'PONG' ? true : undefined;
        } catch {
          probe.disconnect();
          return undefined;
        }
      },
      10_000,
      'redis-server to answer',
    );
  } finally {
    probe.disconnect();
  }
  return child;
}

async function killChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe.skipIf(!onPostgres)('Redis going away under an API process', () => {
  let redisServer: ChildProcess | undefined;
  let p: RunningProcess;
  let port: number;
  const LIMIT = 5;

  beforeAll(async () => {
    storage = await childStorage('multiprocess-redis');
    port = await freePort();
    redisServer = await startRedisServer(port);
    p = await start('mp-api3', 'api', {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      RATE_LIMIT_MAX: String(LIMIT),
      LOG_LEVEL: 'info',
    });
    await ok(p, 'POST', '/platform/collections', SUPER_KEY, { id: 'outage', name: 'outage' }).catch(() => {});
  });
  afterAll(async () => {
    if (redisServer) await killChild(redisServer);
    await Promise.all(running.splice(0).map((r) => r.kill()));
    await storage?.release();
  });

  const listWith = (key: string) => call(p, 'GET', '/admin/collection/outage/api-keys', key).then((r) => r.status);
  const newKey = async () =>
    (await ok(p, 'POST', '/admin/collection/outage/api-keys', SUPER_KEY, { name: 'k' })).key as string;

  it('serves requests uncounted while Redis is away, warns once, and counts again once it is back', async () => {
    const lines = (text: string) =>
      p
        .output()
        .split('\n')
        .filter((l) => l.includes(text));
    const key = await newKey();
    if (redisServer) {
      // Counted in Redis: the budget holds.
      const before: number[] = [];
      for (let i = 0; i < LIMIT + 2; i++) before.push(await listWith(key));
      expect(before).toEqual([...Array(LIMIT).fill(200), 429, 429]);
      await killChild(redisServer);
    }
    // Gone: the same key, over its budget, is served.
    const during: number[] = [];
    for (let i = 0; i < 20; i++) during.push(await listWith(key));
    expect(during).toEqual(Array(20).fill(200));
    expect(lines('rate limit: Redis unavailable; requests are served without being counted')).toHaveLength(1);
    expect(lines('redis: connection lost or refused').length).toBeGreaterThanOrEqual(1);
    if (!redisServer) return; // nothing to bring back

    redisServer = await startRedisServer(port);
    // A fresh key: served uncounted until the client is back, then counted up to the limit.
    const fresh = await newKey();
    await waitFor(async () => ((await listWith(fresh)) === 429 ? true : undefined), 15_000, 'counting to resume');
    expect(lines('redis: connection re-established').length).toBeGreaterThanOrEqual(1);
    expect(lines('rate limit: Redis answers again; counting resumed')).toHaveLength(1);
  });
});
