/**
 * The redirect cache: code → where to send the visitor, in process memory, so a redirect
 * costs no database round trip. Entries are dropped when their link changes (directly in
 * this process, and through LISTEN/NOTIFY in every other), and expire after a short TTL as
 * a safety net for a notification lost while a listener reconnects. Unknown codes are cached
 * too (negative entries), so a flood of bad codes does not become a flood of queries.
 */
export interface CachedLink {
  collectionId: string;
  linkId: string;
  code: string;
  destinationUrl: string;
  /** epoch ms, or null for never */
  expiresAt: number | null;
}

interface Entry {
  value: CachedLink | null;
  until: number;
}

export class RedirectCache {
  private readonly entries = new Map<string, Entry>();
  /** Bumped on every invalidation: a read that started before one must not fill the cache. */
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** undefined: not cached; null: cached as unknown/deleted. */
  get(code: string, now = Date.now()): CachedLink | null | undefined {
    const e = this.entries.get(code);
    if (!e) return undefined;
    if (e.until <= now) {
      this.entries.delete(code);
      return undefined;
    }
    return e.value;
  }

  /** A token to pass to `set`, taken before reading the database. */
  token(): number {
    return this.generation;
  }

  set(code: string, value: CachedLink | null, token: number, now = Date.now()): void {
    if (this.ttlMs <= 0 || token !== this.generation) return;
    if (this.entries.size >= this.maxEntries) {
      // Evict the oldest insertion (Map keeps insertion order): cheap, and good enough here.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(code, { value, until: now + this.ttlMs });
  }

  invalidate(code: string): void {
    this.generation++;
    this.entries.delete(code);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
