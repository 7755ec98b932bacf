/**
 * On PostgreSQL each test file gets its own schema; extensions are database-wide, so they
 * are created once here rather than raced by parallel files' migrations. On PGlite the
 * cluster that test instances load (pglite-template.ts) is made here, once, instead of by
 * each test process.
 */
import pg from 'pg';
import { ensureTemplateFile } from './pglite-template.ts';

export async function setup(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return ensureTemplateFile();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    // Schemas left behind by interrupted runs: only those created over an hour ago, so a run
    // started meanwhile (another checkout on the same server) keeps its schemas.
    const { rows } = await client.query<{ nspname: string }>(
      "SELECT nspname FROM pg_namespace WHERE nspname ~ '^test_[0-9]+_'",
    );
    const cutoff = Date.now() / 1000 - 3600;
    for (const r of rows) {
      const created = Number(r.nspname.split('_')[1]);
      if (created < cutoff) await client.query(`DROP SCHEMA IF EXISTS "${r.nspname}" CASCADE`);
    }
  } finally {
    await client.end();
  }
}
