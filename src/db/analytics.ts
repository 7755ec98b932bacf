/**
 * Analytics queries (dedupe, aggregates, funnels) sort and hash tens of thousands of rows;
 * PostgreSQL's default 4 MB work_mem sends those to disk. They run in their own transaction
 * with a larger work_mem, raised for that transaction only (SET LOCAL), not for everyone.
 */
import { type Db, type Queryable, withReadSettings } from './client.ts';

/**
 * Runs `fn` in an analytics transaction on the primary; `read(collectionId, fn, signal?)` runs
 * a `fn` that only reads on a read replica when one may serve that collection (client.ts,
 * `Db.read`). A read made for a request passes the request's `signal`: each of its statements
 * may then run ANALYTICS_TIMEOUT_MS, and it is cancelled when the signal aborts (its client
 * went away). A job's reads (a people export) and the transaction on the primary (rebuilding a
 * journey's progress) pass none: a job has no client waiting, and its work may take longer
 * than a request's answer should. The platform builds one from the analytics settings
 * (`analyticsRunner`) and hands it to every module, so the settings live in one place.
 */
export type Analytics = (<T>(fn: (q: Queryable) => Promise<T>) => Promise<T>) & {
  read<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal): Promise<T>;
};

export interface AnalyticsSettings {
  /** ANALYTICS_WORK_MEM_MB */
  workMemMb: number;
  /** ANALYTICS_TIMEOUT_MS: how long one statement of a request's read may run. */
  timeoutMs: number;
}

export function analyticsRunner(db: Db, { workMemMb, timeoutMs }: AnalyticsSettings): Analytics {
  return Object.assign(<T>(fn: (q: Queryable) => Promise<T>) => inAnalyticsTransaction(db, workMemMb, fn), {
    read: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal) =>
      db.read(collectionId, fn, signal ? { workMemMb, timeoutMs, signal } : { workMemMb }),
  });
}

export function inAnalyticsTransaction<T>(db: Db, workMemMb: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.transaction((tx) => withReadSettings(tx, { workMemMb }, fn));
}
