/**
 * The redirect cache: code → where to send the visitor (platform/ttl-cache.ts), so a redirect
 * costs no database round trip. Entries are dropped when their link changes (directly in this
 * process, and through LISTEN/NOTIFY in every other); unknown codes are cached as null, so a
 * flood of bad codes does not become a flood of queries.
 */
import { TtlCache } from '../../platform/ttl-cache.ts';
import type { Routing } from './routing.ts';

export interface CachedLink {
  collectionId: string;
  linkId: string;
  code: string;
  destinationUrl: string;
  /** epoch ms, or null for never */
  expiresAt: number | null;
  /** Rules, variants, query passing, fallback and password, compiled once (routing.ts). */
  routing: Routing;
}

/** undefined from `get`: not cached; null: cached as unknown/deleted. */
export class RedirectCache extends TtlCache<string, CachedLink | null> {}
