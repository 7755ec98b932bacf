import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { ROOT, spawnTs as spawnProcess } from '../support/service-process.ts';

export { freePort, ROOT } from '../support/service-process.ts';
export const SUPER_KEY = 'bench-super-admin-key-0123456789';
export const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface Row {
  scenario: string;
  rps?: number;
  p50?: number;
  p99?: number;
  baseline?: string;
  ratio?: number;
  note?: string;
}

import type { RunningProcess } from '../support/service-process.ts';

export type { RunningProcess };

/** Spawns a TypeScript entry point with tsx and waits until `readyPath` answers 200. */
export function spawnTs(entry: string, env: Record<string, string>, readyPath = '/healthz', args: string[] = []) {
  return spawnProcess(entry, { env, readyPath, args, stdio: 'inherit' });
}

/** The real service as a child process. */
export function startService(env: Record<string, string>): Promise<RunningProcess> {
  return spawnTs('src/server.ts', { SUPER_ADMIN_KEY: SUPER_KEY, RATE_LIMIT_MAX: '1000000000', ...env }, '/readyz');
}

export interface BenchDatabase {
  /** Env for the service: DATABASE_URL (PostgreSQL, private schema) or DATA_DIR (PGlite). */
  env: Record<string, string>;
  /** Connection string with the schema on its search_path (PostgreSQL only). */
  url?: string;
  drop(): Promise<void>;
}

export async function benchDatabase(
  backend: 'postgres' | 'pglite',
  /**
   * `keep`: use this schema (created if missing) and never drop it, so that a bench can reuse
   * a data set that took minutes to load (BENCH_SCHEMA of the interactions bench).
   */
  o: { keep?: string } = {},
): Promise<BenchDatabase> {
  if (backend === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), 'bench-pglite-'));
    return { env: { DATA_DIR: dir }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  // Interpolated into DDL below (identifiers take no parameters), so only a plain name passes.
  if (o.keep !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(o.keep)) {
    throw new Error(`schema "${o.keep}" must be a lower-case identifier`);
  }
  const schema = o.keep ?? `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
  await admin.query(`CREATE SCHEMA ${o.keep ? 'IF NOT EXISTS ' : ''}${schema}`);
  await admin.end();
  const u = new URL(PG_URL);
  u.searchParams.set('options', `-c search_path=${schema},public`);
  const url = u.toString();
  return {
    env: { DATABASE_URL: url },
    url,
    drop: async () => {
      if (o.keep) return;
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    },
  };
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** Called per request to vary the path, body or headers (`req.headers` are the ones set). */
  setupRequest?: (req: BenchRequest) => BenchRequest;
  connections?: number;
  durationSeconds?: number;
  /** Expected status (default 2xx); anything else is counted and reported. */
  expectStatus?: number;
  /** Seconds before autocannon gives a request up (counted as unexpected); its default is 10. */
  timeoutSeconds?: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  unexpected: number;
  /** Requests answered with the expected status (2xx when none is given). */
  answered: number;
}

/** A request as autocannon hands it to `setupRequest`. */
export interface BenchRequest {
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

export async function load(o: LoadOptions): Promise<LoadResult> {
  let unexpected = 0;
  const result = await autocannon({
    url: o.url,
    connections: o.connections ?? 20,
    duration: o.durationSeconds ?? Number(process.env.BENCH_SECONDS ?? 8),
    method: o.method ?? 'GET',
    headers: { ...(o.body ? { 'content-type': 'application/json' } : {}), ...(o.headers ?? {}) },
    body: o.body,
    requests: o.setupRequest
      ? [{ setupRequest: (req: BenchRequest) => ({ ...req, ...o.setupRequest!(req) }) }]
      : undefined,
    // autocannon's own redirect handling is off: a 302 is an answer, not an instruction.
    followRedirects: false,
    ...(o.timeoutSeconds === undefined ? {} : { timeout: o.timeoutSeconds }),
  } as autocannon.Options);
  const expected = o.expectStatus;
  if (expected !== undefined) {
    const counts = result.statusCodeStats as unknown as Record<string, { count: number }>;
    for (const [code, { count }] of Object.entries(counts ?? {})) if (Number(code) !== expected) unexpected += count;
  } else {
    unexpected = result.non2xx;
  }
  unexpected += result.errors + result.timeouts;
  const counts = (result.statusCodeStats ?? {}) as unknown as Record<string, { count: number }>;
  const answered = Object.entries(counts)
    .filter(([code]) => (expected === undefined ? code.startsWith('2') : Number(code) === expected))
    .reduce((n, [, { count }]) => n + count, 0);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, unexpected, answered };
}

/**
 * Runs several load functions in interleaved rounds (A, B, C, A, B, C, ...) and returns each
 * one's median round. Background load on a shared machine then hits baseline and subject
 * alike, instead of whichever happened to run during a busy minute.
 */
export async function interleaved<K extends string>(
  subjects: Record<K, () => Promise<LoadResult>>,
  rounds = Number(process.env.BENCH_ROUNDS ?? 3),
): Promise<Record<K, LoadResult>> {
  const results = {} as Record<K, LoadResult[]>;
  for (let r = 0; r < rounds; r++) {
    for (const [name, run] of Object.entries(subjects) as [K, () => Promise<LoadResult>][]) {
      const result = await run();
      results[name] = [...(results[name] ?? []), result];
    }
  }
  const out = {} as Record<K, LoadResult>;
  for (const [name, rs] of Object.entries(results) as [K, LoadResult[]][]) {
    out[name] = {
      rps: median(rs.map((x) => x.rps)),
      p50: median(rs.map((x) => x.p50)),
      p99: median(rs.map((x) => x.p99)),
      unexpected: rs.reduce((n, x) => n + x.unexpected, 0),
      answered: median(rs.map((x) => x.answered)),
    };
  }
  return out;
}

export function row(scenario: string, r: LoadResult, baseline?: { name: string; result: LoadResult }): Row {
  const out: Row = { scenario, rps: r.rps, p50: r.p50, p99: r.p99 };
  if (baseline) {
    out.baseline = baseline.name;
    out.ratio = r.rps / baseline.result.rps;
  }
  if (r.unexpected > 0) out.note = `${r.unexpected} unexpected responses`;
  return out;
}

/** The middle of the sorted values (the upper one of an even count). */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A figure for a table: empty when there is none. */
export const fmt = (n: number | undefined, digits = 0) => (n === undefined || Number.isNaN(n) ? '' : n.toFixed(digits));

/** The range of per-round figures, `min–max` (empty for one round). */
export const spread = (xs: number[], digits = 0) =>
  xs.length > 1 ? `${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}` : '';

export function printTable(title: string, rows: Row[]): void {
  console.log(`\n## ${title}\n`);
  console.log('| scenario | req/s | p50 ms | p99 ms | baseline | ratio | note |');
  console.log('|---|---:|---:|---:|---|---:|---|');
  for (const r of rows) {
    console.log(
      `| ${r.scenario} | ${fmt(r.rps)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${r.baseline ?? ''} | ${fmt(r.ratio, 2)} | ${r.note ?? ''} |`,
    );
  }
}

/** Super admin JSON call against a running service. */
export async function call<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  credential = SUPER_KEY,
): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${credential}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** Creates a collection and an admin key on a running service. */
export async function seedCollection(base: string, id: string): Promise<{ id: string; key: string }> {
  await call(base, 'POST', '/platform/collections', { id, name: id });
  const key = await call<{ key: string }>(base, 'POST', `/admin/collection/${id}/api-keys`, { name: 'bench' });
  return { id, key: key.key };
}

/**
 * The service of another checkout of this repository (its own src/server.ts, node_modules and
 * migrations), e.g. a worktree of an older commit: the baseline of "no slower than before",
 * measured in the same run against the same database.
 */
export function startServiceAt(root: string, env: Record<string, string>): Promise<RunningProcess> {
  return spawnProcess('src/server.ts', {
    root,
    env: { SUPER_ADMIN_KEY: SUPER_KEY, RATE_LIMIT_MAX: '1000000000', ...env },
    readyPath: '/readyz',
    stdio: 'inherit',
  });
}

/** A PostgreSQL URL with a server setting added to its `options` (e.g. statement_timeout). */
export function withSetting(url: string, name: string, value: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c ${name}=${value}`.trim());
  return u.toString();
}

/**
 * A row of ours against a baseline service loaded in the same rounds: `ratio` is p99 ours /
 * baseline (latency, so above 1 is slower), the note gives the p50 ratio.
 */
export function comparedRow(scenario: string, ours: LoadResult, baseline: LoadResult, baselineName: string): Row {
  const out = row(scenario, ours);
  out.baseline = baselineName;
  out.ratio = ours.p99 / baseline.p99;
  out.note = [`p99 ratio; p50 ratio ${(ours.p50 / baseline.p50).toFixed(2)}`, out.note].filter(Boolean).join('; ');
  return out;
}

/**
 * This repository at `ref`, checked out detached into a temporary folder that borrows this
 * checkout's node_modules (an earlier commit's dependencies are a subset of today's), so that
 * a bench runs the code before a change beside the change itself. `remove` deletes it.
 */
export function checkoutAt(ref: string): { dir: string; commit: string; remove(): void } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = mkdtempSync(join(tmpdir(), `bench-${ref.replace(/[^\w.-]/g, '_')}-`));
  rmSync(dir, { recursive: true, force: true });
  git('worktree', 'add', '--detach', dir, ref);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return {
    dir,
    commit: git('rev-parse', '--short', ref),
    remove: () => {
      if (existsSync(dir)) git('worktree', 'remove', '--force', dir);
    },
  };
}

/** CPU time (user + system) a process has used so far, in µs (Linux: /proc/<pid>/stat, ticks of 10 ms). */
export function processCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** CPU time (µs) used so far by each process of a name (`postgres`, `redis-server`), by pid. */
export function processesCpuUs(name: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== name) continue;
      out.set(Number(entry), processCpuUs(Number(entry)));
    } catch {
      // Ended while we looked.
    }
  }
  return out;
}

/**
 * The CPU (µs) the processes of `before` and `after` (processesCpuUs) used in between: each
 * one's growth, a process that started meanwhile all of its time. One that ended meanwhile is
 * missing (its last share unknown), so take it over a span in which the server's connections
 * stay open.
 */
export function cpuUsedUs(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, us] of after) total += us - (before.get(pid) ?? 0);
  return total;
}
