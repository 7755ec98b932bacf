/**
 * The server driver: node-postgres behind the `Db` interface of client.ts, with the primary's
 * pool (primary.ts), the LISTEN connection (listener.ts) and read replicas (replicas.ts).
 */
import pg from 'pg';
import type { Sql } from 'sql-template-tag';
import {
  analyticsSettings,
  commitHooks,
  type Db,
  type DbLogger,
  INT8,
  NUMERIC,
  preparedName,
  type Queryable,
  type ReadOptions,
  silent,
  split,
  type Tx,
} from './client.ts';
import { isCancelled, isConnectionLost, isServerGone, isTransient } from './faults.ts';
import { parseDatabaseUrl } from './hosts.ts';
import { Listener } from './listener.ts';
import { PrimaryPool } from './primary.ts';
import { Replicas } from './replicas.ts';
import { onStoppableClient, type ReadStop, stoppable } from './stoppable.ts';

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
   * analytics settings (work_mem, no JIT), sent with its BEGIN in one round trip (a read of a
   * few milliseconds under load feels each extra one), and when to stop it (`signal`,
   * `timeoutMs`).
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
        await client.query(
          readOnly ? `BEGIN READ ONLY${workMemMb ? `; ${analyticsSettings(workMemMb)}` : ''}` : 'BEGIN',
        );
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
