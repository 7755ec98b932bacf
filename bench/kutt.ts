/**
 * Kutt (github.com/thedevs-network/kutt), the peer shortener of bench/redirect.bench.ts, run
 * as its README runs it in production: `node server/server.js` on PostgreSQL with Redis
 * (visits go through its Bull queue, six at a time, and are stored as per-link, per-hour
 * counters plus the link's `visit_count`).
 *
 * Its source comes from BENCH_KUTT_DIR (a checkout), else from the mirror the workplace's
 * `fetch` tool makes (/work/.mirror/thedevs-network+kutt/repo), exported with `git archive`
 * into a folder of the temporary directory named by its commit and installed there once
 * (`npm ci --omit=dev --ignore-scripts`: the SQLite driver it would build is not used).
 * Each run gets a database of its own (dropped at the end) and a Redis database number of its
 * own (BENCH_KUTT_REDIS_DB, default 9, flushed before and after).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, PG_URL } from './lib.ts';

const MIRROR = '/work/.mirror/thedevs-network+kutt/repo';
const REDIS_DB = Number(process.env.BENCH_KUTT_REDIS_DB ?? 9);

export interface Kutt {
  /** e.g. `Kutt 3.2.3 (fc832d7)`. */
  name: string;
  url: string;
  pid: number;
  /** Makes a link to `target` through Kutt's API; answers its address (the path after `/`). */
  createLink(target: string): Promise<string>;
  /** Visits stored so far over all links (the sum of `visit_count`). */
  storedVisits(): Promise<number>;
  stop(): Promise<void>;
}

/** Where Kutt's installed source is; undefined (with the reason) when it is not available. */
function kuttSource(): { dir: string; commit: string } | { missing: string } {
  if (process.env.BENCH_KUTT_DIR) {
    const dir = process.env.BENCH_KUTT_DIR;
    if (!existsSync(join(dir, 'node_modules'))) execFileSync('npm', npmArgs, { cwd: dir, stdio: 'inherit' });
    return { dir, commit: 'BENCH_KUTT_DIR' };
  }
  if (!existsSync(MIRROR)) {
    return { missing: `no Kutt source: set BENCH_KUTT_DIR to a checkout, or fetch thedevs-network/kutt to ${MIRROR}` };
  }
  const commit = execFileSync('git', ['--git-dir', MIRROR, 'rev-parse', '--short', 'HEAD'], {
    encoding: 'utf8',
  }).trim();
  const dir = join(tmpdir(), `bench-kutt-${commit}`);
  if (!existsSync(join(dir, 'node_modules', '.package-lock.json'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git --git-dir='${MIRROR}' archive HEAD | tar -x -C '${dir}'`]);
    execFileSync('npm', npmArgs, { cwd: dir, stdio: 'inherit' });
  }
  return { dir, commit };
}

const npmArgs = ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'];

export async function startKutt(): Promise<Kutt | { missing: string }> {
  const source = kuttSource();
  if ('missing' in source) return source;
  const { dir, commit } = source;
  const version = (
    JSON.parse(
      execFileSync('node', ['-p', 'JSON.stringify(require("./package.json"))'], { cwd: dir, encoding: 'utf8' }),
    ) as { version: string }
  ).version;
  const database = `kutt_bench_${randomBytes(4).toString('hex')}`;
  const admin = async <T>(f: (c: pg.Client) => Promise<T>, db = 'postgres'): Promise<T> => {
    const u = new URL(PG_URL);
    u.pathname = `/${db}`;
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    try {
      return await f(c);
    } finally {
      await c.end();
    }
  };
  await admin((c) => c.query(`CREATE DATABASE ${database}`));
  const u = new URL(PG_URL);
  const port = await freePort();
  const env = {
    ...process.env,
    NODE_ENV: 'production',
    PORT: String(port),
    DEFAULT_DOMAIN: `127.0.0.1:${port}`,
    JWT_SECRET: randomBytes(16).toString('hex'),
    DB_CLIENT: 'pg',
    DB_HOST: u.hostname,
    DB_PORT: u.port || '5432',
    DB_NAME: database,
    DB_USER: decodeURIComponent(u.username) || 'postgres',
    DB_PASSWORD: decodeURIComponent(u.password),
    REDIS_ENABLED: 'true',
    REDIS_HOST: process.env.BENCH_KUTT_REDIS_HOST ?? '127.0.0.1',
    REDIS_PORT: process.env.BENCH_KUTT_REDIS_PORT ?? '6379',
    REDIS_DB: String(REDIS_DB),
    // The load comes from this machine, not through a proxy: the client's own address counts.
    TRUST_PROXY: 'false',
  };
  // An empty .env, so that a stray one in the checkout cannot change the settings above.
  writeFileSync(join(dir, '.env'), '');
  const redisFlush = () => execFileSync('redis-cli', ['-n', String(REDIS_DB), 'FLUSHDB'], { stdio: 'ignore' });
  redisFlush();
  execFileSync('node', ['node_modules/knex/bin/cli.js', 'migrate:latest'], { cwd: dir, env, stdio: 'ignore' });
  const apiKey = randomBytes(20).toString('hex');
  await admin(
    (c) =>
      c.query(
        "INSERT INTO users (email, password, apikey, verified, role) VALUES ('bench@example.com', 'x', $1, true, 'ADMIN')",
        [apiKey],
      ),
    database,
  );
  // A process group of its own: its queue runs visits in child processes (Bull's sandbox), which
  // outlive their parent when only it is killed.
  const child: ChildProcess = spawn('node', ['server/server.js'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Kutt did not start within 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`Kutt exited with ${code}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('Ready on')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    name: `Kutt ${version} (${commit})`,
    url,
    pid: child.pid as number,
    async createLink(target) {
      const res = await fetch(`${url}/api/v2/links`, {
        method: 'POST',
        headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ target }),
      });
      if (res.status !== 201 && res.status !== 200) throw new Error(`Kutt link: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { address: string }).address;
    },
    storedVisits: () =>
      admin(
        async (c) =>
          Number((await c.query<{ n: string }>('SELECT coalesce(sum(visit_count), 0) AS n FROM links')).rows[0].n),
        database,
      ),
    async stop() {
      // Its visit queue keeps it up after SIGTERM: the whole group is killed after a grace period.
      const group = -(child.pid as number);
      const signal = (s: NodeJS.Signals) => {
        try {
          process.kill(group, s);
        } catch {
          // The group is gone already.
        }
      };
      const exited = new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)));
      signal('SIGTERM');
      const grace = setTimeout(() => signal('SIGKILL'), 5000);
      await exited;
      clearTimeout(grace);
      signal('SIGKILL');
      redisFlush();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
    },
  };
}
