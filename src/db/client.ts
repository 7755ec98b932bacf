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
import { isConnectionLost } from './faults.ts';

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
  /** What the database layer knows of its connections, for /readyz and logs. */
  status(): DbStatus;
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

export interface DbStatus {
  /** `lost` while the LISTEN connection is being re-established; `idle` before any LISTEN. */
  listener: 'idle' | 'connected' | 'lost';
  replicas?: { name: string; lagSeconds: number | null; state: string }[];
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
  return {
    kind: 'pglite',
    raw: pglite,
    query: base.query,
    exec: base.exec,
    async transaction(fn) {
      open();
      const hooks = commitHooks();
      const result = await pglite.transaction((tx) => fn(wrap(tx, hooks.add)));
      hooks.run();
      return result;
    },
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
  connectionString: string;
  /** Pool size; the API process and each worker process hold their own pool. */
  max?: number;
  /** Used by the test harness to give each test file its own schema. */
  searchPath?: string;
  /** How long a request waits for a connection before it is answered 503 (ms). */
  connectTimeoutMs?: number;
  /** The longest wait between attempts to re-establish the LISTEN connection (ms). */
  listenRetryMaxMs?: number;
  log?: DbLogger;
}

/**
 * node-postgres behind the `Db` interface, built so that a lost connection is an ordinary
 * event: the process never crashes on one, the pool replaces it, and the caller gets an error
 * that `isTransient` recognises (answered 503 over HTTP).
 *
 * Connection states
 * - Pool connections: each has an error listener from its creation on (an 'error' event
 *   without one ends the process). Idle ones that die are dropped by the pool; one that dies
 *   inside `transaction()` is released with the error, so the pool destroys it instead of
 *   handing a dead connection to the next caller.
 * - The LISTEN connection: `connected` → (error or end) → `lost` → reconnect with backoff
 *   (100 ms doubling to `listenRetryMaxMs`, jittered) → `connected`, re-LISTEN every channel,
 *   then each subscriber's `onReconnect`, because what was notified meanwhile is lost.
 */
export async function openPostgres(options: PostgresOptions): Promise<Db & { pool: pg.Pool }> {
  const log = options.log ?? silent;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    options: options.searchPath ? `-c search_path=${options.searchPath}` : undefined,
    // Without a bound, a request waits forever for a connection while the server is away.
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    // Finds half-open connections (a peer that vanished without a FIN) sooner.
    keepAlive: true,
  });
  // A dropped idle connection must not crash the process; the pool replaces it.
  pool.on('error', (err) => log.warn({ err: describe(err) }, 'database: an idle connection was lost'));
  // Every connection gets an error listener for its whole life. The pool removes its own
  // listener before it hands a connection out, and a promise-based checkout resumes only after
  // the current socket read is parsed: a server that terminates the connection right after
  // accepting it (both messages in one read) would otherwise end the process in between.
  const lostConnections = new WeakSet<pg.ClientBase>();
  pool.on('connect', (client) => {
    client.on('error', () => lostConnections.add(client));
  });
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
  const base = wrap(pool);
  await pool.query('SELECT 1');
  const listener = new Listener(options, log);
  return {
    kind: 'postgres',
    pool,
    query: base.query,
    async exec(text) {
      await pool.query(text);
    },
    async transaction(fn) {
      const client = await pool.connect();
      const hooks = commitHooks();
      let lost: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await fn(wrap(client, hooks.add));
        await client.query('COMMIT');
        hooks.run();
        return result;
      } catch (err) {
        if (isConnectionLost(err) || lostConnections.has(client)) lost = err as Error;
        else await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        // Released with an error, the pool destroys the connection rather than reuse it.
        client.release(lost);
      }
    },
    listen: (channel, onPayload, onReconnect) => listener.subscribe(channel, onPayload, onReconnect),
    async notify(channel, payload) {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    status: () => ({ listener: listener.state }),
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}

function describe(err: unknown): { message: string; code?: string } {
  const e = err as { message?: string; code?: string };
  return { message: String(e?.message ?? err), code: e?.code };
}

interface Subscription {
  onPayload: (payload: string) => void;
  onReconnect?: () => void;
}

/** One dedicated connection for LISTEN, re-established after it is lost (see openPostgres). */
class Listener {
  state: DbStatus['listener'] = 'idle';
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private readonly channels = new Map<string, Set<Subscription>>();
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = 0;
  private closed = false;

  constructor(
    private readonly options: PostgresOptions,
    private readonly log: DbLogger,
  ) {}

  async subscribe(
    channel: string,
    onPayload: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>> {
    const sub: Subscription = { onPayload, onReconnect };
    let set = this.channels.get(channel);
    const isNew = !set;
    if (!set) {
      set = new Set();
      this.channels.set(channel, set);
    }
    set.add(sub);
    if (!this.client) await this.connect();
    else if (isNew) {
      // If the connection dies now, the reconnect LISTENs every channel of the map anyway.
      await this.client.query(`LISTEN ${quoteIdent(channel)}`).catch(() => {});
    }
    return async () => {
      set.delete(sub);
    };
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.connectionString, keepAlive: true });
    let failed = false;
    const onLost = (err?: Error) => {
      if (failed) return;
      failed = true;
      if (this.client === client) this.client = undefined;
      client.end().catch(() => {});
      if (this.closed) return;
      if (this.state !== 'lost') {
        this.log.warn({ err: err && describe(err) }, 'database: LISTEN connection lost; reconnecting');
      }
      this.state = 'lost';
      this.scheduleRetry();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (msg) => {
      for (const sub of this.channels.get(msg.channel) ?? []) sub.onPayload(msg.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      // Never thrown to the subscriber: it is registered, and hears `onReconnect` once the
      // connection is up. A worker started during an outage runs on its poll until then.
      onLost(err as Error);
      return;
    }
    if (failed || this.closed) {
      await client.end().catch(() => {});
      return;
    }
    const wasLost = this.state === 'lost';
    this.client = client;
    this.state = 'connected';
    this.retryDelay = 0;
    if (wasLost) {
      this.log.info({ channels: [...this.channels.keys()] }, 'database: LISTEN connection re-established');
      // Notifications sent while we were away are lost: let each subscriber catch up.
      for (const set of this.channels.values()) {
        for (const sub of set) {
          try {
            sub.onReconnect?.();
          } catch {}
        }
      }
    }
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.closed) return;
    const max = this.options.listenRetryMaxMs ?? 5000;
    this.retryDelay = Math.min(max, this.retryDelay ? this.retryDelay * 2 : 100);
    const delay = this.retryDelay / 2 + Math.random() * (this.retryDelay / 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect().catch(() => {});
    }, delay);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.connecting?.catch(() => {});
    await this.client?.end().catch(() => {});
    this.client = undefined;
  }
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export async function openDatabase(config: {
  databaseUrl?: string;
  dataDir: string;
  databasePoolSize?: number;
  databaseConnectTimeoutMs?: number;
  log?: DbLogger;
  /** Who opens an embedded data directory (`server`, `cli <command>`): named in its lock. */
  owner?: string;
}): Promise<Db> {
  if (config.databaseUrl) {
    return openPostgres({
      connectionString: config.databaseUrl,
      max: config.databasePoolSize,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      log: config.log,
    });
  }
  return openPglite({ dataDir: config.dataDir, owner: config.owner });
}
