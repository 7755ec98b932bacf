/**
 * Resolved admin keys, by the SHA-256 hash of the key, in process memory: a request with a
 * known key costs no database read. A revocation drops the key at once in the process that
 * made it, and in every other through LISTEN/NOTIFY (collections.service.ts); entries also
 * expire after AUTH_CACHE_TTL_MS, the safety net for a notification lost while a listener
 * reconnects (the whole cache is dropped on reconnect as well). Unknown keys are cached too
 * (null), so repeating a wrong key does not repeat the read.
 */
import type { Principal } from '../../platform/auth.ts';

interface Entry {
  principal: Principal | null;
  until: number;
}

export class CredentialCache {
  private readonly entries = new Map<string, Entry>();
  /** Bumped on every invalidation: a read that started before one must not fill the cache. */
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  /** undefined: not cached; null: cached as not valid. */
  get(keyHash: string, now = Date.now()): Principal | null | undefined {
    const e = this.entries.get(keyHash);
    if (!e) return undefined;
    if (e.until <= now) {
      this.entries.delete(keyHash);
      return undefined;
    }
    return e.principal;
  }

  /** A token to pass to `set`, taken before reading the database. */
  token(): number {
    return this.generation;
  }

  set(keyHash: string, principal: Principal | null, token: number, now = Date.now()): void {
    if (this.ttlMs <= 0 || token !== this.generation) return;
    // Many distinct keys (a guesser's) would grow it without bound; starting afresh is cheap.
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(keyHash, { principal, until: now + this.ttlMs });
  }

  /**
   * Drops the key with this id. Notifications name the key by id, not by its hash, so that
   * nothing derived from a secret travels on the channel; revocations are rare, and a walk
   * over at most `maxEntries` entries is cheap next to them.
   */
  dropKey(keyId: string): void {
    this.generation++;
    for (const [hash, e] of this.entries) {
      if (e.principal?.kind === 'admin' && e.principal.keyId === keyId) this.entries.delete(hash);
    }
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
