/** All SQL of the collections module: collections, API keys, platform settings. */
import type { Queryable } from '../../db/index.ts';

export interface CollectionRow {
  id: string;
  name: string;
  created_at: Date;
}

export interface ApiKeyRow {
  collection_id: string;
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
}

export async function insertCollection(db: Queryable, id: string, name: string): Promise<CollectionRow | undefined> {
  const { rows } = await db.query<CollectionRow>(
    'INSERT INTO collections (id, name) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, name, created_at',
    [id, name],
  );
  return rows[0];
}

export async function listCollections(db: Queryable, limit: number, offset: number): Promise<CollectionRow[]> {
  const { rows } = await db.query<CollectionRow>(
    'SELECT id, name, created_at FROM collections ORDER BY created_at, id LIMIT $1 OFFSET $2',
    [limit, offset],
  );
  return rows;
}

export async function collectionExists(db: Queryable, collectionId: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM collections WHERE id = $1', [collectionId]);
  return rows.length > 0;
}

export async function insertApiKey(
  db: Queryable,
  collectionId: string,
  key: { id: string; name: string; prefix: string; keyHash: string },
): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (collection_id, id, name, prefix, key_hash) VALUES ($1, $2, $3, $4, $5)
     RETURNING collection_id, id, name, prefix, created_at, revoked_at`,
    [collectionId, key.id, key.name, key.prefix, key.keyHash],
  );
  return rows[0];
}

export async function listApiKeys(db: Queryable, collectionId: string): Promise<ApiKeyRow[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT collection_id, id, name, prefix, created_at, revoked_at FROM api_keys
     WHERE collection_id = $1 ORDER BY created_at, id`,
    [collectionId],
  );
  return rows;
}

/** Where revocations are announced to every process (payload: the key's id). */
export const KEYS_CHANNEL = 'api_keys_revoked';

/** Announces a revoked key; inside a transaction PostgreSQL delivers it only on commit. */
export async function notifyKeyRevoked(db: Queryable, keyId: string): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [KEYS_CHANNEL, keyId]);
}

export async function revokeApiKey(
  db: Queryable,
  collectionId: string,
  id: string,
): Promise<(ApiKeyRow & { key_hash: string }) | undefined> {
  const { rows } = await db.query<ApiKeyRow & { key_hash: string }>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE collection_id = $1 AND id = $2
     RETURNING collection_id, id, name, prefix, created_at, revoked_at, key_hash`,
    [collectionId, id],
  );
  return rows[0];
}

export async function findActiveKeyByHash(
  db: Queryable,
  keyHash: string,
): Promise<{ collection_id: string; id: string } | undefined> {
  const { rows } = await db.query<{ collection_id: string; id: string }>(
    'SELECT collection_id, id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [keyHash],
  );
  return rows[0];
}

/** Returns the stored value, inserting `fallback` first if the key is new (race-safe). */
export async function settingOrInsert(db: Queryable, key: string, fallback: string): Promise<string> {
  await db.query('INSERT INTO platform_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
    key,
    fallback,
  ]);
  const { rows } = await db.query<{ value: string }>('SELECT value FROM platform_settings WHERE key = $1', [key]);
  return rows[0].value;
}
