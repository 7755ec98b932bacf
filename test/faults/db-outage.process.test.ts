/**
 * The database goes away under load, and the service rides it out: real processes, a real
 * PostgreSQL, real connections killed. An API process (ROLE=api) and a worker (ROLE=worker) reach
 * PostgreSQL through a TCP proxy the test controls, under an application_name the test can
 * target with pg_terminate_backend; the machine's shared server itself is never stopped.
 *
 * What must hold after each fault: both processes are still up; every answer during the fault
 * was a 2xx or a 503 with Retry-After in the error body (never a 500, never a dropped
 * connection); /readyz comes back by itself; every write that was answered 2xx is stored, every
 * acknowledged PATCH with the value it sent and its history row, and every acknowledged link's
 * outbox event reaches the webhook receiver; a write answered 503 is all or nothing (a PATCH's
 * change and its history row, a link and its outbox event); a job enqueued afterwards
 * through the API is picked up by the worker although its poll is set to ten minutes, which
 * only the re-established LISTEN connection (or its catch-up sweep) can do.
 *
 * PostgreSQL only: PGlite runs inside the process and has no connection to lose.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProcess, spawnTs } from '../../support/service-process.ts';
import { SUPER_KEY } from '../helpers/app.ts';
import { createTestDb, onPostgres, type TestDb } from '../helpers/db.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.ts';

const COLLECTION = 'faults';
const CLIENTS = 8;
/** Each step has its own deadline (ready 15 s, LISTEN 15 s, deliveries 60 s, a job 30 s). */
const FAULT_TEST_TIMEOUT_MS = 180_000;

let testDb: TestDb;
let proxy: TcpProxy;
let admin: pg.Client;
let api: RunningProcess;
let worker: RunningProcess;
let rx: Receiver;
let key = '';
const appName = `faults_${randomBytes(4).toString('hex')}`;

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key || SUPER_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** A case's PATCH under load: the value it sent, and whether it was answered 2xx. */
interface Patch {
  id: string;
  priority: number;
  acknowledged: boolean;
}

/** Answers seen under load, and what was acknowledged. */
interface Load {
  cases: string[];
  patches: Patch[];
  links: string[];
  /** Codes of links whose create was answered 503: stored or not, never without their event. */
  refusedLinks: string[];
  statuses: Map<number, number>;
  /** Anything that is not a 2xx or a well-formed 503: empty when the service behaved. */
  bad: string[];
  stop(): Promise<void>;
}

function writeLoad(): Load {
  const load: Load = {
    cases: [],
    patches: [],
    links: [],
    refusedLinks: [],
    statuses: new Map(),
    bad: [],
    stop: async () => {},
  };
  // Link codes of this load: the two tests each run one, and a code is unique per deployment.
  const run = randomBytes(3).toString('hex');
  let running = true;
  const note = (what: string, res: { status: number; headers: Headers; body: Record<string, unknown> }) => {
    load.statuses.set(res.status, (load.statuses.get(res.status) ?? 0) + 1);
    if (res.status >= 200 && res.status < 300) return true;
    const wellFormed503 =
      res.status === 503 &&
      res.headers.get('retry-after') !== null &&
      res.body?.code === 503 &&
      typeof res.body?.errorCode === 'string' &&
      typeof res.body?.requestId === 'string';
    if (!wellFormed503) load.bad.push(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return false;
  };
  const client = async (n: number) => {
    for (let i = 0; running; i++) {
      try {
        // A case with history: created, then its status changed (a history row, one transaction).
        const created = await call('POST', `/admin/collection/${COLLECTION}/app/desk/cases`, {
          data: { n, i },
          status: 'open',
        });
        if (note('create case', created)) {
          const id = created.body.id as string;
          // A value of this PATCH's own, to find it stored (or not) afterwards.
          const priority = n * 100_000 + i;
          const patched = await call('PATCH', `/admin/collection/${COLLECTION}/app/desk/cases/${id}`, {
            status: 'in_progress',
            priority,
          });
          // The case itself was acknowledged by its create; the patch is its own write.
          load.cases.push(id);
          load.patches.push({ id, priority, acknowledged: note('patch case', patched) });
        }
        // A link with its outbox event (link.created), written in one transaction.
        const code = `${run}-${n}-${i}`;
        const link = await call('POST', `/admin/collection/${COLLECTION}/links`, {
          url: `https://example.com/${n}/${i}`,
          code,
        });
        if (note('create link', link)) load.links.push(code);
        else if (link.status === 503) load.refusedLinks.push(code);
      } catch (err) {
        // fetch failed: the process is gone or dropped the connection. Never acceptable.
        load.bad.push(`client ${n}: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const clients = Array.from({ length: CLIENTS }, (_, n) => client(n));
  load.stop = async () => {
    running = false;
    await Promise.all(clients);
  };
  return load;
}

async function terminateBackends(): Promise<number> {
  const { rows } = await admin.query<{ n: number }>(
    'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1',
    [appName],
  );
  return rows[0].n;
}

/** Polls /readyz; resolves with how many 503s it saw before the first 200 (deadline 15 s). */
async function readyAgain(): Promise<number> {
  let notReady = 0;
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    const res = await fetch(`${api.url}/readyz`);
    if (res.status === 200) return notReady;
    expect(res.status).toBe(503);
    notReady++;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('/readyz did not answer 200 within 15 s');
}

/** The API process's LISTEN connection is re-established (its backoff is at most 5 s). */
async function listenerBack(): Promise<void> {
  const until = Date.now() + 15_000;
  for (;;) {
    const ready = await call('GET', '/readyz');
    if (ready.status === 200 && ready.body.listener === 'connected') return;
    if (Date.now() > until) throw new Error(`LISTEN not re-established: ${JSON.stringify(ready.body)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function expectStored(load: Load): Promise<void> {
  const cases = await testDb.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM app_cases WHERE collection_id = $1 AND id = ANY($2)',
    [COLLECTION, load.cases],
  );
  expect(cases.rows[0].n).toBe(load.cases.length);
  const links = await testDb.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM links WHERE collection_id = $1 AND code = ANY($2)',
    [COLLECTION, load.links],
  );
  expect(links.rows[0].n).toBe(load.links.length);
  await expectPatchesWhole(load);
  // A link refused with 503 may have been stored (the answer was lost, not the commit), but
  // then with its outbox event: never one without the other.
  const refused = await testDb.db.query<{ code: string; events: number }>(
    `SELECT l.code, (SELECT count(*)::int FROM webhook_events e
       WHERE e.collection_id = l.collection_id AND e.body::json->'data'->>'code' = l.code) AS events
     FROM links l WHERE l.collection_id = $1 AND l.code = ANY($2)`,
    [COLLECTION, load.refusedLinks],
  );
  expect(refused.rows.filter((r) => r.events !== 1)).toEqual([]);
  // Every acknowledged link's event is delivered by the worker, outage or not.
  const want = new Set(load.links);
  const until = Date.now() + 60_000;
  const delivered = () => new Set(rx.received.map((r) => r.body.data.code as string));
  while (Date.now() < until && [...want].some((c) => !delivered().has(c))) {
    await new Promise((r) => setTimeout(r, 200));
  }
  const missing = [...want].filter((c) => !delivered().has(c));
  if (missing.length > 0) {
    // Where each undelivered event stands, and its delivery job: the failure says why.
    const stuck = await testDb.db.query(
      `SELECT e.body::json->'data'->>'code' AS code, d.status, d.attempt_count, d.next_attempt_at,
         (SELECT json_agg(json_build_object('id', j.id, 'status', j.status, 'attempts', j.attempts,
                  'run_at', j.run_at, 'locked_by', j.locked_by, 'error', j.last_error))
            FROM jobs j WHERE j.collection_id = d.collection_id AND j.payload->>'deliveryId' = d.id) AS jobs
       FROM webhook_deliveries d JOIN webhook_events e ON e.collection_id = d.collection_id AND e.id = d.event_id
       WHERE d.collection_id = $1 AND e.body::json->'data'->>'code' = ANY($2)`,
      [COLLECTION, missing],
    );
    expect.fail(`${missing.length} of ${want.size} events not delivered: ${JSON.stringify(stuck.rows)}`);
  }
}

/**
 * Every PATCH answered 2xx is stored with the value it sent, with the one history row that
 * records that change (same transaction). A PATCH answered 503 is all or nothing: either the
 * same (its commit went through and only the answer was lost) or the case as created (status
 * open, no priority) without such a row; never the change without its row or the reverse.
 * Every acknowledged case has its one create row.
 */
async function expectPatchesWhole(load: Load): Promise<void> {
  const ids = load.patches.map((p) => p.id);
  const stored = await testDb.db.query<{ id: string; status: string; priority: string | number | null }>(
    'SELECT id, status, priority FROM app_cases WHERE collection_id = $1 AND id = ANY($2)',
    [COLLECTION, ids],
  );
  const history = await testDb.db.query<{
    case_id: string;
    action: string;
    changes: Record<string, { from: unknown; to: unknown }>;
  }>('SELECT case_id, action, changes FROM app_case_history WHERE collection_id = $1 AND case_id = ANY($2)', [
    COLLECTION,
    load.cases,
  ]);
  const rowOf = new Map(stored.rows.map((r) => [r.id, r]));
  const problems: string[] = [];
  for (const id of load.cases) {
    const creates = history.rows.filter((h) => h.case_id === id && h.action === 'create').length;
    if (creates !== 1) problems.push(`${id}: ${creates} create rows`);
  }
  let appliedDespite503 = 0;
  for (const p of load.patches) {
    const row = rowOf.get(p.id);
    // The row recording this PATCH's change (a retried transaction whose first commit went
    // through records a second, empty update: it changed nothing and is not counted).
    const changes = history.rows.filter(
      (h) => h.case_id === p.id && h.action === 'update' && h.changes.status?.to === 'in_progress',
    );
    const applied =
      row?.status === 'in_progress' &&
      Number(row.priority) === p.priority &&
      changes.length === 1 &&
      changes[0].changes.priority?.to === p.priority;
    const untouched = row?.status === 'open' && row.priority === null && changes.length === 0;
    const seen = `${p.id} (${p.acknowledged ? '2xx' : '503'}): ${JSON.stringify(row)}, ${JSON.stringify(changes)}`;
    if (p.acknowledged && !applied) problems.push(`acknowledged but not stored whole: ${seen}`);
    if (!p.acknowledged && !applied && !untouched) problems.push(`refused and half applied: ${seen}`);
    if (!p.acknowledged && applied) appliedDespite503++;
  }
  console.info('patches:', {
    acknowledged: load.patches.filter((p) => p.acknowledged).length,
    refused: load.patches.filter((p) => !p.acknowledged).length,
    appliedDespite503,
  });
  expect(problems).toEqual([]);
  expect(load.patches.some((p) => p.acknowledged)).toBe(true);
}

/** A job enqueued through the API is run by the worker well before its 10-minute poll. */
async function jobPickedUp(): Promise<void> {
  const created = await call('POST', `/admin/collection/${COLLECTION}/async/jobs`, {
    task: 'records.import',
    payload: { appId: 'desk', items: [{ ref: `after-${Date.now()}`, data: {} }] },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  const until = Date.now() + 30_000;
  for (;;) {
    const job = await call('GET', `/admin/collection/${COLLECTION}/jobs/${created.body.id}`);
    if (job.body?.status === 'completed') return;
    if (Date.now() > until) throw new Error(`job not picked up: ${JSON.stringify(job.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function expectAlive(): void {
  expect(api.child.exitCode).toBeNull();
  expect(worker.child.exitCode).toBeNull();
}

describe.skipIf(!onPostgres)('database faults with real processes', () => {
  beforeAll(async () => {
    testDb = await createTestDb({ migrate: false });
    const base = new URL(process.env.TEST_DATABASE_URL as string);
    admin = new pg.Client({ connectionString: base.toString() });
    await admin.connect();
    proxy = await startTcpProxy({ host: base.hostname, port: Number(base.port || 5432) });
    const url = new URL(testDb.url as string);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    url.searchParams.set('application_name', appName);
    rx = await startReceiver();
    const env = {
      DATABASE_URL: url.toString(),
      SUPER_ADMIN_KEY: SUPER_KEY,
      RATE_LIMIT_MAX: '1000000',
      LOG_LEVEL: 'fatal',
      // Ten minutes: a job is picked up in time only through LISTEN or the reconnect sweep.
      JOBS_POLL_INTERVAL_MS: '600000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    };
    api = await spawnTs('src/server.ts', { env: { ...env, ROLE: 'api' }, readyPath: '/readyz' });
    // A worker has no HTTP listener: it is ready when its log says so.
    worker = await spawnTs('src/server.ts', {
      env: { ...env, ROLE: 'worker', LOG_LEVEL: 'info' },
      readyLine: 'worker started',
    });
    expect((await call('POST', '/platform/collections', { id: COLLECTION, name: 'Faults' })).status).toBe(200);
    key = (await call('POST', `/admin/collection/${COLLECTION}/api-keys`, { name: 'faults' })).body.key;
    const hook = await call('POST', '/v1/webhooks', { url: `${rx.url}/hook`, events: ['link.created'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    await jobPickedUp();
  });

  afterAll(async () => {
    await api?.stop();
    await worker?.stop();
    await proxy?.close();
    await rx?.close();
    await admin?.end();
    await testDb?.drop().catch(() => {});
  });

  it(
    '30 rounds of pg_terminate_backend under write load: 2xx or 503 only, nothing lost, LISTEN back',
    async () => {
      const load = writeLoad();
      await new Promise((r) => setTimeout(r, 500));
      let terminated = 0;
      for (let round = 0; round < 30; round++) {
        terminated += await terminateBackends();
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 500));
      await load.stop();

      console.info('terminate rounds:', { terminated, answers: Object.fromEntries(load.statuses) });
      expect(terminated).toBeGreaterThan(30);
      expect(load.bad).toEqual([]);
      expect(load.cases.length).toBeGreaterThan(0);
      expectAlive();
      await readyAgain();
      await listenerBack();
      await expectStored(load);
      await jobPickedUp();
      expectAlive();
    },
    FAULT_TEST_TIMEOUT_MS,
  );

  it(
    'the database unreachable for 10 s, then back: 503 meanwhile, ready again, workers resume',
    async () => {
      // Due while the database is away: the worker must run it once it is back.
      const duringOutage = await call('POST', `/admin/collection/${COLLECTION}/async/jobs`, {
        task: 'records.import',
        payload: { appId: 'desk', items: [{ ref: 'due-in-outage', data: {} }] },
        runAt: new Date(Date.now() + 2000).toISOString(),
      });
      expect(duringOutage.status, JSON.stringify(duringOutage.body)).toBe(202);
      const load = writeLoad();
      await new Promise((r) => setTimeout(r, 500));
      const acceptedBefore = proxy.accepted;
      proxy.cut();
      const cutAt = Date.now();
      let readyDuringOutage = 0;
      while (Date.now() - cutAt < 10_000) {
        const res = await fetch(`${api.url}/readyz`);
        if (res.status === 503) readyDuringOutage++;
        else expect(res.status).toBe(503);
        await new Promise((r) => setTimeout(r, 250));
      }
      proxy.restore();
      await new Promise((r) => setTimeout(r, 1000));
      await load.stop();

      console.info('10 s outage:', { readyDuringOutage, answers: Object.fromEntries(load.statuses) });
      expect(readyDuringOutage).toBeGreaterThan(0);
      expect(load.statuses.get(503) ?? 0).toBeGreaterThan(0);
      expect(load.bad).toEqual([]);
      expectAlive();
      await readyAgain();
      expect(proxy.accepted).toBeGreaterThan(acceptedBefore);
      await listenerBack();
      await expectStored(load);
      const until = Date.now() + 30_000;
      for (;;) {
        const job = await call('GET', `/admin/collection/${COLLECTION}/jobs/${duringOutage.body.id}`);
        if (job.body?.status === 'completed') break;
        if (Date.now() > until) throw new Error(`job due in the outage never ran: ${JSON.stringify(job.body)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      await jobPickedUp();
      expectAlive();
    },
    FAULT_TEST_TIMEOUT_MS,
  );
});
