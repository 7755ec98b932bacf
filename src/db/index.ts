export {
  type Analytics,
  type AnalyticsRunner,
  analyticsRunner,
  inAnalyticsTransaction,
} from './analytics.ts';
export { type ChunkedFiles, chunkedFiles, type FileWriter, type StoredFile } from './chunked-files.ts';
export type {
  Db,
  DbLogger,
  DbStatus,
  PreparedSql,
  Queryable,
  QueryResult,
  ReadOptions,
  Tx,
} from './client.ts';
export { prepared } from './client.ts';
export { allOf, setList } from './conditions.ts';
export { DataDirLockedError, LOCK_FILE } from './data-dir-lock.ts';
export { isCancelled, isConnectionLost, isRetryableConflict, isServerGone, isTransient } from './faults.ts';
export { MIGRATIONS_DIR, migrate, migrationFiles, pendingMigrations } from './migrate.ts';
export { openDatabase } from './open.ts';
export { type PageQuery, pageOf, pageWithTotal } from './pages.ts';
export {
  deleteFromDefaultBefore,
  dropMonthsBefore,
  MONTHS_AHEAD,
  type MonthlyTable,
  type MonthPartition,
  maintainMonthly,
  makeMonths,
  monthlyPartitions,
  monthStart,
  type UpkeepReport,
} from './partitions.ts';
export { createPglite, openPglite, pgliteDb } from './pglite.ts';
export { openPostgres } from './postgres.ts';
export { NoPrimaryError } from './primary.ts';
export type { ReplicaStatus } from './replicas.ts';
export { backoffMs, isConflictError, type RetryOptions, retryOnConflict } from './retry.ts';
export { type ReadSignal, type ReadStop, watchUntil } from './stoppable.ts';
