/**
 * Webhook delivery at scale (docs/design/webhooks.md, "Delivery at scale"), against a raw baseline
 * measured in the same run:
 * - Raw: one Node process posting signed requests over keep-alive connections to the bench's
 *   receiver, as many at a time as our delivery sends to it (WEBHOOK_MAX_IN_FLIGHT, 8 by
 *   default, for one registration; 32 = the deliveries lane's slots for ten), BENCH_SECONDS each.
 * - Ours: a backlog of link.clicked deliveries written by an API-only process (ROLE=api: clicks
 *   through GET /l/{code}), then drained by a ROLE=all process started on the same database;
 *   deliveries/s = deliveries ÷ (last arrival − first arrival) at the receiver. One
 *   registration × BENCH_WEBHOOK_EVENTS events, and ten × a tenth of them.
 * - Trickle: event-to-delivery latency, one registration, an event (link created) every 50 ms.
 * - Redirect with a link.clicked subscriber: GET /l/{code} of a collection whose registration
 *   takes every click, and of one without, against a bare Fastify 302, interleaved rounds.
 * BENCH_RUNS (default 1) repeats the delivery scenarios; figures are their medians.
 * Backend: PostgreSQL by default; BENCH_BACKEND=pglite for the embedded database.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import autocannon from 'autocannon';
import {
  benchDatabase,
  call,
  interleaved,
  load,
  median,
  printTable,
  ROOT,
  type Row,
  row,
  seedCollection,
  spawnTs,
  startService,
} from './lib.ts';

const backend = (process.env.BENCH_BACKEND ?? 'postgres') as 'postgres' | 'pglite';
const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 20_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 1);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const TRICKLE = Number(process.env.BENCH_LATENCY_EVENTS ?? 200);
/** Seconds of unmeasured load on a fresh API process before a redirect round. */
const WARM_SECONDS = Number(process.env.BENCH_WARM_SECONDS ?? 2);
/** BENCH_WEBHOOK_ONLY=redirect: only the redirect with and without a subscriber; =delivery: only the drains. */
const ONLY = process.env.BENCH_WEBHOOK_ONLY;
const REDIRECT_ONLY = ONLY === 'redirect';
const SLOTS = process.env.BENCH_JOBS_CONCURRENCY ?? '32';
/** Our attempts in flight to one registration (the service's default unless set): the raw poster's concurrency for one. */
const IN_FLIGHT = Number(process.env.WEBHOOK_MAX_IN_FLIGHT ?? 8);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/**
 * The receiver, in this process: answers 200 at once, after the same work for every request
 * (the body parsed, the arrival counted under its path's first segment, O(1)), raw POSTs and
 * deliveries alike. Event-to-arrival latencies are kept for /trickle only. (It kept every
 * arrival in a list that the bench filtered every 20 ms while waiting: with 100,000 deliveries
 * that took the receiver's share of the two cores from the worker, more with every run.)
 */
async function receiver() {
  const tally = new Map<string, { n: number; first: number; last: number }>();
  const trickle: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { created_at: string };
      const path = req.url ?? '/';
      const key = path.slice(0, path.indexOf('/', 1) === -1 ? undefined : path.indexOf('/', 1));
      const t = tally.get(key);
      if (t) {
        t.n++;
        t.last = at;
      } else tally.set(key, { n: 1, first: at, last: at });
      if (key === '/trickle') trickle.push(at - Date.parse(body.created_at));
      res.writeHead(200).end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    /** Arrivals under a first path segment (`/one0`, `/clicks`): how many, the first and the last. */
    seen: (key: string) => tally.get(key) ?? { n: 0, first: 0, last: 0 },
    trickle,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Signed POSTs a second from one other Node process, `concurrency` at a time. */
function rawRate(target: string, concurrency: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'webhooks-raw-poster.ts')], {
      cwd: ROOT,
      env: { ...process.env, TARGET: target, CONCURRENCY: String(concurrency), SECONDS: String(SECONDS) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.on('error', reject);
    child.on('exit', () => {
      try {
        const r = JSON.parse(out) as { posts: number; seconds: number };
        resolve(r.posts / r.seconds);
      } catch (err) {
        reject(err);
      }
    });
  });
}

const rx = await receiver();
const serviceEnv = {
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  JOBS_CONCURRENCY: SLOTS,
  JOBS_DELIVERIES_CONCURRENCY: SLOTS,
  JOBS_DELIVERIES_COLLECTION_CONCURRENCY: SLOTS,
  LOG_LEVEL: 'warn',
};

/**
 * A backlog of `clicks` link.clicked events for `hooks` registrations written by a ROLE=api
 * process, drained by a ROLE=all one; deliveries a second at the receiver.
 */
async function drainRate(hooks: number, clicks: number, tag: string): Promise<{ rate: number; seconds: number }> {
  const database = await benchDatabase(backend);
  try {
    const api = await startService({ ...database.env, ...serviceEnv, ROLE: 'api' });
    let c: { id: string; key: string };
    try {
      c = await seedCollection(api.url, `wh${tag}`);
      const link = await call<{ code: string; id: string }>(
        api.url,
        'POST',
        `/admin/collection/${c.id}/links`,
        { url: 'https://example.com/' },
        c.key,
      );
      const ids: string[] = [];
      for (let i = 0; i < hooks; i++) {
        const w = await call<{ id: string }>(
          api.url,
          'POST',
          '/v1/webhooks',
          { url: `${rx.url}/${tag}/${i}`, events: ['link.clicked'] },
          c.key,
        );
        ids.push(w.id);
      }
      await autocannon({
        url: `${api.url}/l/${link.code}`,
        connections: 20,
        amount: clicks,
        followRedirects: false,
      } as autocannon.Options);
      // Every click stored (its link.clicked event noted with its batch) before the worker
      // starts; the worker publishes the noted events and delivers them (links click-events.ts).
      await waitUntil(
        async () =>
          (
            await call<{ clicks: number }>(
              api.url,
              'GET',
              `/admin/collection/${c.id}/links/${link.id}`,
              undefined,
              c.key,
            )
          ).clicks >= clicks,
        120_000,
        'the backlog',
      );
    } finally {
      await api.stop();
    }
    const worker = await startService({ ...database.env, ...serviceEnv, ROLE: 'all' });
    try {
      await waitUntil(() => rx.seen(`/${tag}`).n >= hooks * clicks, 600_000, `${hooks * clicks} deliveries`);
      const { first, last } = rx.seen(`/${tag}`);
      const seconds = (last - first) / 1000;
      return { rate: (hooks * clicks) / seconds, seconds };
    } finally {
      await worker.stop();
    }
  } finally {
    await database.drop();
  }
}

try {
  const rows: Row[] = [];
  const rawOne: number[] = [];
  const raw32: number[] = [];
  const one: number[] = [];
  const ten: number[] = [];
  const ratio1: number[] = [];
  const ratio10: number[] = [];
  for (let r = 0; r < (REDIRECT_ONLY ? 0 : RUNS); r++) {
    const r1 = await rawRate(`${rx.url}/raw`, IN_FLIGHT);
    const o1 = await drainRate(1, EVENTS, `one${r}`);
    const r32 = await rawRate(`${rx.url}/raw`, 32);
    const o10 = await drainRate(10, Math.round(EVENTS / 10), `ten${r}`);
    rawOne.push(r1);
    raw32.push(r32);
    one.push(o1.rate);
    ten.push(o10.rate);
    ratio1.push(o1.rate / r1);
    ratio10.push(o10.rate / r32);
    console.log(
      `run ${r + 1}: raw ${IN_FLIGHT} ${r1.toFixed(0)}/s, ours 1 registration ${o1.rate.toFixed(0)}/s (${o1.seconds.toFixed(1)} s); raw 32 ${r32.toFixed(0)}/s, ours 10 registrations ${o10.rate.toFixed(0)}/s (${o10.seconds.toFixed(1)} s)`,
    );
  }
  if (!REDIRECT_ONLY) {
    const runs = RUNS > 1 ? `median of ${RUNS} runs` : 'one run';
    /** The raw row at `concurrency`, then ours against it (the ratio taken within each run). */
    const against = (concurrency: number, registrations: string, raw: number[], ours: number[], ratios: number[]) =>
      rows.push(
        {
          scenario: `raw: signed POSTs, one Node process, keep-alive, ${concurrency} at a time`,
          rps: median(raw),
          note: runs,
        },
        {
          scenario: `ours: ${registrations}, backlog of ${EVENTS} deliveries`,
          rps: median(ours),
          baseline: `raw, ${concurrency} at a time`,
          ratio: median(ratios),
          note: `${runs}; ratio within each run`,
        },
      );
    against(IN_FLIGHT, '1 registration', rawOne, one, ratio1);
    against(32, '10 registrations', raw32, ten, ratio10);
  }

  // Trickle latency and the redirect with a subscriber, on one service.
  const database = await benchDatabase(backend);
  const service = await startService({ ...database.env, ...serviceEnv });
  const bare = await spawnTs('bench/baseline-server.ts', { BASELINE: 'redirect', LOCATION: 'https://example.com/' });
  try {
    if (!ONLY) {
      const c = await seedCollection(service.url, 'whtrickle');
      await call(service.url, 'POST', '/v1/webhooks', { url: `${rx.url}/trickle`, events: ['link.created'] }, c.key);
      for (let i = 0; i < TRICKLE; i++) {
        await call(
          service.url,
          'POST',
          `/admin/collection/${c.id}/links`,
          { url: `https://example.com/t/${i}` },
          c.key,
        );
        await sleep(50);
      }
      await waitUntil(() => rx.trickle.length >= TRICKLE, 60_000, 'trickle');
      const lat = [...rx.trickle].sort((x, y) => x - y);
      rows.push({
        scenario: `event-to-delivery latency, 1 registration, 20 events/s (${TRICKLE} events)`,
        p50: percentile(lat, 50),
        p99: percentile(lat, 99),
        note: `max ${lat[lat.length - 1]} ms; target p50 < 50 ms`,
      });
    }

    if (ONLY !== 'delivery') {
      // Redirects of a collection without a subscriber, and of one with a link.clicked subscriber,
      // served by an API process (ROLE=api), as a deployment at scale runs them: the redirect and
      // the click's outbox rows are its work, the deliveries a worker's. The worker runs after
      // each round (this machine has 2 cores: a worker delivering during the round takes them
      // from the API process, which says nothing of the redirect path; docs/benchmarks.md has
      // that figure too). PGlite takes one process at a time, so the API process stops while
      // the worker drains. Both subjects get the same process each round: started afresh,
      // warmed for WARM_SECONDS, measured, stopped (its clicks stored). A round on the process
      // the other subject had warmed would favour whichever came second.
      await service.stop();
      let api = await startService({ ...database.env, ...serviceEnv, ROLE: 'api' });
      const quiet = await seedCollection(api.url, 'whquiet');
      const quietLink = await call<{ code: string }>(
        api.url,
        'POST',
        `/admin/collection/${quiet.id}/links`,
        { url: 'https://example.com/' },
        quiet.key,
      );
      const loud = await seedCollection(api.url, 'whloud');
      const loudLink = await call<{ code: string; id: string }>(
        api.url,
        'POST',
        `/admin/collection/${loud.id}/links`,
        { url: 'https://example.com/' },
        loud.key,
      );
      await call<{ id: string }>(
        api.url,
        'POST',
        '/v1/webhooks',
        { url: `${rx.url}/clicks`, events: ['link.clicked'] },
        loud.key,
      );
      // Every click of the link so far delivered (clicks are stored on the API process's stop).
      const delivered = async (url: string) =>
        rx.seen('/clicks').n >=
        (
          await call<{ clicks: number }>(
            url,
            'GET',
            `/admin/collection/${loud.id}/links/${loudLink.id}`,
            undefined,
            loud.key,
          )
        ).clicks;
      let drainedIn: number[] = [];
      let measured: Awaited<ReturnType<typeof interleaved<'bare' | 'redirect' | 'subscribed'>>>;
      try {
        await api.stop();
        /** A fresh API process, warmed on `code`, then measured on it; stopped after. */
        const redirectRound = async (code: string) => {
          api = await startService({ ...database.env, ...serviceEnv, ROLE: 'api' });
          await load({ url: `${api.url}/l/${code}`, expectStatus: 302, durationSeconds: WARM_SECONDS });
          const res = await load({ url: `${api.url}/l/${code}`, expectStatus: 302, durationSeconds: SECONDS });
          await api.stop();
          return res;
        };
        measured = await interleaved({
          bare: () => load({ url: `${bare.url}/x`, expectStatus: 302, durationSeconds: SECONDS }),
          redirect: () => redirectRound(quietLink.code),
          subscribed: async () => {
            const res = await redirectRound(loudLink.code);
            // The round's clicks (stored with their events noted when the API process stopped)
            // delivered by a worker, so that they load no other round.
            const t0 = Date.now();
            const worker = await startService({ ...database.env, ...serviceEnv, ROLE: 'all' });
            try {
              await waitUntil(() => delivered(worker.url), 300_000, 'the clicks’ deliveries');
            } finally {
              await worker.stop();
            }
            drainedIn = [...drainedIn, (Date.now() - t0) / 1000];
            return res;
          },
        });
      } finally {
        await api.stop();
      }
      rows.push(row('baseline: bare Fastify 302', measured.bare));
      rows.push(
        row('GET /l/{code}, API process, no subscriber', measured.redirect, {
          name: 'bare Fastify 302',
          result: measured.bare,
        }),
      );
      const withSub = row('GET /l/{code}, API process, link.clicked subscriber', measured.subscribed, {
        name: 'bare Fastify 302',
        result: measured.bare,
      });
      withSub.note = [
        withSub.note,
        `each round's clicks then delivered by a worker in ${drainedIn.map((s) => s.toFixed(0)).join(', ')} s (start included)`,
      ]
        .filter(Boolean)
        .join('; ');
      rows.push(withSub);
      // The measure: the redirect's rate with a subscriber against its rate without one.
      rows.push(
        row('GET /l/{code}, link.clicked subscriber, against none', measured.subscribed, {
          name: 'no subscriber',
          result: measured.redirect,
        }),
      );
    }
  } finally {
    await bare.stop();
    await service.stop();
    await database.drop();
  }
  printTable(`Webhook delivery at scale (${backend})`, rows);
} finally {
  await rx.close();
}
