/**
 * The database handle every module uses. Two drivers, one dialect: embedded PGlite
 * (real PostgreSQL compiled to WASM, the zero-setup default) and node-postgres for a
 * PostgreSQL server. Both speak `query(text, params)` with $n placeholders, so SQL is
 * written once. Results are normalised here so modules never see driver differences:
 * int8 and numeric come back as JS numbers, timestamptz as Date, jsonb parsed.
 *
 * Rules for callers (they matter for PGlite, which has one connection):
 * - Inside `transaction(fn)`, use only the `tx` handed to `fn`. Calling the outer `db`
 *   from inside a PGlite transaction waits for the transaction to end: a deadlock.
 * - Pass jsonb values as `JSON.stringify(value)` with a `$n::jsonb` cast; a bare JS array
 *   would be sent as a PostgreSQL array by node-postgres.
 */
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';
import type { Sql } from 'sql-template-tag';
import { lockDataDir } from './data-dir-lock.ts';
import { isCancelled, isConnectionLost, isServerGone, isTransient } from './faults.ts';
import { parseDatabaseUrl } from './hosts.ts';
import { Listener } from './listener.ts';
import { PrimaryPool } from './primary.ts';
import { type ReplicaStatus, Replicas } from './replicas.ts';
import { onStoppableClient, type ReadStop, stoppable } from './stoppable.ts';

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
function commitHooks() {
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

const silent: DbLogger = { info() {}, warn() {} };

const INT8 = 20;
const NUMERIC = 1700;

function split(text: string | Sql, params?: unknown[]): [string, unknown[]] {
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

function preparedName(text: string | Sql): string | undefined {
  return typeof text === 'string' ? undefined : (text as Partial<PreparedSql>).preparedName;
}

export interface PgliteOptions {
  /** Directory for the data files; omit for an in-memory database (tests). */
  dataDir?: string;
  /** A tarball from `dumpDataDir` to start from instead of a new cluster (tests). */
  loadDataDir?: Blob;
}

/**
 * A PGlite instance with this service's extensions and type parsers. It takes no lock on a
 * data directory: open one through `openPglite`, which does.
 */
export async function createPglite(options: PgliteOptions = {}): Promise<PGlite> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  return PGlite.create({
    dataDir: options.dataDir,
    loadDataDir: options.loadDataDir,
    // Extensions must be known to the instance before a migration runs CREATE EXTENSION.
    extensions: { pg_trgm },
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) },
  });
}

/**
 * A PGlite `Db`. With a data directory, the directory is locked first (data-dir-lock.ts) and
 * the lock released once the instance has closed: a second process opening it is refused
 * (DataDirLockedError) rather than writing beside us. `owner` names this process in the lock,
 * for that refusal's message.
 */
export async function openPglite(options: PgliteOptions & { owner?: string } = {}): Promise<Db & { raw: PGlite }> {
  if (!options.dataDir) return pgliteDb(await createPglite(options));
  mkdirSync(options.dataDir, { recursive: true });
  const lock = lockDataDir(options.dataDir, options.owner ?? 'a service process');
  let pglite: PGlite;
  try {
    pglite = await createPglite(options);
  } catch (err) {
    lock.release();
    throw err;
  }
  return pgliteDb(pglite, {
    close: async () => {
      try {
        await pglite.close();
      } finally {
        lock.release();
      }
    },
  });
}

/**
 * PGlite runs each statement synchronously on this thread and answers through promises only,
 * so a loop of statements (an import of 10,000 records, say) never lets the event loop reach
 * timers or sockets: every other request of the process, another tenant's included, waited for
 * the whole loop (measured: 4 imports of 2,000 records for one collection, and another
 * collection's reader got 3 answers in the 4.45 s they took). A statement that comes after the
 * thread has gone SHARE_EVERY_MS since it last waited for a turn of the event loop waits for
 * one first (setImmediate): other work then gets in between, at the price of at most one turn
 * per SHARE_EVERY_MS (a few microseconds each). After: 117 answers in 5.3 s, the slowest in
 * 54 ms (docs/benchmarks.md, "Fair work between collections").
 */
const SHARE_EVERY_MS = 5;
let lastTurn = performance.now();
async function shareTheThread(): Promise<void> {
  if (performance.now() - lastTurn < SHARE_EVERY_MS) return;
  await new Promise((resolve) => setImmediate(resolve));
  lastTurn = performance.now();
}

/**
 * The `Db` over a PGlite instance. `close` ends every LISTEN it started, then closes the
 * instance, unless the caller owns the instance and passes its own `close` (the test harness
 * hands one instance to one test database after another).
 */
export function pgliteDb(pglite: PGlite, options: { close?: () => Promise<void> } = {}): Db & { raw: PGlite } {
  // Once closed, this handle refuses work even when the instance lives on under its owner:
  // a late timer of a stopped app must not write into the next test database.
  let closed = false;
  const open = () => {
    if (closed || pglite.closed) throw new Error('PGlite is closed');
  };
  const wrap = (q: Pick<PGlite, 'query' | 'exec'>, onCommit: (fn: () => void) => void = () => {}): Tx => ({
    async query<T>(text: string | Sql, params?: unknown[]) {
      open();
      await shareTheThread();
      const [t, p] = split(text, params);
      const res = await q.query<T>(t, p);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
    async exec(text: string) {
      open();
      await q.exec(text);
    },
    afterCommit: onCommit,
  });
  const base = wrap(pglite);
  const listening = new Set<() => Promise<void>>();
  async function pgliteTransaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    open();
    const hooks = commitHooks();
    const result = await pglite.transaction((tx) => fn(wrap(tx, hooks.add)));
    hooks.run();
    return result;
  }
  return {
    kind: 'pglite',
    raw: pglite,
    query: base.query,
    exec: base.exec,
    transaction: pgliteTransaction,
    async listen(channel, onPayload) {
      const stop = await pglite.listen(channel, onPayload);
      const unsubscribe = async () => {
        if (listening.delete(unsubscribe)) await stop();
      };
      listening.add(unsubscribe);
      return unsubscribe;
    },
    async notify(channel, payload) {
      await base.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    // No replicas: every read is the instance's.
    async read(_scope, fn, o) {
      if (!o?.workMemMb) return fn(base);
      const workMemMb = o.workMemMb;
      if (o.signal?.aborted) throw new Error('the read was stopped before it began');
      return pgliteTransaction((tx) => withWorkMem(tx, workMemMb, fn));
    },
    wrote() {},
    // In-process: there is no connection to lose.
    status: () => ({ listener: 'connected' }),
    async close() {
      if (closed || pglite.closed) return;
      closed = true;
      for (const unsubscribe of [...listening]) await unsubscribe();
      if (options.close) await options.close();
      else await pglite.close();
    },
  };
}

pg.types.setTypeParser(INT8, (v) => Number(v));
pg.types.setTypeParser(NUMERIC, (v) => Number(v));

export interface PostgresOptions {
  /** DATABASE_URL: one host, or several in libpq's form with target_session_attrs (hosts.ts). */
  connectionString: string;
  /** Pool size; the API process and each worker process hold their own pool. */
  max?: number;
  /** Used by the test harness to give each test file its own schema. */
  searchPath?: string;
  /** How long a request waits for a connection before it is answered 503 (ms). */
  connectTimeoutMs?: number;
  /** The longest wait between attempts to re-establish the LISTEN connection (ms). */
  listenRetryMaxMs?: number;
  /** DATABASE_READ_URL's replicas, their lag limit and check period (replicas.ts). */
  readUrls?: string[];
  readMaxLagMs?: number;
  readCheckMs?: number;
  log?: DbLogger;
}

/**
 * node-postgres behind the `Db` interface, built so that a lost connection is an ordinary
 * event: the process never crashes on one, the pool replaces it, and the caller gets an error
 * that `isTransient` recognises (answered 503 over HTTP).
 *
 * Connection states
 * - Pool connections (primary.ts): each has an error listener from its creation on (an 'error'
 *   event without one ends the process). Idle ones that die are dropped by the pool; one that
 *   dies inside `transaction()` is released with the error, so the pool destroys it instead of
 *   handing a dead connection to the next caller. With several hosts, losing the primary (or
 *   finding it read-only, 25006) drops the whole pool, and the next caller finds the new one.
 * - The LISTEN connection (listener.ts): `connected` → (error or end) → `lost` → reconnect with
 *   backoff (100 ms doubling to `listenRetryMaxMs`, jittered) to the primary of that moment →
 *   `connected`, re-LISTEN every channel, then each subscriber's `onReconnect`, because what
 *   was notified meanwhile is lost.
 * - Read replicas (replicas.ts): `ok` / `lagging` / `down`, by a periodic check.
 */
export async function openPostgres(options: PostgresOptions): Promise<Db & { pool: pg.Pool }> {
  const log = options.log ?? silent;
  const primary = new PrimaryPool(
    parseDatabaseUrl(options.connectionString),
    { max: options.max ?? 10, searchPath: options.searchPath, connectTimeoutMs: options.connectTimeoutMs ?? 5000 },
    log,
  );
  const wrap = (q: pg.Pool | pg.PoolClient, onCommit: (fn: () => void) => void = () => {}): Tx => ({
    async query<T>(text: string | Sql, params?: unknown[]) {
      const [t, p] = split(text, params);
      const name = preparedName(text);
      const res = await (name ? q.query({ name, text: t, values: p }) : q.query(t, p));
      return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
    },
    async exec(text: string) {
      await q.query(text);
    },
    afterCommit: onCommit,
  });
  /** Runs `fn` on the primary's pool; a failure that means the primary is gone is reported to it. */
  const onPrimary = async <T>(fn: (pool: pg.Pool) => Promise<T>): Promise<T> => {
    const pool = await primary.current();
    try {
      return await fn(pool);
    } catch (err) {
      primary.failed(pool, err);
      throw err;
    }
  };
  const query: Queryable['query'] = (text, params) => onPrimary((pool) => wrap(pool).query(text, params));
  const transaction = <T>(fn: (tx: Tx) => Promise<T>): Promise<T> =>
    onPrimary((pool) => inTransaction(pool, fn, false));
  /** Whether a failed piece of work lost its connection (the pool is then told to destroy it). */
  const isLost = (client: pg.PoolClient, err: unknown) => isConnectionLost(err) || primary.lostConnections.has(client);
  /**
   * `fn` in a transaction on one of `pool`'s connections. A read (`readOnly`) may carry its
   * work_mem, sent with its BEGIN in one round trip (a read of a few milliseconds under load
   * feels each extra one), and when to stop it (`signal`, `timeoutMs`).
   */
  const inTransaction = <T>(
    pool: pg.Pool,
    fn: (tx: Tx) => Promise<T>,
    readOnly: boolean,
    stop: ReadStop = {},
    workMemMb?: number,
  ): Promise<T> =>
    onStoppableClient(pool, stop, isLost, async (client, lose) => {
      const hooks = commitHooks();
      try {
        await client.query(readOnly ? `BEGIN READ ONLY${workMemMb ? `; ${setWorkMem(workMemMb)}` : ''}` : 'BEGIN');
        const result = await fn(wrap(client, hooks.add));
        await client.query('COMMIT');
        hooks.run();
        return result;
      } catch (err) {
        if (isLost(client, err)) lose(err as Error);
        else await client.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  await query('SELECT 1');
  const listener = new Listener(
    async (lastError) => {
      const pool = primary.open;
      if (lastError && pool) primary.failed(pool, lastError);
      return primary.connectionString();
    },
    log,
    options.listenRetryMaxMs,
  );
  const replicas = options.readUrls?.length
    ? new Replicas(
        {
          urls: options.readUrls,
          maxLagMs: options.readMaxLagMs ?? 5000,
          checkMs: options.readCheckMs ?? 1000,
          poolSize: options.max ?? 10,
          connectTimeoutMs: options.connectTimeoutMs ?? 5000,
          searchPath: options.searchPath,
          log,
        },
        async () => (await query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn,
      )
    : undefined;
  replicas?.start();
  /**
   * A read's work on one pool: in a read-only transaction when it sets work_mem; on a
   * connection of its own when it may be cancelled; else a statement at a time on the pool.
   */
  const readOn = <T>(pool: pg.Pool, fn: (q: Queryable) => Promise<T>, o: ReadOptions | undefined): Promise<T> => {
    if (o?.workMemMb) return inTransaction(pool, fn, true, o, o.workMemMb);
    if (o && stoppable(o)) return onStoppableClient(pool, o, isLost, (client) => fn(wrap(client)));
    return fn(wrap(pool));
  };
  return {
    kind: 'postgres',
    get pool() {
      return primary.open as pg.Pool;
    },
    query,
    async exec(text) {
      await onPrimary((pool) => pool.query(text));
    },
    transaction: (fn) => transaction(fn),
    async read(scope, fn, o) {
      const replica = replicas?.pick(scope);
      if (replica) {
        try {
          return await readOn(replica.pool, fn, o);
        } catch (err) {
          // A replica that went away (or cancelled the read for a conflict with recovery):
          // the read is asked of the primary instead, so the caller sees no difference. Not a
          // read stopped by its caller or its time (nobody wants the answer, or it took too long).
          if (!isTransient(err) || (stoppable(o) && isCancelled(err))) throw err;
          if (isServerGone(err)) replicas?.lost(replica, err);
        }
      }
      return o?.workMemMb || stoppable(o) ? onPrimary((pool) => readOn(pool, fn, o)) : fn({ query });
    },
    wrote: (scope) => replicas?.wrote(scope),
    listen: (channel, onPayload, onReconnect) => listener.subscribe(channel, onPayload, onReconnect),
    async notify(channel, payload) {
      await query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    status: () => ({ listener: listener.state, ...(replicas && { replicas: replicas.status() }) }),
    async close() {
      await listener.close();
      await replicas?.close();
      await primary.end();
    },
  };
}

/** The SET LOCAL of a transaction's work_mem, from a checked number (it is written into the SQL). */
function setWorkMem(workMemMb: number): string {
  if (!Number.isInteger(workMemMb) || workMemMb < 1) throw new Error('work_mem must be a positive integer');
  return `SET LOCAL work_mem = '${workMemMb}MB'`;
}

/** SET LOCAL work_mem for an analytics read, then the read; interpolated, since SET takes no parameters. */
export async function withWorkMem<T>(tx: Queryable, workMemMb: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
  await tx.query(setWorkMem(workMemMb));
  return fn(tx);
}

export async function openDatabase(config: {
  databaseUrl?: string;
  dataDir: string;
  databasePoolSize?: number;
  databaseConnectTimeoutMs?: number;
  databaseReadUrls?: string[];
  databaseReadMaxLagMs?: number;
  databaseReadCheckMs?: number;
  log?: DbLogger;
  /** Who opens an embedded data directory (`server`, `cli <command>`): named in its lock. */
  owner?: string;
}): Promise<Db> {
  if (config.databaseUrl) {
    return openPostgres({
      connectionString: config.databaseUrl,
      max: config.databasePoolSize,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      readUrls: config.databaseReadUrls,
      readMaxLagMs: config.databaseReadMaxLagMs,
      readCheckMs: config.databaseReadCheckMs,
      log: config.log,
    });
  }
  return openPglite({ dataDir: config.dataDir, owner: config.owner });
}
