/**
 * Counts what a process sends to PostgreSQL, for the jobs bench's "where the cost goes":
 * every `query` of a node-postgres client is one round trip (node-postgres sends parse, bind,
 * execute and sync together), and a statement outside BEGIN … COMMIT is its own transaction.
 * It patches `pg.Client.prototype.query`, which every pool, LISTEN client and library in the
 * process goes through (ours, graphile-worker and pg-boss alike), so the three engines are
 * counted the same way. pg_stat_statements would count on the server, but it needs
 * `shared_preload_libraries` and a restart of a server others share.
 */
import { renameSync, writeFileSync } from 'node:fs';
import pg from 'pg';

export interface QueryCounts {
  /** Round trips (client `query` calls) by kind of statement. */
  byKind: Record<string, number>;
  statements: number;
  /** Commits: statements outside an explicit transaction, plus each COMMIT. */
  commits: number;
  /** This process's CPU time (user + system), ms. */
  cpuMs: number;
}

const byKind = new Map<string, number>();
let statements = 0;
let commits = 0;
const inTx = new WeakSet<object>();

const kinds = new Map<string, string>();

/**
 * A short name for a statement: enough to tell claims, completions, enqueues and notifications
 * apart. Remembered by text (the engines send a few texts over and over): matching the rules
 * on every statement cost the workers a few percent of their CPU.
 */
export function kindOf(text: string): string {
  let kind = kinds.get(text);
  if (kind === undefined) {
    kind = classify(text);
    if (kinds.size < 1000) kinds.set(text, kind);
  }
  return kind;
}

function classify(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  const rules: [RegExp, string][] = [
    [/^(BEGIN|COMMIT|ROLLBACK)\b/i, '$1'],
    [/^(LISTEN|UNLISTEN)\b/i, 'LISTEN'],
    [/pg_notify/i, 'NOTIFY'],
    [/^INSERT INTO jobs\b/i, 'enqueue'],
    [/^WITH input AS .*INSERT INTO jobs/i, 'enqueue (bulk)'],
    [/add_jobs?\(/i, 'enqueue'],
    [/^WITH next AS .*status = 'running'/i, 'claim'],
    [/^WITH completed AS .*jobs_complete\(.*claimed AS .*jobs_claim_(free|fair)\(/i, 'complete + claim'],
    [/jobs_claim_(free|fair)\(/i, 'claim'],
    [/jobs_complete\(|status = 'completed'/i, 'complete'],
    [/pg_advisory_xact_lock/i, 'queue lock'],
    [/count\(\*\)|EXISTS \(SELECT 1 FROM|SELECT EXISTS/i, 'bench: progress poll'],
    [/^with j as \( select jobs\.job_queue_id/i, 'claim'],
    [/^delete from .*_private_jobs/i, 'complete'],
    [/^with j as \( delete from/i, 'complete'],
    [/lock_expires_at = now\(\) \+ .*locked_by = .* AND status = 'running' AND id = ANY/i, 'heartbeat'],
  ];
  for (const [re, name] of rules) {
    const m = re.exec(t);
    if (m) return name.includes('$1') ? m[1].toUpperCase() : name;
  }
  return t.slice(0, 48);
}

let installed = false;

/**
 * Patches node-postgres once. With BENCH_COUNT_FILE set (a worker process of the bench), the
 * first SIGUSR2 marks the start of a measurement and the second writes what was counted since
 * to that file, so start-up, migrations and shutdown stay out of the figures.
 */
export function installQueryCounter(): void {
  if (installed) return;
  installed = true;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: object, ...args: unknown[]) {
    const config = args[0];
    const text = typeof config === 'string' ? config : ((config as { text?: string } | null | undefined)?.text ?? '');
    const kind = kindOf(text);
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    statements++;
    if (kind === 'BEGIN') inTx.add(this);
    else if (kind === 'COMMIT' || kind === 'ROLLBACK') {
      inTx.delete(this);
      if (kind === 'COMMIT') commits++;
    } else if (!inTx.has(this)) commits++;
    return original.apply(this, args);
  };
  const file = process.env.BENCH_COUNT_FILE;
  let mark: QueryCounts | undefined;
  if (file)
    process.on('SIGUSR2', () => {
      if (!mark) mark = queryCounts();
      else {
        // Renamed into place: the bench reads the file as soon as it exists, never half written.
        writeFileSync(`${file}.tmp`, JSON.stringify(countsSince(mark)));
        renameSync(`${file}.tmp`, file);
        mark = undefined;
      }
    });
}

export function queryCounts(): QueryCounts {
  const cpu = process.cpuUsage();
  return { byKind: Object.fromEntries(byKind), statements, commits, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** The difference of two snapshots (what happened in between). */
export function countsSince(before: QueryCounts, after: QueryCounts = queryCounts()): QueryCounts {
  const byKindDiff: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.byKind)) {
    const d = v - (before.byKind[k] ?? 0);
    if (d !== 0) byKindDiff[k] = d;
  }
  return {
    byKind: byKindDiff,
    statements: after.statements - before.statements,
    commits: after.commits - before.commits,
    cpuMs: after.cpuMs - before.cpuMs,
  };
}

/** Adds counts together (several worker processes). */
export function sumCounts(all: QueryCounts[]): QueryCounts {
  const out: QueryCounts = { byKind: {}, statements: 0, commits: 0, cpuMs: 0 };
  for (const c of all) {
    for (const [k, v] of Object.entries(c.byKind)) out.byKind[k] = (out.byKind[k] ?? 0) + v;
    out.statements += c.statements;
    out.commits += c.commits;
    out.cpuMs += c.cpuMs;
  }
  return out;
}
