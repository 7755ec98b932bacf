/**
 * Analytics queries (dedupe, aggregates, funnels) sort and hash tens of thousands of rows;
 * PostgreSQL's default 4 MB work_mem sends those to disk. They run in their own transaction
 * with a larger work_mem, raised for that transaction only (SET LOCAL), not for everyone.
 */
import type { Db, Queryable } from './client.ts';

/**
 * Runs `fn` in an analytics transaction. The platform builds one from ANALYTICS_WORK_MEM_MB
 * (`analyticsRunner`) and hands it to every module, so the setting lives in one place.
 */
export type Analytics = <T>(fn: (q: Queryable) => Promise<T>) => Promise<T>;

export function analyticsRunner(db: Db, workMemMb: number): Analytics {
  return (fn) => inAnalyticsTransaction(db, workMemMb, fn);
}

export function inAnalyticsTransaction<T>(db: Db, workMemMb: number, fn: (q: Queryable) => Promise<T>): Promise<T> {
  // Interpolated, since SET takes no parameters: only a positive integer ever gets here.
  if (!Number.isInteger(workMemMb) || workMemMb < 1) throw new Error('work_mem must be a positive integer');
  return db.transaction(async (tx) => {
    await tx.query(`SET LOCAL work_mem = '${workMemMb}MB'`);
    return fn(tx);
  });
}
