/**
 * On PostgreSQL each test file gets its own schema; extensions are database-wide, so they
 * are created once here rather than raced by parallel files' migrations. On PGlite the
 * cluster that test instances load (pglite-template.ts) is made here, once, instead of by
 * each test process.
 */
import { existsSync } from 'node:fs';
import pg from 'pg';
import { ensureTemplateFile } from './pglite-template.ts';

/**
 * Says once, before any test runs, which suites this run skips and what would run them: the
 * reporter counts skipped tests but does not say why.
 */
function sayWhatIsSkipped(): void {
  // Both projects (fast, process) run this setup in the one main process: say it once.
  if (process.env.TEST_SKIPS_SAID) return;
  process.env.TEST_SKIPS_SAID = '1';
  const missing: string[] = [];
  if (!process.env.TEST_DATABASE_URL) {
    missing.push(
      'PostgreSQL-only tests (deadlocks, live worker processes, database outages, LISTEN loss): set TEST_DATABASE_URL=postgres://…',
    );
  }
  if (!process.env.TEST_REDIS_URL) missing.push('rate limits shared in Redis: set TEST_REDIS_URL=redis://…');
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(chromium)) missing.push(`the console in Chromium: apt-get install -y chromium, or set CHROMIUM_PATH`);
  if (missing.length === 0) return;
  console.log(`Skipped in this run, and what runs them:\n${missing.map((m) => `  - ${m}`).join('\n')}\n`);
}

export async function setup(): Promise<void> {
  sayWhatIsSkipped();
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
