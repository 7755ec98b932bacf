export { type Analytics, analyticsRunner, inAnalyticsTransaction } from './analytics.ts';
export type { Db, DbLogger, DbStatus, PreparedSql, Queryable, QueryResult, Tx } from './client.ts';
export { createPglite, openDatabase, openPglite, openPostgres, pgliteDb, prepared } from './client.ts';
export { allOf, setList } from './conditions.ts';
export { DataDirLockedError, LOCK_FILE } from './data-dir-lock.ts';
export { isConnectionLost, isRetryableConflict, isTransient } from './faults.ts';
export { MIGRATIONS_DIR, migrate, migrationFiles, pendingMigrations } from './migrate.ts';
export { type PageQuery, pageOf, pageWithTotal } from './pages.ts';
export { backoffMs, isConflictError, type RetryOptions, retryOnConflict } from './retry.ts';
