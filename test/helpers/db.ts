/**
 * A fresh, migrated database for one test file: in-memory PGlite by default, or a private
 * schema on the PostgreSQL server named by TEST_DATABASE_URL.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type Db, migrate, openPglite, openPostgres } from '../../src/db/index.ts';

export const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

export interface TestDb {
  db: Db;
  /** A connection string for child processes that must see the same data (PostgreSQL only). */
  url?: string;
  schema?: string;
  drop(): Promise<void>;
}

export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema},public`);
  return u.toString();
}

/** A dump of a freshly migrated PGlite database, once a process has made one. */
let migratedPglite: Promise<Blob> | undefined;

export async function createTestDb(options: { migrate?: boolean; poolSize?: number } = {}): Promise<TestDb> {
  const base = process.env.TEST_DATABASE_URL;
  let testDb: TestDb;
  if (base) {
    // The creation time in the name lets global setup clear leftovers of interrupted runs
    // without touching schemas of a run that is still going.
    const schema = `test_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE SCHEMA "${schema}"`);
    await admin.end();
    const db = await openPostgres({ connectionString: base, searchPath: `${schema},public`, max: options.poolSize });
    testDb = {
      db,
      schema,
      url: withSearchPath(base, schema),
      async drop() {
        await db.close();
        const c = new pg.Client({ connectionString: base });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await c.end();
      },
    };
  } else {
    const template = options.migrate === false ? undefined : await migratedPglite;
    const db = await openPglite({ loadDataDir: template });
    testDb = { db, drop: () => db.close() };
    if (!template && options.migrate !== false) {
      await migrate(db);
      // This process's first migrated database, before any test writes to it: the template of
      // the next ones (loading it is about three times faster than a new data directory).
      const dump = db.raw.dumpDataDir('none').then((blob) => blob as Blob);
      migratedPglite ??= dump;
      await dump;
      return testDb;
    }
  }
  // On a template this finds every migration applied: a check that costs a few milliseconds.
  if (options.migrate !== false) await migrate(testDb.db);
  return testDb;
}
