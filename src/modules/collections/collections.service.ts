/**
 * Tenants and their credentials. Admin API keys are 256-bit random secrets shown once and
 * stored only as a SHA-256 hash (a slow hash buys nothing for a key with that much
 * entropy, and lookups stay one indexed read). User tokens are HS256 JWTs signed with a
 * server secret that is generated and persisted on first start when AUTH_SECRET is unset.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import type { Db } from '../../db/index.ts';
import type { Principal } from '../../platform/auth.ts';
import { conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { Subscription } from '../../platform/subscription.ts';
import { CredentialCache } from './collections.cache.ts';
import * as repo from './collections.repository.ts';
import type { CollectionsSettings } from './collections.settings.ts';

const KEY_PREFIX = 'ck_';
const TOKEN_ISSUER = 'collection-platform';

export interface Collection {
  id: string;
  name: string;
  createdAt: string;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

const toCollection = (r: repo.CollectionRow): Collection => ({
  id: r.id,
  name: r.name,
  createdAt: r.created_at.toISOString(),
});
const toApiKey = (r: repo.ApiKeyRow): ApiKey => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  createdAt: r.created_at.toISOString(),
  revokedAt: r.revoked_at ? r.revoked_at.toISOString() : null,
});

/**
 * Zero-set-up runs need a super admin to create the first collection. When SUPER_ADMIN_KEY is
 * unset, one is generated on first start and stored with the platform settings; `generated`
 * tells the caller whether to print it (only the first time). Production sets its own.
 */
export async function generatedSuperAdminKey(db: Db): Promise<{ key: string; generated: boolean }> {
  const candidate = `sa_${randomBytes(24).toString('base64url')}`;
  const key = await repo.settingOrInsert(db, 'generated_super_admin_key', candidate);
  return { key, generated: key === candidate };
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

export class CollectionsService {
  private tokenKey: Uint8Array | undefined;
  /** Recently resolved admin keys, dropped on revocation in every process (collections.cache.ts). */
  readonly keyCache: CredentialCache;
  /** Follows revocations made by other processes (started and stopped by the manifest). */
  readonly revocations: Subscription;

  constructor(
    private readonly db: Db,
    private readonly settings: CollectionsSettings,
  ) {
    this.keyCache = new CredentialCache(settings.authCacheTtlMs);
    this.revocations = new Subscription(
      db,
      repo.KEYS_CHANNEL,
      (keyId) => this.keyCache.dropKey(keyId),
      // Revocations made elsewhere while the LISTEN connection was down were never announced.
      () => this.keyCache.clear(),
    );
  }

  async createCollection(input: { id?: string; name: string }): Promise<Collection> {
    const id = input.id ?? newId('col');
    const row = await repo.insertCollection(this.db, id, input.name);
    if (!row) throw conflict(`A collection with id "${id}" already exists`);
    return toCollection(row);
  }

  async listCollections(limit: number, offset: number): Promise<Collection[]> {
    return (await repo.listCollections(this.db, limit, offset)).map(toCollection);
  }

  collectionExists(collectionId: string): Promise<boolean> {
    return repo.collectionExists(this.db, collectionId);
  }

  async createApiKey(collectionId: string, name: string): Promise<ApiKey & { key: string }> {
    if (!(await repo.collectionExists(this.db, collectionId))) throw notFound('Collection');
    const id = newId('key');
    const key = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    const row = await repo.insertApiKey(this.db, collectionId, {
      id,
      name,
      prefix: key.slice(0, KEY_PREFIX.length + 8),
      keyHash: hashKey(key),
    });
    return { ...toApiKey(row), key };
  }

  async listApiKeys(collectionId: string): Promise<ApiKey[]> {
    return (await repo.listApiKeys(this.db, collectionId)).map(toApiKey);
  }

  /**
   * Revokes a key: refused from now on by this process at once, and by every other process
   * as soon as the notification sent on commit reaches it.
   */
  async revokeApiKey(collectionId: string, id: string): Promise<ApiKey> {
    const row = await this.db.transaction(async (tx) => {
      const revoked = await repo.revokeApiKey(tx, collectionId, id);
      if (revoked) await repo.notifyKeyRevoked(tx, revoked.id);
      return revoked;
    });
    if (!row) throw notFound('API key');
    // Without waiting for our own notification to come back.
    this.keyCache.dropKey(row.id);
    return toApiKey(row);
  }

  async issueUserToken(
    collectionId: string,
    input: { userId: string; contactId?: string; ttlSeconds?: number },
  ): Promise<{ token: string; expiresAt: string }> {
    if (!(await repo.collectionExists(this.db, collectionId))) throw notFound('Collection');
    const ttl = Math.min(
      input.ttlSeconds ?? this.settings.userTokenDefaultTtlSeconds,
      this.settings.userTokenMaxTtlSeconds,
    );
    const exp = Math.floor(Date.now() / 1000) + ttl;
    const token = await new SignJWT({ cid: collectionId, contactId: input.contactId ?? input.userId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(input.userId)
      .setIssuer(TOKEN_ISSUER)
      .setIssuedAt()
      .setExpirationTime(exp)
      .sign(await this.signingKey());
    return { token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /** The credential resolver handed to the auth plugin. */
  resolveCredential = async (credential: string): Promise<Principal | null> => {
    const superKey = this.settings.superAdminKey;
    if (superKey && sameSecret(credential, superKey)) {
      return { kind: 'super', features: new Set(this.settings.superAdminFeatures) };
    }
    if (credential.startsWith(KEY_PREFIX)) return this.resolveApiKey(credential);
    if (credential.split('.').length === 3) return this.resolveUserToken(credential);
    return null;
  };

  private async resolveApiKey(key: string): Promise<Principal | null> {
    const hash = hashKey(key);
    const now = Date.now();
    const cached = this.keyCache.get(hash, now);
    if (cached !== undefined) return cached;
    // Taken before the read: a revocation announced while it runs keeps its answer out of the cache.
    const token = this.keyCache.token();
    const row = await repo.findActiveKeyByHash(this.db, hash);
    const principal: Principal | null = row ? { kind: 'admin', collectionId: row.collection_id, keyId: row.id } : null;
    this.keyCache.set(hash, principal, token, now);
    return principal;
  }

  private async resolveUserToken(token: string): Promise<Principal | null> {
    // Outside the try: a database failure while loading the secret is our fault (5xx), not an
    // invalid token (401).
    const key = await this.signingKey();
    // jose decodes base64url leniently: the unused low bits of the signature's last character
    // are ignored, so four spellings of one token would verify. Only the canonical one does,
    // so that a token's text is unique (a variant is refused and counted as a failure).
    const signature = token.slice(token.lastIndexOf('.') + 1);
    if (Buffer.from(signature, 'base64url').toString('base64url') !== signature) return null;
    try {
      const { payload } = await jwtVerify(token, key, {
        issuer: TOKEN_ISSUER,
        algorithms: ['HS256'],
      });
      const { sub, cid, contactId } = payload;
      if (typeof sub !== 'string' || typeof cid !== 'string') return null;
      return {
        kind: 'user',
        collectionId: cid,
        userId: sub,
        contactId: typeof contactId === 'string' ? contactId : sub,
      };
    } catch {
      return null;
    }
  }

  private async signingKey(): Promise<Uint8Array> {
    if (!this.tokenKey) {
      const secret =
        this.settings.authSecret ??
        (await repo.settingOrInsert(this.db, 'auth_secret', randomBytes(32).toString('base64url')));
      this.tokenKey = new TextEncoder().encode(secret);
    }
    return this.tokenKey;
  }
}
