/**
 * The database handle every module uses. Two drivers, one dialect: embedded PGlite
 * (real PostgreSQL compiled to WASM, the zero-setup default) and node-postgres for a
 * PostgreSQL server. Both speak `query(text, params)` with $n placeholders, so SQL is
 * written once. Results are normalised so modules never see driver differences: int8 and
 * numeric come back as JS numbers, timestamptz as Date, jsonb parsed.
 *
 * This file holds the handle's interface and what both drivers share (statement text, after-
 * commit hooks, work_mem); the drivers are pglite.ts and postgres.ts, and open.ts picks one from
 * the settings. They import this file and it imports neither, so there is no import cycle.
 *
 * Rules for callers (they matter for PGlite, which has one connection):
 * - Inside `transaction(fn)`, use only the `tx` handed to `fn`. Calling the outer `db`
 *   from inside a PGlite transaction waits for the transaction to end: a deadlock.
 * - Pass jsonb values as `JSON.stringify(value)` with a `$n::jsonb` cast; a bare JS array
 *   would be sent as a PostgreSQL array by node-postgres.
 */
import type { Sql } from 'sql-template-tag';
import type { ReplicaStatus } from './replicas.ts';
import type { ReadStop } from './stoppable.ts';

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(text: string | Sql, params?: unknown[]): Promise<QueryResult<T>>;
}

/** A transaction's handle: queries, plus multi-statement `exec` for migrations. */
export interface Tx extends Queryable {
  exec(text: string): Promise<void>;
  /**
   * Runs `fn` once the transaction has committed (never when it rolls back): for signals that
   * must not fire early, such as waking job workers. Errors thrown by `fn` are ignored.
   */
  afterCommit(fn: () => void): void;
}

/** Collects after-commit callbacks of one transaction and runs them once it committed. */
export function commitHooks() {
  const hooks: (() => void)[] = [];
  return {
    add: (fn: () => void) => void hooks.push(fn),
    run() {
      for (const fn of hooks) {
        try {
          fn();
        } catch {}
      }
    },
  };
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs several statements (migrations). No parameters. */
  exec(text: string): Promise<void>;
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * LISTEN on a channel; returns an unsubscribe function. On PostgreSQL the listening
   * connection is re-established after it is lost (backoff up to LISTEN_RETRY_MAX_MS); since
   * notifications sent meanwhile are gone, `onReconnect` runs once it is back so the
   * subscriber can catch up (re-read instead of waiting for its poll or TTL).
   */
  listen(channel: string, onPayload: (payload: string) => void, onReconnect?: () => void): Promise<() => Promise<void>>;
  /**
   * Runs `fn`, which only reads, on a read replica (DATABASE_READ_URL) when one is `ok` and has
   * replayed this process's last write to `scope` (see `wrote`); otherwise, and whenever the
   * replica fails, on the primary. `fn` may run twice (replica, then primary): it must only read.
   * With `workMemMb`, in a read-only transaction with that work_mem (analytics); with a
   * `signal`, cancelled in the database when it aborts (ReadOptions).
   */
  read<T>(scope: string, fn: (q: Queryable) => Promise<T>, options?: ReadOptions): Promise<T>;
  /**
   * This process has just written to `scope` (a collection id, or a name such as
   * `links.redirect`): reads of it stay on the primary until a replica has replayed the write.
   */
  wrote(scope: string): void;
  /** What the database layer knows of its connections, for /readyz, /metrics and logs. */
  status(): DbStatus;
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

export interface DbStatus {
  /** `lost` while the LISTEN connection is being re-established; `idle` before any LISTEN. */
  listener: 'idle' | 'connected' | 'lost';
  /** Each read replica's state and lag (DATABASE_READ_URL); absent without replicas. */
  replicas?: ReplicaStatus[];
}

/**
 * How a read runs. With a `signal` (aborts when nobody waits for the answer any more: a client
 * that went away) or a `timeoutMs` (how long it may run), the read runs on PostgreSQL on a
 * connection of its own, and the statement running when the signal aborts or the time is up
 * is cancelled (57014, `isCancelled`; stoppable.ts); such a read is not asked again of the
 * primary. PGlite runs one statement at a time in this process and finishes it.
 */
export interface ReadOptions extends ReadStop {
  /** Run in a read-only transaction with this work_mem (ANALYTICS_WORK_MEM_MB). */
  workMemMb?: number;
}

/** Where the database layer reports connection trouble (a pino logger fits). */
export interface DbLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export const silent: DbLogger = { info() {}, warn() {} };

/** The type oids whose values come back as JS numbers (both drivers). */
export const INT8 = 20;
export const NUMERIC = 1700;

export function split(text: string | Sql, params?: unknown[]): [string, unknown[]] {
  if (typeof text === 'string') return [text, params ?? []];
  return [text.text, text.values];
}

/** A statement marked by `prepared`. */
export type PreparedSql = Sql & { readonly preparedName: string };

/**
 * Marks a statement to be prepared once per connection under `name` (PostgreSQL; PGlite runs
 * it as any other): parsed and planned once, then only bound and executed. For the hottest
 * statements (the job engine's enqueue, claims and completions), where parsing and planning
 * cost as much as running them. The text must be the same every time a name is used (node-
 * postgres refuses a name reused for another text). PostgreSQL keeps a custom plan for the
 * first executions and then a generic one when it is no dearer; an ANALYZE of a table the
 * statement reads makes it plan again.
 */
export function prepared(name: string, statement: Sql): PreparedSql {
  return Object.assign(statement, { preparedName: name });
}

export function preparedName(text: string | Sql): string | undefined {
  return typeof text === 'string' ? undefined : (text as Partial<PreparedSql>).preparedName;
}

/**
 * The SET LOCALs of an analytics transaction, from a checked number (it is written into the
 * SQL): its work_mem, and no JIT compilation. An analytics statement over a million rows
 * costs enough for PostgreSQL to compile it with inlining and optimization (above
 * jit_optimize_above_cost), and compiling its hundred-odd expressions took longer than it
 * saved: the trends of a 10,000,000-event journey over 90 days ran 950 ms with JIT and 525
 * ms without (docs/benchmarks.md, the fifteenth session). The triggers' functions turn it off
 * for the same reason.
 */
export function analyticsSettings(workMemMb: number): string {
  if (!Number.isInteger(workMemMb) || workMemMb < 1) throw new Error('work_mem must be a positive integer');
  return `SET LOCAL work_mem = '${workMemMb}MB'; SET LOCAL jit = off`;
}

/** An analytics transaction's settings (analyticsSettings), then the read. */
export async function withAnalyticsSettings<T>(
  tx: Tx,
  workMemMb: number,
  fn: (q: Queryable) => Promise<T>,
): Promise<T> {
  await tx.exec(analyticsSettings(workMemMb));
  return fn(tx);
}
