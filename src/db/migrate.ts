/**
 * Forward-only migrations: every `migrations/NNNN_name.sql` file not yet recorded in
 * `schema_migrations` is applied in file-name order, each in its own transaction.
 * Modules own number ranges (0001 foundation, 0100 app objects, 0200 interactions,
 * 0300 jobs, 0400 links and webhooks) so that they can be written independently.
 * On PostgreSQL an advisory lock serialises processes that start at the same moment.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './client.ts';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'migrations');
const LOCK_KEY = 727_011_001;

export function migrationFiles(dir = MIGRATIONS_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort();
}

export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const applied: string[] = [];
  await db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
  );
  await db.transaction(async (tx) => {
    if (db.kind === 'postgres') await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    const done = new Set(
      (await tx.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name),
    );
    for (const file of migrationFiles(dir)) {
      if (done.has(file)) continue;
      const text = readFileSync(join(dir, file), 'utf8');
      await tx.exec(text);
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
      applied.push(file);
    }
  });
  return applied;
}

export async function pendingMigrations(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  try {
    const done = new Set(
      (await db.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name),
    );
    return migrationFiles(dir).filter((f) => !done.has(f));
  } catch {
    return migrationFiles(dir);
  }
}
