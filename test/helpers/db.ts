/**
 * A fresh, migrated database for one test file: a private schema on an in-memory PGlite
 * instance by default, or on the PostgreSQL server named by TEST_DATABASE_URL.
 * `drop()` releases it; afterwards its handle refuses queries.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import {
  createPglite,
  type Db,
  MIGRATIONS_DIR,
  migrate,
  migrationFiles,
  openPostgres,
  pgliteDb,
} from '../../src/db/index.ts';
import { loadTemplate, TEMPLATE_SCHEMA } from './pglite-template.ts';

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

/**
 * On PGlite, each test database is a schema on an instance this process keeps: starting an
 * instance (0.6 s of CPU from the template, see pglite-template.ts) and migrating a schema
 * (0.2 s) cost more than most test files spend in their tests.
 *
 * - An instance serves one test database at a time (its one connection's search_path names
 *   that schema), so a file with two apps alive at once holds two instances.
 * - A dropped test database hands its instance back with its schema emptied (every table
 *   truncated, identities restarted), ready for the next migrated test database, unless the
 *   schema's structure no longer matches what the migrations made (a test renamed a table,
 *   say): then the schema is dropped and the next one is migrated afresh.
 */
interface Slot {
  pglite: PGlite;
  /** An empty, migrated schema, and the structure the migrations left it with. */
  ready?: { schema: string; structure: string };
}
const idle: Slot[] = [];
let schemas = 0;
/** The empty cluster new instances load (see pglite-template.ts). */
let template: Promise<Blob> | undefined;

/** A new instance, with the template's migrated schema ready for a test database. */
async function newInstance(): Promise<Slot> {
  template ??= loadTemplate();
  const pglite = await createPglite({ loadDataDir: await template });
  return { pglite, ready: { schema: TEMPLATE_SCHEMA, structure: await structureOf(pglite, TEMPLATE_SCHEMA) } };
}

/** Tables, columns, indexes, constraints, triggers and functions of a schema, as one hash. */
async function structureOf(pglite: PGlite, schema: string): Promise<string> {
  const { rows } = await pglite.query<{ h: string }>(
    `SELECT md5(concat_ws('|',
       (SELECT string_agg(format('%s:%s', c.relname, c.relkind), ',' ORDER BY c.relname) FROM pg_class c
         WHERE c.relnamespace = $1::regnamespace),
       (SELECT string_agg(format('%s.%s:%s', c.relname, a.attname, a.atttypid), ',' ORDER BY c.relname, a.attnum)
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         WHERE c.relnamespace = $1::regnamespace AND a.attnum > 0 AND NOT a.attisdropped),
       (SELECT string_agg(conname, ',' ORDER BY conname) FROM pg_constraint WHERE connamespace = $1::regnamespace),
       (SELECT string_agg(format('%s:%s', t.tgname, t.tgenabled), ',' ORDER BY t.tgname) FROM pg_trigger t
         JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = $1::regnamespace),
       (SELECT string_agg(format('%s:%s', p.proname, md5(p.prosrc)), ',' ORDER BY p.proname) FROM pg_proc p
         WHERE p.pronamespace = $1::regnamespace))) AS h`,
    [schema],
  );
  return rows[0].h;
}

async function pgliteTestDb(migrated: boolean): Promise<TestDb> {
  const slot = idle.pop() ?? (await newInstance());
  const { pglite } = slot;
  let ready = migrated ? slot.ready : undefined;
  if (slot.ready && !ready) await pglite.exec(`DROP SCHEMA ${slot.ready.schema} CASCADE`);
  const schema = ready?.schema ?? `test_${++schemas}`;
  if (!ready) await pglite.exec(`CREATE SCHEMA ${schema}`);
  await pglite.exec(`SET search_path TO ${schema}, public`);
  const db = pgliteDb(pglite, {
    async close() {
      // What a session can leave behind besides its schema: settings and advisory locks.
      await pglite.exec('RESET ALL; SELECT pg_advisory_unlock_all()');
      if (ready && (await structureOf(pglite, schema)) === ready.structure) {
        const { rows } = await pglite.query<{ name: string }>(
          `SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables
           WHERE schemaname = $1 AND tablename <> 'schema_migrations'`,
          [schema],
        );
        await pglite.exec(`TRUNCATE ${rows.map((r) => r.name).join(', ')} RESTART IDENTITY CASCADE`);
        idle.push({ pglite, ready });
      } else {
        await pglite.exec(`DROP SCHEMA ${schema} CASCADE`);
        idle.push({ pglite });
      }
    },
  });
  if (migrated && !ready) {
    await migrate(db);
    ready = { schema, structure: await structureOf(pglite, schema) };
  }
  return { db, schema, drop: () => db.close() };
}

export async function createTestDb(options: { migrate?: boolean; poolSize?: number } = {}): Promise<TestDb> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return pgliteTestDb(options.migrate !== false);
  // The creation time in the name lets global setup clear leftovers of interrupted runs
  // without touching schemas of a run that is still going.
  const schema = `test_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.end();
  const db = await openPostgres({ connectionString: base, searchPath: `${schema},public`, max: options.poolSize });
  const testDb: TestDb = {
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
  if (options.migrate !== false) await migrate(testDb.db);
  return testDb;
}

/**
 * A database as it stood just before migration `version` ('0650' and so on): the migrations
 * before it applied, none from it on, for a test of what that migration does to rows stored
 * before it. `migrate(db)` then applies the rest, as an upgrade would.
 */
export async function createTestDbBefore(version: string): Promise<TestDb> {
  const testDb = await createTestDb({ migrate: false });
  const before = mkdtempSync(join(tmpdir(), `migrations-before-${version}-`));
  try {
    for (const file of migrationFiles().filter((f) => f < version)) {
      copyFileSync(join(MIGRATIONS_DIR, file), join(before, file));
    }
    await migrate(testDb.db, before);
    return testDb;
  } catch (err) {
    await testDb.drop();
    throw err;
  } finally {
    rmSync(before, { recursive: true, force: true });
  }
}

/** Where service processes a test starts keep their data, and how to remove it afterwards. */
export interface ChildStorage {
  /** `DATABASE_URL` of a schema of its own on PostgreSQL, else `DATA_DIR` of a new directory. */
  env: Record<string, string>;
  release(): Promise<void>;
}

/** Storage for child processes; this process holds no connection to it. */
export async function childStorage(prefix: string): Promise<ChildStorage> {
  if (onPostgres) {
    const testDb = await createTestDb({ migrate: false });
    await testDb.db.close();
    return { env: { DATABASE_URL: testDb.url as string }, release: () => testDb.drop().catch(() => {}) };
  }
  const dataDir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  return { env: { DATA_DIR: dataDir }, release: async () => rmSync(dataDir, { recursive: true, force: true }) };
}
