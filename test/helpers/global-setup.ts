/**
 * On PostgreSQL each test file gets its own schema; extensions are database-wide, so they
 * are created once here rather than raced by parallel files' migrations.
 */
import pg from 'pg';

export async function setup(): Promise<void> {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    // Schemas left behind by an interrupted run.
    const { rows } = await client.query<{ nspname: string }>(
      "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'test\\_%' ESCAPE '\\'",
    );
    for (const r of rows) await client.query(`DROP SCHEMA IF EXISTS "${r.nspname}" CASCADE`);
  } finally {
    await client.end();
  }
}
