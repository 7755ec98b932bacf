/**
 * Analytics queries (dedupe, aggregates, funnels) sort and hash tens of thousands of rows;
 * PostgreSQL's default 4 MB work_mem sends those to disk. They run in their own transaction
 * with a larger work_mem, raised for that transaction only (SET LOCAL), not for everyone.
 */
import { type Db, type Queryable, withWorkMem } from './client.ts';

/**
 * Runs `fn` in an analytics transaction on the primary (a job's work, such as rebuilding a
 * journey's progress). `read(collectionId, fn, signal?)` runs a `fn` that only reads, in a
 * read-only transaction with that work_mem, on a read replica when one may serve that
 * collection (client.ts, `Db.read`); `quick` the same without the transaction, for reads of
 * counts kept ready (the links' click analytics), which sort little and would pay the
 * transaction's round trips on every answer. A `signal` cancels the read in the database when
 * it aborts: the platform's slots (platform/analytics-slots.ts) abort it when the request's
 * client goes away or its time bound runs out. The platform builds one from
 * ANALYTICS_WORK_MEM_MB (`analyticsRunner`) and hands it to every module, so the setting lives
 * in one place.
 */
export type Analytics = (<T>(fn: (q: Queryable) => Promise<T>) => Promise<T>) & {
  read<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal): Promise<T>;
  quick<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal): Promise<T>;
};

export function analyticsRunner(db: Db, workMemMb: number): Analytics {
  return Object.assign(<T>(fn: (q: Queryable) => Promise<T>) => inAnalyticsTransaction(db, workMemMb, fn), {
    read: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal) =>
      db.read(collectionId, fn, { workMemMb, signal }),
    quick: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal) =>
      db.read(collectionId, fn, { signal }),
  });
}

export function inAnalyticsTransaction<T>(db: Db, workMemMb: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.transaction((tx) => withWorkMem(tx, workMemMb, fn));
}
