/**
 * Resolved credentials, by the SHA-256 hash of the key (platform/ttl-cache.ts): a request with a
 * known key costs no database read. A revocation drops the key at once in the process that made
 * it, and in every other through LISTEN/NOTIFY (collections.service.ts); entries also expire
 * after AUTH_CACHE_TTL_MS. Unknown keys are cached too (null), so repeating a wrong key does not
 * repeat the read.
 */
import type { Principal } from '../../platform/auth.ts';
import { TtlCache } from '../../platform/ttl-cache.ts';

/** Many distinct keys (a guesser's) must not grow it without bound. */
const MAX_ENTRIES = 10_000;

export class CredentialCache extends TtlCache<string, Principal | null> {
  constructor(ttlMs: number, maxEntries = MAX_ENTRIES) {
    super(ttlMs, maxEntries);
  }

  /**
   * Drops the key with this id. Notifications name the key by id, not by its hash, so that
   * nothing derived from a secret travels on the channel; revocations are rare, and a walk
   * over at most MAX_ENTRIES entries is cheap next to them.
   */
  dropKey(keyId: string): void {
    this.invalidateWhere((p) => p?.kind === 'admin' && p.keyId === keyId);
  }
}
