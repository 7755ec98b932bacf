/**
 * Analytics queries (dedupe, aggregates, funnels) sort and hash tens of thousands of rows;
 * PostgreSQL's default 4 MB work_mem sends those to disk. They run in their own transaction
 * with a larger work_mem, raised for that transaction only (SET LOCAL), not for everyone.
 */
import { type Db, type Queryable, withWorkMem } from './client.ts';

/**
 * Runs `fn` in an analytics transaction on the primary; `read(collectionId, fn)` runs a `fn`
 * that only reads on a read replica when one may serve that collection (client.ts, `Db.read`).
 * The platform builds one from ANALYTICS_WORK_MEM_MB (`analyticsRunner`) and hands it to every
 * module, so the setting lives in one place.
 */
export type Analytics = (<T>(fn: (q: Queryable) => Promise<T>) => Promise<T>) & {
  read<T>(collectionId: string, fn: (q: Queryable) => Promise<T>): Promise<T>;
};

export function analyticsRunner(db: Db, workMemMb: number): Analytics {
  return Object.assign(<T>(fn: (q: Queryable) => Promise<T>) => inAnalyticsTransaction(db, workMemMb, fn), {
    read: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>) => db.read(collectionId, fn, { workMemMb }),
  });
}

export function inAnalyticsTransaction<T>(db: Db, workMemMb: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.transaction((tx) => withWorkMem(tx, workMemMb, fn));
}
