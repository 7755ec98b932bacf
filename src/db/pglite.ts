/**
 * The embedded driver: PGlite (real PostgreSQL compiled to WASM, the zero-setup default)
 * behind the `Db` interface of client.ts, one connection in this process.
 */
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import type { Sql } from 'sql-template-tag';
import { commitHooks, type Db, INT8, NUMERIC, split, type Tx, withAnalyticsSettings } from './client.ts';
import { lockDataDir } from './data-dir-lock.ts';

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
      return pgliteTransaction((tx) => withAnalyticsSettings(tx, workMemMb, fn));
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
