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
  /** LISTEN on a channel; returns an unsubscribe function. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
}

const INT8 = 20;
const NUMERIC = 1700;

function split(text: string | Sql, params?: unknown[]): [string, unknown[]] {
  if (typeof text === 'string') return [text, params ?? []];
  return [text.text, text.values];
}

export interface PgliteOptions {
  /** Directory for the data files; omit for an in-memory database (tests). */
  dataDir?: string;
  /** A tarball from `dumpDataDir`, to start from a prepared database (tests). */
  loadDataDir?: Blob;
}

export async function openPglite(options: PgliteOptions = {}): Promise<Db & { raw: PGlite }> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const pglite = await PGlite.create({
    dataDir: options.dataDir,
    loadDataDir: options.loadDataDir,
    // Extensions must be known to the instance before a migration runs CREATE EXTENSION.
    extensions: { pg_trgm },
    parsers: { [INT8]: (v: string) => Number(v), [NUMERIC]: (v: string) => Number(v) },
  });
  const wrap = (q: Pick<PGlite, 'query' | 'exec'>, onCommit: (fn: () => void) => void = () => {}): Tx => ({
    async query<T>(text: string | Sql, params?: unknown[]) {
      const [t, p] = split(text, params);
      const res = await q.query<T>(t, p);
      return { rows: res.rows, rowCount: res.affectedRows ?? res.rows.length };
    },
    async exec(text: string) {
      await q.exec(text);
    },
    afterCommit: onCommit,
  });
  const base = wrap(pglite);
  return {
    kind: 'pglite',
    raw: pglite,
    query: base.query,
    async exec(text) {
      await pglite.exec(text);
    },
    async transaction(fn) {
      const hooks = commitHooks();
      const result = await pglite.transaction((tx) => fn(wrap(tx, hooks.add)));
      hooks.run();
      return result;
    },
    async listen(channel, onPayload) {
      const unsub = await pglite.listen(channel, onPayload);
      return async () => unsub();
    },
    async notify(channel, payload) {
      await pglite.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      if (!pglite.closed) await pglite.close();
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
}

export async function openPostgres(options: PostgresOptions): Promise<Db & { pool: pg.Pool }> {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    options: options.searchPath ? `-c search_path=${options.searchPath}` : undefined,
  });
  // A dropped idle connection must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  let listener: pg.Client | undefined;
  const handlers = new Map<string, Set<(payload: string) => void>>();
  const wrap = (q: pg.Pool | pg.PoolClient, onCommit: (fn: () => void) => void = () => {}): Tx => ({
    async query<T>(text: string | Sql, params?: unknown[]) {
      const [t, p] = split(text, params);
      const res = await q.query(t, p);
      return { rows: res.rows as T[], rowCount: res.rowCount ?? res.rows.length };
    },
    async exec(text: string) {
      await q.query(text);
    },
    afterCommit: onCommit,
  });
  const base = wrap(pool);
  await pool.query('SELECT 1');
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
      try {
        await client.query('BEGIN');
        const result = await fn(wrap(client, hooks.add));
        await client.query('COMMIT');
        hooks.run();
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async listen(channel, onPayload) {
      if (!listener) {
        listener = new pg.Client({ connectionString: options.connectionString });
        listener.on('error', () => {});
        await listener.connect();
        listener.on('notification', (msg) => {
          for (const h of handlers.get(msg.channel) ?? []) h(msg.payload ?? '');
        });
      }
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await listener.query(`LISTEN "${channel.replace(/"/g, '""')}"`);
      }
      set.add(onPayload);
      return async () => {
        set.delete(onPayload);
      };
    },
    async notify(channel, payload) {
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    async close() {
      await listener?.end().catch(() => {});
      await pool.end();
    },
  };
}

export async function openDatabase(config: {
  databaseUrl?: string;
  dataDir: string;
  databasePoolSize?: number;
}): Promise<Db> {
  if (config.databaseUrl) return openPostgres({ connectionString: config.databaseUrl, max: config.databasePoolSize });
  return openPglite({ dataDir: config.dataDir });
}
