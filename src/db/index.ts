export type { Db, Queryable, QueryResult, Tx } from './client.ts';
export { openDatabase, openPglite, openPostgres } from './client.ts';
export { migrate, migrationFiles, pendingMigrations } from './migrate.ts';
