/**
 * Analytics queries (dedupe, aggregates, funnels) sort and hash tens of thousands of rows;
 * PostgreSQL's default 4 MB work_mem sends those to disk. They run in their own transaction
 * with a larger work_mem, raised for that transaction only (SET LOCAL), not for everyone, and
 * without JIT compilation (client.ts `analyticsSettings` has why).
 */
import { type Db, type Queryable, withAnalyticsSettings } from './client.ts';
import type { ReadSignal, ReadStop } from './stoppable.ts';

/**
 * What the modules use (the platform's `analytics`, platform/analytics-slots.ts): `fn` in an
 * analytics transaction on the primary (a job's work, such as rebuilding a journey's
 * progress); `read(collectionId, fn, signal?)`, a `fn` that only reads, in a read-only
 * transaction with that work_mem, on a read replica when one may serve that collection
 * (client.ts, `Db.read`); `quick`, the same without the transaction, for reads of counts kept
 * ready (the links' click analytics), which sort little and would pay the transaction's round
 * trips on every answer. A read made for a request passes the request's `signal`: it is then
 * bounded in time and cancelled in the database when its client goes away.
 */
export type Analytics = (<T>(fn: (q: Queryable) => Promise<T>) => Promise<T>) & {
  read<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: ReadSignal): Promise<T>;
  quick<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: ReadSignal): Promise<T>;
};

/** The runner under the platform's slots: the same reads, told when to stop. */
export type AnalyticsRunner = (<T>(fn: (q: Queryable) => Promise<T>) => Promise<T>) & {
  read<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, stop?: ReadStop): Promise<T>;
  quick<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, stop?: ReadStop): Promise<T>;
};

/** Built once from ANALYTICS_WORK_MEM_MB, so that the setting lives in one place. */
export function analyticsRunner(db: Db, workMemMb: number): AnalyticsRunner {
  return Object.assign(<T>(fn: (q: Queryable) => Promise<T>) => inAnalyticsTransaction(db, workMemMb, fn), {
    read: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, stop?: ReadStop) =>
      db.read(collectionId, fn, { ...stop, workMemMb }),
    quick: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, stop?: ReadStop) =>
      db.read(collectionId, fn, stop),
  });
}

export function inAnalyticsTransaction<T>(db: Db, workMemMb: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.transaction((tx) => withAnalyticsSettings(tx, workMemMb, fn));
}
