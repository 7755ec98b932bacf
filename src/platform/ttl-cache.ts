/**
 * A process-memory cache in front of the database, for answers other processes may change: the
 * redirect's code → link (links) and a key's hash → principal (collections). One set of rules
 * for both:
 * - entries expire after `ttlMs` (0: nothing is kept), the safety net for a change notification
 *   lost while a LISTEN connection reconnects (owners also `clear()` on reconnect);
 * - "unknown" answers are cached too (the owner stores null), so repeating a bad code or key does
 *   not repeat the read;
 * - a read that started before an invalidation must not fill the cache with what it read: take
 *   `token()` before reading and pass it to `set`, which ignores it once anything was dropped;
 * - at `maxEntries` the oldest insertion goes (a Map keeps insertion order), so a flood of
 *   distinct keys costs one eviction per insert, never a pause.
 */
interface Entry<V> {
  value: V;
  until: number;
}

export class TtlCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  /** Bumped on every invalidation: a read that started before one must not fill the cache. */
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** undefined: not cached (or expired). */
  get(key: K, now = Date.now()): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** A token to pass to `set`, taken before reading the database. */
  token(): number {
    return this.generation;
  }

  set(key: K, value: V, token: number, now = Date.now()): void {
    if (this.ttlMs <= 0 || token !== this.generation) return;
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, until: now + this.ttlMs });
  }

  /** Drops one key. */
  invalidate(key: K): void {
    this.generation++;
    this.entries.delete(key);
  }

  /** Drops every entry whose value matches (a walk: for rare invalidations by something else than the key). */
  invalidateWhere(matches: (value: V) => boolean): void {
    this.generation++;
    for (const [key, e] of this.entries) if (matches(e.value)) this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
