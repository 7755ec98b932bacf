/**
 * The PGlite cluster every test instance starts from: pg_trgm in public and one migrated
 * schema, `test_template`, ready for the first test database. A new cluster costs about 6 s
 * of CPU (initdb and the first start) and migrating a schema on a new instance another 2 s
 * (the first run of each statement); loading this tarball costs about 0.6 s. Global setup
 * makes it once and keeps it under node_modules/.cache, named by PGlite's version and a hash
 * of the migrations, so a run after the first makes none, and a test process makes its own
 * only when it runs outside vitest.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPglite, MIGRATIONS_DIR, migrate, migrationFiles, pgliteDb } from '../../src/db/index.ts';

export const TEMPLATE_SCHEMA = 'test_template';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The package's exports do not include its package.json; read it from where npm put it.
const pglitePackage = join(root, 'node_modules', '@electric-sql', 'pglite', 'package.json');
const { version } = JSON.parse(readFileSync(pglitePackage, 'utf8')) as { version: string };
const migrations = createHash('sha256');
for (const file of migrationFiles()) migrations.update(file).update(readFileSync(join(MIGRATIONS_DIR, file)));
const path = join(
  root,
  'node_modules',
  '.cache',
  'pglite-template',
  `pglite-${version}-${migrations.digest('hex').slice(0, 16)}.tar`,
);

/** A new cluster with pg_trgm in public and the migrated template schema, as a tarball. */
export async function makeTemplate(): Promise<Blob> {
  const pglite = await createPglite();
  try {
    // In public, as global setup does on PostgreSQL: an extension created by the first
    // schema's migration would belong to that schema and go when the schema is dropped.
    await pglite.exec(`CREATE EXTENSION IF NOT EXISTS pg_trgm; CREATE SCHEMA ${TEMPLATE_SCHEMA}`);
    await pglite.exec(`SET search_path TO ${TEMPLATE_SCHEMA}, public`);
    await migrate(pgliteDb(pglite, { close: async () => {} }));
    await pglite.exec('RESET ALL');
    return (await pglite.dumpDataDir('none')) as Blob;
  } finally {
    await pglite.close();
  }
}

/** Writes the template once (global setup, before any test process starts). */
export async function ensureTemplateFile(): Promise<void> {
  if (existsSync(path)) return;
  const blob = await makeTemplate();
  mkdirSync(dirname(path), { recursive: true });
  // Renamed into place whole, so a run interrupted halfway leaves no broken template.
  const partial = `${path}.${process.pid}`;
  writeFileSync(partial, Buffer.from(await blob.arrayBuffer()));
  renameSync(partial, path);
}

/** The template from the cache when global setup made it, else made here. */
export async function loadTemplate(): Promise<Blob> {
  if (existsSync(path)) return new Blob([readFileSync(path)]);
  return makeTemplate();
}
