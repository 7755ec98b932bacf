/**
 * The redirect cache: (domain,) code → where to send the visitor (platform/ttl-cache.ts), so a redirect
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
  /** The custom domain it lives on; null: the deployment's own. */
  domain: string | null;
  /** Whether the redirect appends a click id to the destination (attribution.ts). */
  trackConversions: boolean;
  /** Rules, variants, query passing, fallback and password, compiled once (routing.ts). */
  routing: Routing;
}

/**
 * A link's key in the cache and in change notices: its code on the deployment's own domain (as
 * before domains), `<domain>/<code>` on a custom one (a code has no "/", so keys never clash).
 */
export const cacheKey = (domain: string | null, code: string): string => (domain === null ? code : `${domain}/${code}`);

/** undefined from `get`: not cached; null: cached as unknown/deleted. */
export class RedirectCache extends TtlCache<string, CachedLink | null> {}
