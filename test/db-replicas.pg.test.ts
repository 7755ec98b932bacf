/**
 * Read replicas (issue 30, part 1) against PostgreSQL servers this test starts: a primary and a
 * streaming standby made by pg_basebackup (test/helpers/pg-cluster.ts). A service with
 * DATABASE_READ_URL=standby answers analytics and lists as a service reading only the primary
 * does, the standby's own table statistics show that the reads went there, a caller's own write
 * is in its next list, and stopping the standby changes no answer.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { type Db, isTransient, migrate, openDatabase, openPostgres } from '../src/db/index.ts';
import { SUPER_KEY, superAuth } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { canRunClusters, PgCluster, type PgServer } from './helpers/pg-cluster.ts';

interface Service {
  app: FastifyInstance;
  db: Db;
  call(method: string, url: string, payload?: object): Promise<{ status: number; body: unknown }>;
}

async function service(env: Record<string, string>): Promise<Service> {
  const config = loadConfig({
    SUPER_ADMIN_KEY: SUPER_KEY,
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: 'http://short.test',
    RATE_LIMIT_MAX: '100000',
    ...env,
  });
  const db = await openDatabase(config);
  await migrate(db);
  const app = await buildApp({ config, db, logger: false });
  app.addHook('onClose', () => db.close());
  await app.ready();
  return {
    app,
    db,
    async call(method, url, payload) {
      const res = await app.inject({ method: method as 'GET', url, headers: superAuth, payload });
      return { status: res.statusCode, body: res.json() };
    },
  };
}

/** Scans of the tables the reads use, on one server (its own statistics). */
async function scans(cluster: PgCluster, server: PgServer): Promise<Record<string, number>> {
  // interaction_events is partitioned by month (migration 0911): its scans are its partitions'.
  const rows = await cluster.query<{ relname: string; n: number }>(
    server,
    `SELECT CASE WHEN relname = 'links' THEN 'links' ELSE 'interaction_events' END AS relname,
       sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::int AS n
     FROM pg_stat_user_tables
     WHERE relname = 'links' OR relid IN (SELECT relid FROM pg_partition_tree('interaction_events') WHERE isleaf)
     GROUP BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.relname, r.n]));
}

const C = 'replicated';
const links = `/admin/collection/${C}/links`;
const interactions = `/admin/collection/${C}/interactions`;
const WINDOW = 'from=2026-01-01T00:00:00.000Z&to=2027-01-01T00:00:00.000Z';

/** The reads a replica may serve, as [method, url, body]. */
const READS: [string, string, object?][] = [
  ['GET', `${links}?limit=50`],
  ['GET', `${links}/analytics?${WINDOW}`],
  ['POST', `${interactions}/query`, { interactionId: 'quiz', limit: 100, order: 'ASC' }],
  ['POST', `${interactions}/counts-by-outcome`, { interactionId: 'quiz' }],
  ['POST', `${interactions}/counts-by-outcome`, { interactionId: 'quiz', dedupeLatest: true }],
  [
    'POST',
    `${interactions}/aggregate`,
    { interactionId: 'quiz', groupBy: 'outcome', aggregate: {}, field: 'metadata.score', ops: ['sum', 'count'] },
  ],
];

async function answers(s: Service): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const [method, url, body] of READS) {
    const res = await s.call(method, url, body);
    expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBe(200);
    out.push(res.body);
  }
  return out;
}

describe.skipIf(!onPostgres || !canRunClusters())('read replicas (servers of its own; PostgreSQL runs only)', () => {
  let cluster: PgCluster;
  let primary: PgServer;
  let standby: PgServer;
  let withReplica: Service;
  let primaryOnly: Service;

  beforeAll(async () => {
    cluster = await PgCluster.create();
    primary = await cluster.primary();
    standby = await cluster.standby(primary);
    withReplica = await service({
      DATABASE_URL: primary.url,
      DATABASE_READ_URL: standby.url,
      DATABASE_READ_CHECK_MS: '100',
      // Never skipped for lag here: a replica paused behind the primary is still `ok`, so only
      // the read-your-writes rule keeps a caller's reads on the primary (the test after next).
      DATABASE_READ_MAX_LAG_MS: '600000',
    });
    primaryOnly = await service({ DATABASE_URL: primary.url });
    expect((await withReplica.call('POST', '/platform/collections', { id: C, name: 'Replicated' })).status).toBe(200);
    const type = { id: 'quiz', appId: 'learn', permissions: { allowOwnRead: true } };
    expect((await withReplica.call('POST', interactions, type)).status).toBe(200);
    for (let i = 0; i < 12; i++) {
      const event = {
        interactionId: 'quiz',
        userId: `u${i % 5}`,
        outcome: i % 3 ? 'success' : 'fail',
        timestamp: `2026-05-0${1 + (i % 7)}T10:00:00.000Z`,
        metadata: { score: i },
      };
      expect((await withReplica.call('POST', `${interactions}/append`, event)).status).toBe(200);
    }
  }, 180_000);

  afterAll(async () => {
    await withReplica?.app.close();
    await primaryOnly?.app.close();
    await cluster?.destroy();
  });

  it("shows the caller's own write in its next list, while the replica has not replayed it", async () => {
    await cluster.waitForReplay(primary, standby);
    await until(() => withReplica.db.status().replicas?.[0]?.state === 'ok');
    await cluster.query(standby, 'SELECT pg_wal_replay_pause()');
    try {
      for (let i = 0; i < 5; i++) {
        const created = await withReplica.call('POST', links, { url: `https://example.com/${i}` });
        expect(created.status).toBe(200);
        const list = (await withReplica.call('GET', `${links}?limit=50`)).body as { items: { id: string }[] };
        expect(list.items.map((l) => l.id)).toContain((created.body as { id: string }).id);
      }
      // The standby has none of them: the lists above came from the primary.
      const onStandby = await cluster.query(standby, 'SELECT count(*)::int AS n FROM links');
      expect(onStandby).toEqual([{ n: 0 }]);
    } finally {
      await cluster.query(standby, 'SELECT pg_wal_replay_resume()');
    }
  });

  it('skips a replica lagging past the limit, warning once, and reads it again once it catches up', async () => {
    const logged: string[] = [];
    const log = { warn: (_: object, m: string) => logged.push(m), info: (_: object, m: string) => logged.push(m) };
    const db = await openPostgres({
      connectionString: primary.url,
      readUrls: [standby.url],
      readMaxLagMs: 300,
      readCheckMs: 100,
      log,
    });
    const servedBy = () =>
      db.read(
        'lag-test',
        async (q) => (await q.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0].port,
      );
    try {
      await until(() => db.status().replicas?.[0]?.state === 'ok');
      expect(await servedBy()).toBe(standby.port);
      await cluster.query(standby, 'SELECT pg_wal_replay_pause()');
      await cluster.query(primary, 'CREATE TABLE lag_probe (x int); INSERT INTO lag_probe VALUES (1)');
      await until(() => db.status().replicas?.[0]?.state === 'lagging');
      expect(await servedBy()).toBe(primary.port);
      // Several checks later, still one warning: logged per change of state, not per check.
      await new Promise((r) => setTimeout(r, 500));
      expect(logged.filter((m) => m.includes('lagging'))).toHaveLength(1);
      expect(db.status().replicas?.[0]?.lagSeconds).toBeGreaterThan(0.3);
      await cluster.query(standby, 'SELECT pg_wal_replay_resume()');
      await until(() => db.status().replicas?.[0]?.state === 'ok');
      expect(await servedBy()).toBe(standby.port);
      expect(logged).toContain('database: read replica back in use');
    } finally {
      await cluster.query(standby, 'SELECT pg_wal_replay_resume()');
      await cluster.query(primary, 'DROP TABLE IF EXISTS lag_probe');
      await db.close();
    }
  });

  it('serves analytics and lists from the replica, with the answers the primary gives', async () => {
    await cluster.waitForReplay(primary, standby);
    // Until a check that began after the last write finds the standby caught up, the
    // collection's reads stay on the primary (read-your-writes); a few checks later it has.
    await until(() => withReplica.db.status().replicas?.[0]?.state === 'ok');
    await new Promise((r) => setTimeout(r, 1000));
    const before = await scans(cluster, standby);
    const fromReplica = await answers(withReplica);
    expect(fromReplica).toEqual(await answers(primaryOnly));
    // A server publishes a backend's table counts when it goes idle, within seconds.
    await until(async () => {
      const after = await scans(cluster, standby);
      return after.links > before.links && after.interaction_events > before.interaction_events;
    });
    expect(withReplica.db.status().replicas).toEqual([
      { name: `127.0.0.1:${standby.port}/postgres`, state: 'ok', lagSeconds: expect.any(Number) },
    ]);
  }, 60_000);

  it('connects, of several hosts, to the one that accepts writes when target_session_attrs=read-write', async () => {
    const hosts = `127.0.0.1:${standby.port},127.0.0.1:${primary.port}`;
    const portOf = async (url: string) => {
      const db = await openPostgres({ connectionString: url });
      try {
        return (await db.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0].port;
      } finally {
        await db.close();
      }
    };
    expect(await portOf(`postgres://postgres@${hosts}/postgres?target_session_attrs=read-write`)).toBe(primary.port);
    // libpq's default, any: the first host that answers, here the standby.
    expect(await portOf(`postgres://postgres@${hosts}/postgres`)).toBe(standby.port);
    // A write that reaches a standby fails as a fault (503 over HTTP), not as a bug (500).
    const onStandby = await openPostgres({ connectionString: standby.url });
    const err = await onStandby.query('CREATE TABLE nowhere (x int)').catch((e: unknown) => e);
    await onStandby.close();
    expect(err).toMatchObject({ code: '25006' });
    expect(isTransient(err)).toBe(true);
  });

  it('answers the same once the replica is stopped, from the primary', async () => {
    const expected = await answers(primaryOnly);
    await cluster.stop(standby);
    expect(await answers(withReplica)).toEqual(expected);
    await until(() => withReplica.db.status().replicas?.[0]?.state === 'down');
    expect(await answers(withReplica)).toEqual(expected);
    expect(withReplica.db.status().replicas?.[0]?.lagSeconds).toBeNull();
  }, 60_000);

  it('drops the pool of a host that turned read-only (25006) and writes on the next host that accepts writes', async () => {
    const other = await cluster.primary({ name: 'other' });
    const db = await openPostgres({
      connectionString: `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${other.port}/postgres?target_session_attrs=read-write`,
    });
    const port = async () => (await db.query<{ port: number }>('SELECT inet_server_port() AS port')).rows[0].port;
    // A session of its own that may still write, to undo the change whatever happens.
    const admin = {
      ...primary,
      url: `${primary.url}?options=${encodeURIComponent('-c default_transaction_read_only=off')}`,
    };
    try {
      expect(await port()).toBe(primary.port);
      // What a switchover does to the old primary, as far as clients can tell: writes refused.
      await cluster.query(admin, 'ALTER SYSTEM SET default_transaction_read_only = on');
      await cluster.query(admin, 'SELECT pg_reload_conf()');
      await until(async () => {
        const [row] = await cluster.query<{ v: string }>(primary, 'SELECT current_setting($1) AS v', [
          'default_transaction_read_only',
        ]);
        return row.v === 'on';
      });
      // The pool's connection reads the new setting before its next statement.
      await new Promise((r) => setTimeout(r, 300));
      const err = await db.query('CREATE TABLE demoted_probe (x int)').catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '25006' });
      expect(isTransient(err)).toBe(true);
      await db.query('CREATE TABLE demoted_probe (x int)');
      expect(await port()).toBe(other.port);
    } finally {
      await db.close();
      await cluster.query(admin, 'ALTER SYSTEM RESET default_transaction_read_only');
      await cluster.query(admin, 'SELECT pg_reload_conf()');
      await cluster.stop(other);
    }
  });
});

async function until(ok: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
