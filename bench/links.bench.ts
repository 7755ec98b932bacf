/**
 * Links and webhooks scenarios.
 * - Redirect throughput: GET /l/{code} on the real service (cache hit, click captured in the
 *   background and stored with its link.clicked event) against a bare Fastify route answering
 *   the same 302, measured in the same run. Target ratio ≥ 0.8.
 * - Webhook fan-out: links created through the API, each event delivered to every one of
 *   BENCH_HOOKS registrations at a receiver in this process; deliveries per second.
 * - Event-to-delivery latency: from the event's created_at to its arrival at the receiver,
 *   at a steady trickle of events (p50 target < 100 ms).
 * - Click storage cost (PostgreSQL only): CPU time per click of the writer's own code path
 *   (links repository insertClicks, batches of CLICK_BATCH_SIZE), in this process and in the
 *   PostgreSQL backend. It is what the redirect row pays on top of the bare 302, since the
 *   load generator, the service and PostgreSQL share the machine's cores.
 * Backend: PostgreSQL by default; BENCH_BACKEND=pglite for the embedded database.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openDatabase } from '../src/db/index.ts';
import { addToRollup } from '../src/modules/links/click-rollup.ts';
import { insertClicks } from '../src/modules/links/links.repository.ts';
import {
  benchDatabase,
  call,
  interleaved,
  load,
  printTable,
  processCpuUs,
  type Row,
  row,
  seedCollection,
  spawnTs,
  startService,
} from './lib.ts';

const backend = (process.env.BENCH_BACKEND ?? 'postgres') as 'postgres' | 'pglite';
const HOOKS = Number(process.env.BENCH_HOOKS ?? 10);
const FANOUT_LINKS = Number(process.env.BENCH_FANOUT_LINKS ?? 200);
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 200);
const DESTINATION = 'https://example.com/landing?utm_source=bench';
const STORAGE_BATCH = Number(process.env.CLICK_BATCH_SIZE ?? 2000);
const STORAGE_BATCHES = Number(process.env.BENCH_STORAGE_BATCHES ?? 50);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** A receiver in this process: answers 200 at once and notes when each event arrived. */
async function receiver() {
  const arrivals: { path: string; eventId: string; createdAt: number; at: number }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; created_at: string };
      arrivals.push({ path: req.url ?? '/', eventId: body.id, createdAt: Date.parse(body.created_at), at });
      res.writeHead(200).end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, arrivals, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function waitUntil(check: () => boolean, timeoutMs: number, what: string) {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Stores STORAGE_BATCHES batches of clicks through the service's own repository function. */
async function clickStorageCost(url: string, collectionId: string, linkId: string): Promise<Row> {
  const db = await openDatabase({ databaseUrl: url, dataDir: '', databasePoolSize: 1 });
  try {
    const pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    // A realistic mix: every click from its own address; user agents, referers and places
    // from small sets, as in real traffic. Batches are built before the clock starts.
    const uas = Array.from(
      { length: 20 },
      (_, i) =>
        `Mozilla/5.0 (iPhone; CPU iPhone OS 17_${i} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1`,
    );
    const places = [
      ['DE', 'Berlin'],
      ['FR', 'Paris'],
      ['US', 'Chicago'],
      ['JP', 'Osaka'],
      ['', ''],
    ];
    let seq = 0;
    const batch = () =>
      Array.from({ length: STORAGE_BATCH }, () => {
        const i = seq++;
        return {
          collectionId,
          linkId,
          clickedAt: new Date(),
          ipAddress: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
          userAgent: uas[i % uas.length],
          referer: `https://news.example/post/${i % 50}`,
          country: places[i % places.length][0],
          city: places[i % places.length][1],
          deviceType: 'mobile',
          region: '',
          browser: 'Mobile Safari',
          os: 'iOS',
          utmSource: i % 3 === 0 ? 'newsletter' : '',
          utmMedium: i % 3 === 0 ? 'email' : '',
          utmCampaign: i % 3 === 0 ? `spring-${i % 4}` : '',
          utmTerm: '',
          utmContent: '',
          trigger: 'link',
          route: 'destination',
          visitor: `v${i % 5000}`,
        };
      });
    const batches = Array.from({ length: STORAGE_BATCHES }, batch);
    const node0 = process.cpuUsage();
    const pg0 = processCpuUs(pid);
    // What a click batch stores: the clicks and counters, and the collection-wide analytics.
    for (const b of batches)
      await db.transaction(async (tx) => {
        await insertClicks(tx, b);
        await addToRollup(tx, b);
      });
    const node = process.cpuUsage(node0);
    const clicks = STORAGE_BATCH * STORAGE_BATCHES;
    const nodeUs = (node.user + node.system) / clicks;
    const pgUs = (processCpuUs(pid) - pg0) / clicks;
    return {
      scenario: `click storage: ${STORAGE_BATCHES} batches of ${STORAGE_BATCH} (insertClicks, addToRollup)`,
      note: `CPU per click: ${nodeUs.toFixed(1)} µs in Node, ${pgUs.toFixed(1)} µs in PostgreSQL`,
    };
  } finally {
    await db.close();
  }
}

const database = await benchDatabase(backend);
const rx = await receiver();
try {
  const rows: Row[] = [];
  const service = await startService({
    ...database.env,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    JOBS_CONCURRENCY: process.env.BENCH_JOBS_CONCURRENCY ?? '32',
    // Deliveries run in their own lane (jobs.md, "Fair work between collections"): the same
    // 32 slots they had before it, all of them open to the one collection here.
    JOBS_DELIVERIES_CONCURRENCY: process.env.BENCH_JOBS_CONCURRENCY ?? '32',
    JOBS_DELIVERIES_COLLECTION_CONCURRENCY: process.env.BENCH_JOBS_CONCURRENCY ?? '32',
    LOG_LEVEL: 'warn',
  });
  const bare = await spawnTs('bench/baseline-server.ts', { BASELINE: 'redirect', LOCATION: DESTINATION });
  try {
    const c = await seedCollection(service.url, 'benchlinks');
    const link = await call<{ code: string; id: string }>(
      service.url,
      'POST',
      `/admin/collection/${c.id}/links`,
      { url: DESTINATION },
      c.key,
    );
    // Interleaved rounds, medians (bench/lib.ts): outside load hits both sides alike.
    const measured = await interleaved({
      bare: () => load({ url: `${bare.url}/x`, expectStatus: 302 }),
      redirect: async () => {
        const r = await load({ url: `${service.url}/l/${link.code}`, expectStatus: 302 });
        await sleep(1000); // let the click backlog drain before the next round
        return r;
      },
    });
    await bare.stop();
    rows.push(row('baseline: bare Fastify 302', measured.bare));
    rows.push(
      row('GET /l/{code} (302, click captured)', measured.redirect, {
        name: 'bare Fastify 302',
        result: measured.bare,
      }),
    );
    if (database.url) rows.push(await clickStorageCost(database.url, c.id, link.id));

    // Let the click backlog drain before measuring deliveries, so the two do not mix.
    await sleep(2000);

    // Fan-out: HOOKS registrations on link.created; FANOUT_LINKS links created 10 at a time.
    for (let i = 0; i < HOOKS; i++) {
      await call(service.url, 'POST', '/v1/webhooks', { url: `${rx.url}/fan/${i}`, events: ['link.created'] }, c.key);
    }
    const started = Date.now();
    for (let i = 0; i < FANOUT_LINKS; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, FANOUT_LINKS - i) }, (_, j) =>
          call(
            service.url,
            'POST',
            `/admin/collection/${c.id}/links`,
            { url: `https://example.com/f/${i + j}` },
            c.key,
          ),
        ),
      );
    }
    const expected = HOOKS * FANOUT_LINKS;
    await waitUntil(() => rx.arrivals.filter((a) => a.path.startsWith('/fan/')).length >= expected, 300_000, 'fan-out');
    const fan = rx.arrivals.filter((a) => a.path.startsWith('/fan/'));
    const seconds = (Math.max(...fan.map((a) => a.at)) - started) / 1000;
    const fanLatency = fan.map((a) => a.at - a.createdAt).sort((x, y) => x - y);
    rows.push({
      scenario: `webhook fan-out: ${FANOUT_LINKS} events × ${HOOKS} registrations`,
      rps: expected / seconds,
      p50: percentile(fanLatency, 50),
      p99: percentile(fanLatency, 99),
      note: `deliveries/s; p50/p99 = event-to-delivery under the burst (${expected} deliveries in ${seconds.toFixed(1)} s)`,
    });

    // Latency at a trickle: one registration, one event every 50 ms.
    for (const w of (await call<{ items: { id: string }[] }>(service.url, 'GET', '/v1/webhooks', undefined, c.key))
      .items) {
      await call(service.url, 'PATCH', `/v1/webhooks/${w.id}`, { active: false }, c.key);
    }
    await call(service.url, 'POST', '/v1/webhooks', { url: `${rx.url}/one`, events: ['link.created'] }, c.key);
    for (let i = 0; i < LATENCY_EVENTS; i++) {
      await call(service.url, 'POST', `/admin/collection/${c.id}/links`, { url: `https://example.com/l/${i}` }, c.key);
      await sleep(50);
    }
    await waitUntil(
      () => rx.arrivals.filter((a) => a.path === '/one').length >= LATENCY_EVENTS,
      120_000,
      'latency events',
    );
    const one = rx.arrivals
      .filter((a) => a.path === '/one')
      .map((a) => a.at - a.createdAt)
      .sort((x, y) => x - y);
    rows.push({
      scenario: 'event-to-delivery latency (1 registration, 20 events/s)',
      p50: percentile(one, 50),
      p99: percentile(one, 99),
      note: 'target p50 < 100 ms',
    });
  } finally {
    await bare.stop();
    await service.stop();
  }
  printTable(`Links and webhooks (${backend})`, rows);
} finally {
  await rx.close();
  await database.drop();
}
