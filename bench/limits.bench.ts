/**
 * The cost of the resilience limits on the hot paths: this checkout against an earlier commit
 * (BENCH_BASELINE_REF, default: the last commit before the limits landed), both run in the same
 * bench run on the same machine, loaded in interleaved rounds. Hot paths: public location get,
 * redirect (GET /l/{code}, click captured), case list with an admin key. Each version gets its
 * own PostgreSQL schema, seeded with the same rows through its own API, so neither runs on
 * migrations it does not know. A ratio of 0.97 means this checkout keeps 97 % of the earlier
 * commit's throughput on that path.
 *
 * The earlier commit is checked out with `git worktree add --detach` into a temporary folder
 * that borrows this checkout's node_modules (its dependencies are a subset), and is removed
 * afterwards.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { spawnTs as spawnProcess } from '../support/service-process.ts';
import {
  benchDatabase,
  call,
  interleaved,
  type LoadResult,
  load,
  printTable,
  ROOT,
  type Row,
  row,
  SUPER_KEY,
  seedCollection,
} from './lib.ts';

const BASELINE_REF = process.env.BENCH_BASELINE_REF ?? 'b0b9b57';
const CASES = 1000;

const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
const baselineDir = mkdtempSync(join(tmpdir(), 'bench-baseline-'));
rmSync(baselineDir, { recursive: true, force: true });
git('worktree', 'add', '--detach', baselineDir, BASELINE_REF);
symlinkSync(join(ROOT, 'node_modules'), join(baselineDir, 'node_modules'));
const baselineCommit = git('rev-parse', '--short', BASELINE_REF);
const currentCommit = git('rev-parse', '--short', 'HEAD');

interface Subject {
  name: string;
  url: string;
  key: string;
  code: string;
  locationId: string;
  stop(): Promise<unknown>;
  drop(): Promise<void>;
}

async function start(name: string, root: string): Promise<Subject> {
  const database = await benchDatabase('postgres');
  const entry = relative(ROOT, join(root, 'src', 'server.ts'));
  const service = await spawnProcess(entry, {
    env: { ...database.env, SUPER_ADMIN_KEY: SUPER_KEY, RATE_LIMIT_MAX: '1000000000', LOG_LEVEL: 'warn' },
    readyPath: '/readyz',
    stdio: 'inherit',
  });
  const c = await seedCollection(service.url, 'bench');
  const location = await call<{ locationId: string }>(
    service.url,
    'POST',
    `/admin/collection/${c.id}/location`,
    { name: 'Bench store', countryCode: 'DE', category: 'store' },
    c.key,
  );
  const link = await call<{ code: string }>(
    service.url,
    'POST',
    `/admin/collection/${c.id}/links`,
    { url: 'https://example.com/bench' },
    c.key,
  );
  for (let i = 0; i < CASES; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, j) =>
        call(
          service.url,
          'POST',
          `/admin/collection/${c.id}/app/desk/cases`,
          { status: (i + j) % 5 === 0 ? 'open' : 'closed', priority: (i + j) % 3, data: { n: i + j } },
          c.key,
        ),
      ),
    );
  }
  await call(service.url, 'POST', `/admin/collection/${c.id}/interactions`, { id: 'view', appId: 'bench' }, c.key);
  // Each hot path answers as expected before it is loaded (a wrong path would measure 404s).
  const probes: [string, Record<string, string>, number][] = [
    [`/public/collection/${c.id}/location/${location.locationId}`, {}, 200],
    [`/l/${link.code}`, {}, 302],
    [
      `/admin/collection/${c.id}/app/desk/cases?status=open&sort=createdAt:desc&limit=50`,
      { authorization: `Bearer ${c.key}` },
      200,
    ],
  ];
  for (const [path, headers, status] of probes) {
    const res = await fetch(`${service.url}${path}`, { headers, redirect: 'manual' });
    if (res.status !== status) throw new Error(`${name} probe ${path}: ${res.status} ${await res.text()}`);
  }
  return {
    name,
    url: service.url,
    key: c.key,
    code: link.code,
    locationId: location.locationId,
    stop: () => service.stop(),
    drop: () => database.drop(),
  };
}

const subjects: Subject[] = [];
const rows: Row[] = [];
try {
  // One at a time, so a failure to start the second still stops the first in `finally`.
  subjects.push(await start('baseline', baselineDir));
  subjects.push(await start('current', ROOT));
  const [before, after] = subjects;
  const scenarios = {
    location: (s: Subject) => load({ url: `${s.url}/public/collection/bench/location/${s.locationId}` }),
    redirect: (s: Subject) => load({ url: `${s.url}/l/${s.code}`, expectStatus: 302 }),
    cases: (s: Subject) =>
      load({
        url: `${s.url}/admin/collection/bench/app/desk/cases?status=open&sort=createdAt:desc&limit=50`,
        headers: { authorization: `Bearer ${s.key}` },
      }),
    // Writes: what publishing events costs a change when nobody subscribes (issue 24).
    caseCreate: (s: Subject) =>
      load({
        url: `${s.url}/admin/collection/bench/app/desk/cases`,
        method: 'POST',
        body: JSON.stringify({ status: 'open', priority: 1, data: { subject: 'bench' } }),
        headers: { authorization: `Bearer ${s.key}` },
      }),
    append: (s: Subject) =>
      load({
        url: `${s.url}/admin/collection/bench/interactions/append`,
        method: 'POST',
        body: JSON.stringify({ appId: 'bench', interactionId: 'view', outcome: 'ok', userId: 'u1' }),
        headers: { authorization: `Bearer ${s.key}` },
      }),
  };
  const runs: Record<string, () => Promise<LoadResult>> = {};
  for (const [scenario, fn] of Object.entries(scenarios)) {
    runs[`${scenario}:before`] = () => fn(before);
    runs[`${scenario}:after`] = () => fn(after);
  }
  const r = await interleaved(runs);
  const label = {
    location: 'public location get',
    redirect: 'GET /l/{code} (302, click captured)',
    cases: 'case list, status filter + sort, admin key',
    caseCreate: 'case create, admin key, no subscriber',
    append: 'interaction append, admin key, no subscriber',
  };
  for (const scenario of Object.keys(scenarios) as (keyof typeof scenarios)[]) {
    rows.push(row(`${label[scenario]}: ${baselineCommit}`, r[`${scenario}:before`]));
    rows.push(
      row(`${label[scenario]}: ${currentCommit}`, r[`${scenario}:after`], {
        name: baselineCommit,
        result: r[`${scenario}:before`],
      }),
    );
  }
} finally {
  for (const s of subjects) {
    await s.stop();
    await s.drop();
  }
  if (existsSync(baselineDir)) git('worktree', 'remove', '--force', baselineDir);
}
printTable(`Limits: ${currentCommit} against ${baselineCommit} (PostgreSQL, median of interleaved rounds)`, rows);
