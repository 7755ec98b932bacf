/**
 * Visitors without their addresses. A click's `visitor` is HMAC-SHA-256 of (address, user agent)
 * keyed with a salt of the click's UTC day: the same person on the same day is the same visitor,
 * so uniques per day are countable; on another day, another hash, so visits cannot be linked
 * across days. Salts are random (not derived from a server secret), stored in
 * `link_visitor_salts` so every process of the deployment hashes alike, made by the first batch
 * of a day, and deleted by housekeeping once the next day has begun: from then on nobody, not
 * even whoever holds the database, can test an address against that day's hashes. The raw
 * address stays in the click row (as before, for the click list), so the hash keeps nothing
 * longer than the click log does.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Queryable } from '../../db/index.ts';
import { daySalt } from './analytics.repository.ts';
import type { NewClick } from './links.repository.ts';

/** The UTC day of a time, `YYYY-MM-DD`. */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/** 16 bytes of the HMAC, base64url (22 characters): collisions among a day's visitors are out of reach. */
export function visitorHash(salt: Buffer, ip: string, userAgent: string): string {
  return createHmac('sha256', salt)
    .update(ip)
    .update('\n')
    .update(userAgent)
    .digest()
    .subarray(0, 16)
    .toString('base64url');
}

/** The salts a process has read, a few days' worth (a batch needs its clicks' days). */
const SALTS_KEPT = 8;

export class VisitorHasher {
  private readonly salts = new Map<string, Buffer>();

  /**
   * Fills in each click's `visitor`. A day's salt not read yet costs one statement (once a day
   * per process), in its own transaction: a salt cached from a batch that then rolled back would
   * differ from the one another process stores.
   */
  async fill(db: Queryable, clicks: NewClick[]): Promise<void> {
    // A batch often holds several clicks of one visitor (a reload, a bot, a link opened twice):
    // each (day, address, user agent) is hashed once a batch. An HMAC costs about 2 µs.
    const known = new Map<string, string>();
    for (const c of clicks) {
      const day = utcDay(c.clickedAt);
      let salt = this.salts.get(day);
      if (!salt) {
        salt = await daySalt(db, day, randomBytes(32));
        if (this.salts.size >= SALTS_KEPT) this.salts.delete(this.salts.keys().next().value as string);
        this.salts.set(day, salt);
      }
      const key = `${day}\n${c.ipAddress}\n${c.userAgent}`;
      let visitor = known.get(key);
      if (visitor === undefined) {
        visitor = visitorHash(salt, c.ipAddress, c.userAgent);
        known.set(key, visitor);
      }
      c.visitor = visitor;
    }
  }

  /** Forgets the salts read (housekeeping deleted old ones; a test starts afresh). */
  clear(): void {
    this.salts.clear();
  }
}
