/**
 * GET /metrics (docs/operations.md, "Metrics and traces"): the answer parses with a Prometheus
 * text-format parser, and its counters move by exactly the work done: links created, redirects
 * followed, jobs run (a success, a failure with its retry), webhook deliveries to a real
 * receiver on loopback (one that answers 200, one that answers 500), requests no route matched.
 * Gauges read at scrape: the click buffer, the app-task backlog, the pool (PostgreSQL), the
 * replicas' lag. Protection: METRICS_TOKEN, METRICS_ENABLED.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, superAuth, type TestApp, type TestCollection } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { subscribe, twoCollections } from './helpers/fixtures.ts';
import { enqueue, waitFor, waitForStatus } from './helpers/jobs.ts';
import { parseExposition, type Sample, sampleValue } from './helpers/prometheus.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: TestCollection;
let b: TestCollection;
let rx: Receiver;

beforeAll(async () => {
  rx = await startReceiver();
  rx.answer('/fail', { status: 500 });
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_BACKOFF_BASE_MS: '0',
    // A failed attempt is the delivery's last: it fails for good at once.
    WEBHOOK_MAX_RETRIES: '0',
    JOBS_BACKOFF_BASE_MS: '20',
    JOBS_POLL_INTERVAL_MS: '200',
    // Clicks stay in the buffer until the test stores them; a fourth one finds it full.
    CLICK_FLUSH_MS: '60000',
    CLICK_BUFFER_MAX: '3',
  });
  t.app.services.jobs.engine.registerTask({
    name: 'test.echo',
    visible: true,
    handler: async (ctx) => ctx.job.payload,
  });
  t.app.services.jobs.engine.registerTask({
    name: 'test.fail',
    visible: true,
    handler: async () => {
      throw new Error('always');
    },
  });
  ({ a, b } = await twoCollections(t));
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

async function scrape(app: TestApp = t, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseExposition(res.body);
}

/** Scrapes until `name{labels}` has moved by `by` since `before`; then it must not have moved more. */
async function moved(before: Sample[], name: string, labels: Record<string, string>, by: number): Promise<Sample[]> {
  const from = sampleValue(before, name, labels);
  const after = await waitFor(
    async () => {
      const now = await scrape();
      return sampleValue(now, name, labels) >= from + by ? now : undefined;
    },
    15_000,
    `${name} ${JSON.stringify(labels)} to move by ${by}`,
  );
  expect(sampleValue(after, name, labels) - from).toBe(by);
  return after;
}

const LINKS = '/admin/collection/:collectionId/links';

describe('GET /metrics', () => {
  it('answers the process metrics, and no pool series on PGlite (it has none)', async () => {
    const s = await scrape();
    expect(s.some((x) => x.name === 'process_cpu_user_seconds_total')).toBe(true);
    expect(s.some((x) => x.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
    // Analytics reads' slots (docs/operations.md, "Analytics reads in slots"): none busy.
    const slots = s.filter((x) => x.name === 'analytics_reads' || x.name === 'analytics_reads_refused_total');
    expect(slots.map((x) => `${x.name}${x.labels.state ? `{${x.labels.state}}` : ''}=${x.value}`).sort()).toEqual([
      'analytics_reads_refused_total=0',
      'analytics_reads{running}=0',
      'analytics_reads{waiting}=0',
    ]);
    const pool = s.filter((x) => x.name === 'db_pool_connections');
    if (onPostgres) {
      expect(pool.map((x) => x.labels.state).sort()).toEqual(['idle', 'total', 'waiting']);
      expect(sampleValue(s, 'db_pool_connections', { state: 'total' })).toBeGreaterThan(0);
    } else {
      expect(pool).toEqual([]);
    }
  });

  it('counts requests by route template, method and status, and times them by route', async () => {
    const before = await scrape();
    const links: { code: string }[] = [];
    for (const url of ['https://example.com/1', 'https://example.com/2', 'https://example.com/3']) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/links`,
        headers: a.auth,
        payload: { url },
      });
      expect(res.statusCode).toBe(200);
      links.push(res.json() as { code: string });
    }
    for (const l of links) expect((await t.inject({ method: 'GET', url: `/l/${l.code}` })).statusCode).toBe(302);
    expect((await t.inject({ method: 'GET', url: `/l/${links[0].code}` })).statusCode).toBe(302);
    expect((await t.inject({ method: 'GET', url: '/l/nosuchcode' })).statusCode).toBe(404);
    // HEAD is a route of its own (Fastify adds it beside GET): counted under its method only.
    expect((await t.app.inject({ method: 'HEAD', url: '/healthz' })).statusCode).toBe(200);
    expect((await t.inject({ method: 'DELETE', url: '/no/such/route' })).statusCode).toBe(404);
    // Clicks wait in the buffer (CLICK_FLUSH_MS is long here) until stored; the fourth was dropped.
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta('http_requests_total', { route: LINKS, method: 'POST', status: '200' })).toBe(3);
    expect(delta('http_requests_total', { route: '/l/:code', method: 'GET', status: '302' })).toBe(4);
    expect(delta('http_requests_total', { route: '/l/:code', method: 'GET', status: '404' })).toBe(1);
    expect(delta('http_requests_total', { route: '(unmatched)', method: 'DELETE', status: '404' })).toBe(1);
    expect(delta('http_requests_total', { route: '/healthz', method: 'HEAD', status: '200' })).toBe(1);
    expect(delta('http_requests_total', { route: '/healthz', method: 'GET', status: '200' })).toBe(0);
    expect(delta('http_request_duration_seconds_count', { route: '/l/:code', method: 'GET' })).toBe(5);
    expect(delta('http_request_duration_seconds_bucket', { route: '/l/:code', method: 'GET', le: '+Inf' })).toBe(5);
    // Never a raw path as a label value.
    expect(after.some((x) => x.labels.route?.includes(links[0].code))).toBe(false);
    expect(sampleValue(after, 'link_click_buffer_size')).toBe(3);
    expect(delta('link_clicks_dropped_total', {})).toBe(1);
    await t.app.services.links.redirects.flush();
    expect(sampleValue(await scrape(), 'link_click_buffer_size')).toBe(0);
  });

  it('counts jobs run by task and outcome, their run time and pickup', async () => {
    const before = await scrape();
    const ok = await enqueue(t, a, { task: 'test.echo', payload: { n: 1 } });
    await waitForStatus(t, a, ok.id, ['completed']);
    const echo = { task: 'test.echo', queue: 'default' };
    let after = await moved(before, 'jobs_completed_total', { ...echo, result: 'succeeded' }, 1);
    expect(
      sampleValue(after, 'jobs_run_duration_seconds_count', { task: 'test.echo' }) -
        sampleValue(before, 'jobs_run_duration_seconds_count', { task: 'test.echo' }),
    ).toBe(1);
    expect(
      sampleValue(after, 'jobs_pickup_latency_seconds_count', echo) -
        sampleValue(before, 'jobs_pickup_latency_seconds_count', echo),
    ).toBe(1);

    const bad = await enqueue(t, a, { task: 'test.fail', payload: {}, maxAttempts: 2 });
    await waitForStatus(t, a, bad.id, ['failed']);
    const fail = { task: 'test.fail', queue: 'default' };
    after = await moved(before, 'jobs_failed_total', fail, 1);
    after = await moved(before, 'jobs_completed_total', { ...fail, result: 'failed' }, 1);
    expect(sampleValue(after, 'jobs_completed_total', { ...fail, result: 'retried' })).toBe(1);
    expect(sampleValue(after, 'jobs_completed_total', { ...fail, result: 'succeeded' })).toBe(0);
    expect(sampleValue(after, 'jobs_pickup_latency_seconds_count', fail)).toBe(2);
  });

  it("reads the backlog at scrape: an app task's due job waits in the app lane", async () => {
    const declared = await t.inject({
      method: 'POST',
      url: `/admin/collection/${b.id}/tasks`,
      headers: b.auth,
      payload: { name: 'img.resize' },
    });
    expect(declared.statusCode).toBe(201);
    const before = sampleValue(await scrape(), 'jobs_queue_depth', { task: '(app)', queue: 'app' });
    await enqueue(t, b, { task: 'img.resize', payload: {} });
    await enqueue(t, b, { task: 'img.resize', payload: {} });
    // A backlog read serves the scrapes of the next second too: wait for a fresh one.
    const s = await waitFor(async () => {
      const now = await scrape();
      return sampleValue(now, 'jobs_queue_depth', { task: '(app)', queue: 'app' }) !== before ? now : undefined;
    });
    expect(sampleValue(s, 'jobs_queue_depth', { task: '(app)', queue: 'app' }) - before).toBe(2);
    expect(sampleValue(s, 'jobs_queue_oldest_due_seconds', { task: '(app)', queue: 'app' })).toBeGreaterThanOrEqual(0);
    // A tenant's task name is never a label value.
    expect(s.some((x) => x.labels.task === 'img.resize')).toBe(false);
  });

  it("counts an app's leased jobs under one (app) series: leases, completions, retries and failures", async () => {
    const task = 'pdf.render';
    const declared = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/tasks`,
      headers: a.auth,
      payload: { name: task, maxAttempts: 2 },
    });
    expect(declared.statusCode).toBe(201);
    const app = { task: '(app)', queue: 'app' };
    const before = await scrape();
    const ok = await enqueue(t, a, { task, payload: { n: 1 } });
    const bad = await enqueue(t, a, { task, payload: { n: 2 } });
    const lease = async (n: number) => {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/jobs/lease`,
        headers: a.auth,
        payload: { tasks: [task], max: n },
      });
      expect(res.statusCode).toBe(200);
      return (res.json() as { items: { id: number; leaseId: string }[] }).items;
    };
    const end = async (l: { id: number; leaseId: string }, how: 'complete' | 'fail') => {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/jobs/${l.id}/${how}`,
        headers: a.auth,
        payload:
          how === 'complete'
            ? { leaseId: l.leaseId, result: { ok: true } }
            : { leaseId: l.leaseId, error: 'no', retryAt: new Date().toISOString() },
      });
      expect(res.statusCode).toBe(200);
    };
    const first = await lease(2);
    expect(first.map((l) => l.id).sort()).toEqual([ok.id, bad.id].sort());
    await end(first.find((l) => l.id === ok.id) as { id: number; leaseId: string }, 'complete');
    await end(first.find((l) => l.id === bad.id) as { id: number; leaseId: string }, 'fail');
    const again = await waitFor(async () => {
      const items = await lease(1);
      return items.length > 0 ? items : undefined;
    });
    expect(again.map((l) => l.id)).toEqual([bad.id]);
    await end(again[0], 'fail');
    await waitForStatus(t, a, bad.id, ['failed']);
    // A refused call (its lease is over) counts nothing.
    const late = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/jobs/${ok.id}/complete`,
      headers: a.auth,
      payload: { leaseId: first[0].leaseId, result: null },
    });
    expect(late.statusCode).toBe(409);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta('jobs_pickup_latency_seconds_count', app)).toBe(3);
    expect(delta('jobs_completed_total', { ...app, result: 'succeeded' })).toBe(1);
    expect(delta('jobs_completed_total', { ...app, result: 'retried' })).toBe(1);
    expect(delta('jobs_completed_total', { ...app, result: 'failed' })).toBe(1);
    expect(delta('jobs_failed_total', app)).toBe(1);
    // Not timed: the worker reports only the end.
    expect(delta('jobs_run_duration_seconds_count', { task: '(app)' })).toBe(0);
    expect(after.some((x) => x.labels.task === task)).toBe(false);
  });

  it("counts an app's leases that expired, handed back by the lock-timeout reclaim (retried, or failed when spent)", async () => {
    const declare = async (name: string, maxAttempts: number) => {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${b.id}/tasks`,
        headers: b.auth,
        payload: { name, maxAttempts, leaseSeconds: 5 },
      });
      expect(res.statusCode).toBe(201);
    };
    await declare('lost.twice', 2);
    await declare('lost.once', 1);
    const app = { task: '(app)', queue: 'app' };
    const before = await scrape();
    const again = await enqueue(t, b, { task: 'lost.twice', payload: {} });
    const spent = await enqueue(t, b, { task: 'lost.once', payload: {} });
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${b.id}/jobs/lease`,
      headers: b.auth,
      payload: { tasks: ['lost.twice', 'lost.once'], max: 2 },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().items).toHaveLength(2);
    // No heartbeat: both leases run out after 5 s, and the engine's poll hands the jobs back.
    await waitForStatus(t, b, again.id, ['errored', 'queued']);
    await waitForStatus(t, b, spent.id, ['failed']);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta('jobs_reclaimed_total', { ...app, result: 'retried' })).toBe(1);
    expect(delta('jobs_reclaimed_total', { ...app, result: 'failed' })).toBe(1);
    expect(delta('jobs_failed_total', app)).toBe(1);
    // Not an outcome a worker reported: the completion counters stay as they were.
    expect(delta('jobs_completed_total', { ...app, result: 'failed' })).toBe(0);
  }, 30_000);

  it('counts webhook attempts by outcome and deliveries failed for good', async () => {
    await subscribe(t, a, `${rx.url}/ok`, ['link.created']);
    await subscribe(t, b, `${rx.url}/fail`, ['link.created']);
    const before = await scrape();
    for (const [c, n] of [
      [a, 2],
      [b, 1],
    ] as const)
      for (let i = 0; i < n; i++) {
        const res = await t.inject({
          method: 'POST',
          url: `/admin/collection/${c.id}/links`,
          headers: c.auth,
          payload: { url: `https://example.com/w${i}` },
        });
        expect(res.statusCode).toBe(200);
      }
    await moved(before, 'webhook_deliveries_total', { result: 'succeeded' }, 2);
    const after = await moved(before, 'webhook_deliveries_failed_total', {}, 1);
    expect(
      sampleValue(after, 'webhook_deliveries_total', { result: 'failed' }) -
        sampleValue(before, 'webhook_deliveries_total', { result: 'failed' }),
    ).toBe(1);
    expect(rx.on('/ok')).toHaveLength(2);
    expect(rx.on('/fail')).toHaveLength(1);
    expect(
      sampleValue(after, 'webhook_delivery_duration_seconds_count') -
        sampleValue(before, 'webhook_delivery_duration_seconds_count'),
    ).toBe(3);
    // Their jobs ran in the deliveries lane (one job may carry several attempts), counted
    // once each job's completion is written.
    await waitFor(async () => {
      const now = await scrape();
      const deliver = { task: 'webhooks.deliver', queue: 'deliveries', result: 'succeeded' };
      return (
        sampleValue(now, 'jobs_completed_total', deliver) > sampleValue(before, 'jobs_completed_total', deliver) ||
        undefined
      );
    });
    expect(sampleValue(after, 'webhook_delivery_lag_seconds')).toBeGreaterThanOrEqual(0);
  });
});

describe('protection and replicas', () => {
  let guarded: TestApp | undefined;
  afterAll(() => guarded?.close());

  it('asks for METRICS_TOKEN when set; reports the replicas a database names', async () => {
    const token = 'metrics-token-0123456789';
    // The database layer reports replicas once it has them (docs/operations.md): a pass-through
    // around the real database adds that report here.
    guarded = await createTestApp(
      { METRICS_TOKEN: token },
      {
        wrapDb: (db) =>
          Object.assign(Object.create(db), {
            status: () => ({
              ...db.status(),
              replicas: [
                { name: 'replica-1', lagSeconds: 1.5, state: 'ok' as const },
                { name: 'replica-2', lagSeconds: null, state: 'down' as const },
              ],
            }),
          }),
      },
    );
    const refused = await guarded.inject({ method: 'GET', url: '/metrics' });
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toMatchObject({ errorCode: 'UNAUTHORIZED' });
    expect((await guarded.inject({ method: 'GET', url: '/metrics', headers: superAuth })).statusCode).toBe(401);
    const s = await scrape(guarded, { authorization: `Bearer ${token}` });
    // A query string (some scrapers add one) is the same path: the token is still its own.
    const withQuery = await guarded.inject({
      method: 'GET',
      url: '/metrics?name[]=db_replica_lag_seconds',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(withQuery.statusCode, withQuery.body).toBe(200);
    expect(sampleValue(s, 'db_replica_lag_seconds', { replica: 'replica-1' })).toBe(1.5);
    // Lag unknown: no sample rather than a made-up one.
    expect(s.filter((x) => x.name === 'db_replica_lag_seconds')).toHaveLength(1);
    expect(sampleValue(s, 'db_replica_state', { replica: 'replica-2', state: 'down' })).toBe(1);
    expect(sampleValue(s, 'db_replica_state', { replica: 'replica-1', state: 'ok' })).toBe(1);
  });

  it('is not served with METRICS_ENABLED=false', async () => {
    const off = await createTestApp({ METRICS_ENABLED: 'false' });
    try {
      expect((await off.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    } finally {
      await off.close();
    }
  });
});
