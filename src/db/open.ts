/**
 * The database a process opens from its settings: a PostgreSQL server when DATABASE_URL is
 * set, else the embedded PGlite in DATA_DIR.
 */
import type { Db, DbLogger } from './client.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export async function openDatabase(config: {
  databaseUrl?: string;
  dataDir: string;
  databasePoolSize?: number;
  databaseConnectTimeoutMs?: number;
  databaseReadUrls?: string[];
  databaseReadMaxLagMs?: number;
  databaseReadCheckMs?: number;
  log?: DbLogger;
  /** Who opens an embedded data directory (`server`, `cli <command>`): named in its lock. */
  owner?: string;
}): Promise<Db> {
  if (config.databaseUrl) {
    return openPostgres({
      connectionString: config.databaseUrl,
      max: config.databasePoolSize,
      connectTimeoutMs: config.databaseConnectTimeoutMs,
      readUrls: config.databaseReadUrls,
      readMaxLagMs: config.databaseReadMaxLagMs,
      readCheckMs: config.databaseReadCheckMs,
      log: config.log,
    });
  }
  return openPglite({ dataDir: config.dataDir, owner: config.owner });
}
