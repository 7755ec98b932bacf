/**
 * The empty PGlite cluster every test instance starts from: a new cluster costs about 6 s of
 * CPU (initdb and the first start), loading one from a tarball about 0.6 s. Global setup makes
 * it once and keeps it under node_modules/.cache, named by PGlite's version, so a run after
 * the first makes none and a test process makes one only when it runs outside vitest.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPglite } from '../../src/db/index.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The package's exports do not include its package.json; read it from where npm put it.
const pglitePackage = join(root, 'node_modules', '@electric-sql', 'pglite', 'package.json');
const { version } = JSON.parse(readFileSync(pglitePackage, 'utf8')) as { version: string };
const path = join(root, 'node_modules', '.cache', 'pglite-template', `pglite-${version}-pg_trgm.tar`);

/** A new cluster with what the migrations expect in public (pg_trgm), as a tarball. */
export async function makeTemplate(): Promise<Blob> {
  const pglite = await createPglite();
  try {
    // In public, as global setup does on PostgreSQL: an extension created by the first
    // schema's migration would belong to that schema and go when the schema is dropped.
    await pglite.exec('CREATE EXTENSION IF NOT EXISTS pg_trgm');
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
