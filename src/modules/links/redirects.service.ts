/**
 * The public redirect's side of the links module: where a code leads on a request's host (a
 * custom domain's own codes, else the deployment's), from this process's cache or one indexed
 * read, and the click capture (queued to the ClickRecorder, click-recorder.ts, which stores
 * them in batches). The admin side (links.service.ts) tells it which cache keys a change
 * made stale; other processes' changes arrive through `changes` (a LISTEN on the links
 * channel, started and stopped by the module's manifest).
 */
import type { Db } from '../../db/index.ts';
import type { TrustedProxies } from '../../platform/client-address.ts';
import { gone, notFound } from '../../platform/errors.ts';
import { Subscription } from '../../platform/subscription.ts';
import { newClickId } from './attribution.ts';
import type { ClickRecorder } from './click-recorder.ts';
import type { RawClick } from './clicks.ts';
import type { DomainsService } from './domains.service.ts';
import { type CachedLink, cacheKey, RedirectCache } from './links.cache.ts';
import * as repo from './links.repository.ts';
import type { LinksSettings } from './links.settings.ts';
import { compileRouting } from './routing.ts';

/**
 * The read-your-writes scope of redirect lookups (db/client.ts, `Db.read`): any link change
 * seen by this process, its own or another's through the notice, keeps the lookups that refill
 * the cache on the primary until a replica has replayed it; else a replica could put the old
 * answer back into the cache.
 */
const REDIRECT_SCOPE = 'links.redirect';

export const isExpired = (link: CachedLink, now = Date.now()) => link.expiresAt !== null && link.expiresAt <= now;

export class Redirects {
  readonly cache: RedirectCache;
  readonly trusted: TrustedProxies;
  /** Other processes' link changes, dropped from the redirect cache (started and stopped by the manifest). */
  readonly changes: Subscription;

  constructor(
    private readonly db: Db,
    settings: LinksSettings,
    /** The collection's own domains: which hosts are custom domains (domains.service.ts). */
    readonly domains: DomainsService,
    /** Stores the redirects' clicks in batches; the manifest starts and stops it. */
    private readonly clickRecorder: ClickRecorder,
  ) {
    this.cache = new RedirectCache(settings.cacheTtlMs, settings.cacheMaxEntries);
    this.trusted = settings.trustedProxies;
    this.changes = new Subscription(
      db,
      repo.LINKS_CHANNEL,
      // A link's cache key (links.cache.ts), or `@<domain>` when a domain was verified or removed.
      (key) => {
        if (key.startsWith('@')) return this.domains.changed(key.slice(1));
        this.db.wrote(REDIRECT_SCOPE);
        this.cache.invalidate(key);
      },
      // Changes made elsewhere while the LISTEN connection was down were never announced.
      () => {
        this.db.wrote(REDIRECT_SCOPE);
        this.cache.clear();
        this.domains.clear();
      },
    );
  }

  /** Drops links' cache keys (links.cache.ts `cacheKey`) from this process's cache, after a change here. */
  invalidate(keys: string[]): void {
    // The entry dropped is read again: not from a replica that may not have the change yet.
    this.db.wrote(REDIRECT_SCOPE);
    for (const k of keys) this.cache.invalidate(k);
  }

  /**
   * Where a code leads on the request's host: a verified custom domain's own codes, else the
   * deployment's (any other host, as before domains existed). From the cache, else one indexed
   * read (and, the first time a host is seen, one read of whether it is a custom domain).
   * Throws 404 / 410.
   */
  async resolve(code: string, host = '', now = Date.now()): Promise<CachedLink> {
    let custom = this.domains.cachedHost(host, now);
    if (custom === undefined) custom = await this.domains.lookupHost(host, now);
    const domain = custom ? host : null;
    const key = cacheKey(domain, code);
    let link = this.cache.get(key, now);
    if (link === undefined) {
      const token = this.cache.token();
      // From a read replica unless a link changed since it last caught up (see `changed`).
      const row = await this.db.read(REDIRECT_SCOPE, (r) => repo.findByCode(r, code, domain));
      link =
        row && !row.deleted_at
          ? {
              collectionId: row.collection_id,
              linkId: row.id,
              code: row.code,
              destinationUrl: row.destination_url,
              expiresAt: row.expires_at ? row.expires_at.getTime() : null,
              domain: row.domain,
              trackConversions: row.track_conversions,
              routing: compileRouting({
                destinationUrl: row.destination_url,
                rules: row.rules,
                variants: row.variants,
                passQuery: row.pass_query,
                expiredUrl: row.expired_url,
                passwordHash: row.password_hash,
              }),
            }
          : null;
      this.cache.set(key, link, token, now);
    }
    if (!link) throw notFound('Link');
    // An expired link with a fallback address is answered by the redirect (isExpired).
    if (isExpired(link, now) && !link.routing.expiredUrl) throw gone('This link has expired');
    return link;
  }

  /** A click id for a visit of a link that tracks conversions (attribution.ts). */
  newClickId(): string {
    return newClickId();
  }

  /** The visitor's country for a rule: GeoIP when configured, else a trusted proxy's header. */
  visitorCountry(ip: string, proxyCountry: string): string {
    return (this.clickRecorder.countryOf(ip) || proxyCountry).toUpperCase();
  }

  /** Queues a click; never waits for the database. */
  recordClick(click: RawClick): void {
    this.clickRecorder.record(click);
  }

  /** Stores every buffered click now, rather than at the recorder's next flush (tests use it). */
  flush(): Promise<void> {
    return this.clickRecorder.flush();
  }
}
