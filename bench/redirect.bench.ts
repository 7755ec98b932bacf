/**
 * The public redirect at the depth of issue 28, against the redirect before it and against
 * Kutt, in one run on PostgreSQL:
 *
 * - before: the service at BENCH_BASELINE_REF (default e678e14, the last commit before issue
 *   28), one plain link; and its clicks spread over BENCH_SPREAD_LINKS (1,000) links.
 * - now: this checkout, the same plain link and the same spread; and a link with everything on
 *   (routing rules, A/B variants, click ids, a custom domain reached by its Host).
 * Both services have a `link.clicked` subscriber at a receiver in this process, so each click
 * costs both an event and its share of a delivery.
 * - Kutt (bench/kutt.ts), one link, every visit stored through its Redis queue.
 *
 * Each subject runs in its own process and PostgreSQL schema (Kutt: database), loaded in
 * turns (A, B, C, then A, C, B, then C, A, B, …: each round starts one further on, every other
 * one backwards; BENCH_ROUNDS, default 5), each once no autovacuum runs (`quiet`), medians
 * shown; a ratio is taken within
 * each round, then its median and range over the rounds shown. A round is load for
 * BENCH_SECONDS (8) from autocannon (20 connections) after one unmeasured warm-up round of
 * BENCH_WARMUP_SECONDS (3) per subject, then the wait until every answered
 * redirect is stored: "stored/s" is the redirects answered over the time from the first
 * request until the last of them was stored, the figure that counts for a shortener whose
 * analytics must be complete. Our services' rounds then also wait until the receiver has had
 * one `link.clicked` delivery per stored click (each service posts to a path of its own), so
 * that no subject's deliveries run on into the next subject's round: before this wait, the
 * plain link before issue 28 measured 8,126 req/s in one run and 11,639 in the next, its
 * deliveries counted in whoever came next. CPU per click is the subject's process plus every
 * PostgreSQL process (and Redis for Kutt) over the round, deliveries included, per stored
 * click: the machine's cores are shared by the load generator, the service and the database,
 * so CPU per click is what decides throughput when they are all busy.
 */
import { execFileSync } from 'node:child_process';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { type Kutt, startKutt } from './kutt.ts';
import {
  benchDatabase,
  call,
  checkoutAt,
  cpuUsedUs,
  fmt,
  type LoadResult,
  load,
  median,
  processCpuUs,
  processesCpuUs,
  ROOT,
  type RunningProcess,
  seedCollection,
  spread,
  startServiceAt,
} from './lib.ts';

const BASELINE_REF = process.env.BENCH_BASELINE_REF ?? 'e678e14';
const SPREAD = Number(process.env.BENCH_SPREAD_LINKS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
/**
 * BENCH_REFERERS=distinct: every request carries a referer address of its own (the worst case
 * for the referer URLs' counts per month, migration 0650); by default requests carry none.
 */
const REFERERS = process.env.BENCH_REFERERS === 'distinct';
let refererSeq = 0;
const DESTINATION = 'https://example.com/landing?utm_source=bench';
const BROWSER =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36';
const FULL = 'now: everything on (domain, rules, 70/30, click ids, subscriber)';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Target {
  /** The paths loaded, one picked at random per request (one path: always that one). */
  paths: string[];
  headers?: Record<string, string>;
}

interface Subject {
  name: string;
  url: string;
  /** CPU used so far by the subject and by each process of its servers (µs, by pid; the subject as pid 0). */
  cpuUs(): Map<number, number>;
  /** Clicks stored so far. */
  stored(): Promise<number>;
  /** `link.clicked` deliveries its receiver has had so far (ours; one per stored click). */
  delivered?(): number;
  stop(): Promise<unknown>;
}

interface Measured extends LoadResult {
  storedPerSecond: number;
  cpuUsPerClick: number;
}

/** The status a GET answers (node:http, since fetch cannot set Host). */
function probe(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'user-agent': BROWSER, ...headers } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

/** A receiver for `link.clicked` deliveries: answers 200 at once, counting them by path (one per subject). */
async function receiver() {
  let received = 0;
  const byPath = new Map<string, number>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      byPath.set(req.url ?? '', (byPath.get(req.url ?? '') ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => received,
    receivedAt: (path: string) => byPath.get(path) ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One of our services (at `root`), with its own schema; clicks counted in its link_clicks. */
async function ours(
  name: string,
  root: string,
  delivered: () => number,
): Promise<Subject & { key: string; collection: string; db: pg.Client; drop(): Promise<void> }> {
  const database = await benchDatabase('postgres');
  const service: RunningProcess = await startServiceAt(root, {
    ...database.env,
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  });
  const c = await seedCollection(service.url, 'bench');
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  return {
    name,
    url: service.url,
    key: c.key,
    collection: c.id,
    db,
    cpuUs: () => withProcess(processesCpuUs('postgres'), service.child.pid as number),
    stored: async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM link_clicks')).rows[0].n),
    delivered,
    stop: async () => {
      await db.end();
      await service.stop();
    },
    drop: () => database.drop(),
  };
}

async function links(
  s: { url: string; key: string; collection: string },
  n: number,
  body: Record<string, unknown> = {},
) {
  const codes: string[] = [];
  for (let i = 0; i < n; i += 50) {
    const made = await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, (_, j) =>
        call<{ code: string }>(
          s.url,
          'POST',
          `/admin/collection/${s.collection}/links`,
          { url: `${DESTINATION}&n=${i + j}`, ...body },
          s.key,
        ),
      ),
    );
    codes.push(...made.map((l) => l.code));
  }
  return codes;
}

/**
 * Waits (at most 120 s) until PostgreSQL runs no autovacuum worker: a subject that stored tens
 * of thousands of clicks sets off a vacuum and analyze of its tables, which would take a core
 * from whichever subject is loaded next. In an A/A run (the same commit on both sides) with
 * each subject always in the same place of the round, the subject after "everything on"
 * measured 0.74–0.84 of its twin's redirects a second in rounds 2–5 (median ratio 1.26 the
 * other way); with this wait and the rounds' rotation, added together, the A/A ratio was 1.06
 * (docs/benchmarks.md, the thirteenth session).
 */
async function quiet(db: pg.Client): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND state <> 'idle'`,
    );
    if (rows[0].n === 0) return;
    await sleep(250);
  }
}

async function measure(s: Subject, t: Target, durationSeconds?: number): Promise<Measured> {
  const before = await s.stored();
  const delivered0 = s.delivered?.() ?? 0;
  const cpu0 = s.cpuUs();
  const t0 = performance.now();
  const { paths } = t;
  const r = await load({
    url: `${s.url}${paths[0]}`,
    headers: { 'user-agent': BROWSER, ...t.headers },
    expectStatus: 302,
    durationSeconds,
    setupRequest:
      paths.length > 1 || REFERERS
        ? (req) => ({
            ...req,
            path: paths.length > 1 ? paths[Math.floor(Math.random() * paths.length)] : req.path,
            headers: REFERERS
              ? { ...req.headers, referer: `https://site${refererSeq % 97}.example/p/${refererSeq++}` }
              : req.headers,
          })
        : undefined,
  });
  const deadline = Date.now() + 300_000;
  while ((await s.stored()) - before < r.answered) {
    if (Date.now() > deadline)
      throw new Error(`${s.name}: ${r.answered} redirects answered, not all stored after 300 s`);
    await sleep(20);
  }
  const seconds = (performance.now() - t0) / 1000;
  // Its deliveries too, before the CPU is read and the next subject is loaded: deliveries left
  // running would be counted in another subject's round (and cost this one nothing).
  if (s.delivered) {
    while (s.delivered() - delivered0 < r.answered) {
      if (Date.now() > deadline)
        throw new Error(`${s.name}: ${r.answered} clicks stored, ${s.delivered() - delivered0} delivered after 300 s`);
      await sleep(20);
    }
  }
  const cpu = cpuUsedUs(cpu0, s.cpuUs());
  await sleep(500);
  return { ...r, storedPerSecond: r.answered / seconds, cpuUsPerClick: cpu / r.answered };
}

/** `servers` with the subject's own process added (its pid is not a server's). */
function withProcess(servers: Map<number, number>, pid: number): Map<number, number> {
  return servers.set(pid, processCpuUs(pid));
}

const baseline = checkoutAt(BASELINE_REF);
const current = {
  commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
};
const started: { stop(): Promise<unknown>; drop?(): Promise<void> }[] = [];
const rx = await receiver();
try {
  const before = await ours(`before (${baseline.commit})`, baseline.dir, () => rx.receivedAt('/clicked/before'));
  started.push(before);
  const now = await ours(`now (${current.commit})`, ROOT, () => rx.receivedAt('/clicked/now'));
  started.push(now);
  const runs: { key: string; subject: Subject; target: Target }[] = [];
  // Both with a link.clicked subscriber at the receiver, so that both do the same work per
  // click (its event, a share of a delivery job and of a POST) and differ only by the code.
  for (const [s, path] of [
    [before, '/clicked/before'],
    [now, '/clicked/now'],
  ] as const) {
    await call(s.url, 'POST', '/v1/webhooks', { url: `${rx.url}${path}`, events: ['link.clicked'] }, s.key);
  }

  const [beforeOne] = await links(before, 1);
  const [nowOne] = await links(now, 1);
  const beforeSpread = await links(before, SPREAD);
  const nowSpread = await links(now, SPREAD);
  runs.push({ key: 'before: one link', subject: before, target: { paths: [`/l/${beforeOne}`] } });
  runs.push({ key: 'now: one link', subject: now, target: { paths: [`/l/${nowOne}`] } });
  runs.push({ key: `before: ${SPREAD} links`, subject: before, target: { paths: beforeSpread.map((c) => `/l/${c}`) } });
  runs.push({ key: `now: ${SPREAD} links`, subject: now, target: { paths: nowSpread.map((c) => `/l/${c}`) } });

  // Everything on: a custom domain (marked verified in the database: its proofs need DNS or
  // HTTP on a name this machine does not have), rules by OS, a 70/30 split and click ids.
  const domain = 'go.bench-links.io';
  await call(now.url, 'POST', `/admin/collection/${now.collection}/domains`, { domain }, now.key);
  await now.db.query('UPDATE link_domains SET verified_at = now() WHERE domain = $1', [domain]);
  const full = await call<{ code: string }>(
    now.url,
    'POST',
    `/admin/collection/${now.collection}/links`,
    {
      url: DESTINATION,
      domain,
      rules: [
        { when: { os: 'ios' }, url: 'https://apps.example/ios' },
        { when: { os: 'android' }, url: 'https://apps.example/android' },
      ],
      variants: [
        { url: 'https://example.com/a', weight: 70 },
        { url: 'https://example.com/b', weight: 30 },
      ],
      trackConversions: true,
    },
    now.key,
  );
  runs.push({ key: FULL, subject: now, target: { paths: [`/${full.code}`], headers: { host: domain } } });

  const kutt: Kutt | { missing: string } =
    process.env.BENCH_KUTT === '0' ? { missing: 'BENCH_KUTT=0' } : await startKutt();
  if ('missing' in kutt) console.error(`Kutt skipped: ${kutt.missing}`);
  else {
    started.push(kutt);
    const address = await kutt.createLink(DESTINATION);
    runs.push({
      key: `${kutt.name}: one link`,
      subject: {
        name: kutt.name,
        url: kutt.url,
        cpuUs: () => withProcess(new Map([...processesCpuUs('postgres'), ...processesCpuUs('redis-server')]), kutt.pid),
        stored: () => kutt.storedVisits(),
        stop: () => kutt.stop(),
      },
      target: { paths: [`/${address}`] },
    });
  }
  for (const r of runs) {
    const status = await probe(`${r.subject.url}${r.target.paths[0]}`, r.target.headers);
    if (status !== 302) throw new Error(`${r.key}: probe answered ${status}`);
  }

  // Warm-up, not counted: each subject's code paths compiled, its pools and caches filled.
  for (const r of runs) await measure(r.subject, r.target, WARMUP_SECONDS);
  const results = new Map<string, Measured[]>();
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts one subject further on, and every other round runs backwards, so that
    // no subject is always first, nor always follows the same one (a rotation alone keeps
    // every subject's neighbours); and each waits until the last one's autovacuum is done.
    const rotated = runs.map((_, i) => runs[(i + round) % runs.length]);
    for (const r of round % 2 ? rotated.reverse() : rotated) {
      await quiet(now.db);
      const m = await measure(r.subject, r.target);
      results.set(r.key, [...(results.get(r.key) ?? []), m]);
      console.error(
        `round ${round + 1}: ${r.key}: ${fmt(m.rps)} req/s, ${fmt(m.storedPerSecond)} stored/s, ${fmt(m.cpuUsPerClick, 1)} µs CPU a click`,
      );
    }
  }
  const of = (key: string) => {
    const rs = results.get(key) ?? [];
    return {
      rps: median(rs.map((x) => x.rps)),
      stored: median(rs.map((x) => x.storedPerSecond)),
      cpu: median(rs.map((x) => x.cpuUsPerClick)),
      p50: median(rs.map((x) => x.p50)),
      p99: median(rs.map((x) => x.p99)),
      unexpected: rs.reduce((n, x) => n + x.unexpected, 0),
    };
  };
  const peer = runs.some((r) => r.key.startsWith('Kutt')) ? ' and Kutt' : '';
  console.log(
    `\n## Redirect: ${current.commit} against ${baseline.commit}${peer} (PostgreSQL, medians of ${ROUNDS} interleaved rounds)\n`,
  );
  console.log('| scenario | req/s | stored/s | p50 ms | p99 ms | CPU µs a click (process + PostgreSQL) | note |');
  console.log('|---|---:|---:|---:|---:|---:|---|');
  for (const r of runs) {
    const m = of(r.key);
    console.log(
      `| ${r.key} | ${fmt(m.rps)} | ${fmt(m.stored)} | ${fmt(m.p50, 1)} | ${fmt(m.p99, 1)} | ${fmt(m.cpu, 1)} | ${m.unexpected ? `${m.unexpected} unexpected` : ''} |`,
    );
  }
  // Within each round, then the median and range over rounds (as the jobs bench does): the
  // host drifts between rounds (one run's plain link before measured 3,993 req/s in one round
  // and 5,322–5,382 in the others), and a ratio of two subjects loaded a minute apart moves
  // less than either.
  const ratio = (a: string, b: string, field: 'rps' | 'storedPerSecond' | 'cpuUsPerClick') => {
    const [as, bs] = [results.get(a) ?? [], results.get(b) ?? []];
    const rs = as.slice(0, bs.length).map((x, i) => x[field] / bs[i][field]);
    if (rs.length === 0) return ' | ';
    return `${fmt(median(rs), 2)} | ${spread(rs, 2)}`;
  };
  console.log('\n| ratio (within each round) | median | range |');
  console.log('|---|---:|---:|');
  console.log(`| now / before, one link, req/s | ${ratio('now: one link', 'before: one link', 'rps')} |`);
  console.log(`| now, everything on / before, one link, req/s | ${ratio(FULL, 'before: one link', 'rps')} |`);
  // The same comparison by the machine's work a click (deliveries included): the req/s of a
  // round also depends on how much of the deliveries' work a service does during the load
  // rather than after it (docs/benchmarks.md, the fourteenth session); this does not.
  console.log(
    `| before / now, everything on, CPU a click (throughput at equal work) | ${ratio('before: one link', FULL, 'cpuUsPerClick')} |`,
  );
  console.log(
    `| now / before, ${SPREAD} links, req/s | ${ratio(`now: ${SPREAD} links`, `before: ${SPREAD} links`, 'rps')} |`,
  );
  console.log(
    `| now: CPU a click, ${SPREAD} links / one link | ${ratio(`now: ${SPREAD} links`, 'now: one link', 'cpuUsPerClick')} |`,
  );
  const kuttKey = runs.find((r) => r.key.startsWith('Kutt'))?.key;
  if (kuttKey)
    console.log(`| now (one link) / Kutt, stored/s | ${ratio('now: one link', kuttKey, 'storedPerSecond')} |`);
  console.log(`\n(link.clicked deliveries received: ${rx.received()})`);
} finally {
  for (const s of started.reverse()) {
    await s.stop().catch((err) => console.error(err));
    await s.drop?.().catch((err) => console.error(err));
  }
  await rx.close();
  baseline.remove();
}
