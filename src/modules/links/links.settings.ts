/** The links module's settings: codes, the redirect cache, the click buffer, GeoIP. */
import type { TrustedProxies } from '../../platform/client-address.ts';
import type { PlatformSettings } from '../../platform/module.ts';
import { boolFrom, type Env, intFrom } from '../../platform/settings.ts';

export interface LinksSettings {
  codeLength: number;
  cacheTtlMs: number;
  cacheMaxEntries: number;
  clickFlushMs: number;
  clickBatchSize: number;
  clickBufferMax: number;
  /** How often the click events noted while no worker listened are looked for (click-events.ts). */
  clickEventsPollMs: number;
  geoipDb: string | undefined;
  /** Password attempts per link and visitor per window (password-protected links). */
  passwordAttempts: number;
  passwordWindowMs: number;
  /** TRUSTED_PROXIES (a platform setting): peers whose X-Forwarded-For names the client. */
  trustedProxies: TrustedProxies;
  /** LINK_DOMAINS_MAX: custom domains a collection may register (domains.service.ts). */
  domainsMax: number;
  /** LINK_DOMAIN_CLAIM_TTL_MS: how long an unverified registration keeps other collections out. */
  domainClaimTtlMs: number;
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: the HTTP check of a domain may reach private addresses. */
  allowPrivateNetworks: boolean;
  /**
   * CLICKS_RETENTION_DAYS: clicks older than this many days are removed by whole months (their
   * partition dropped) by the `links.maintainPartitions` system schedule; 0, the default, keeps
   * every click (docs/operations.md "Tables that age out").
   */
  clicksRetentionDays: number;
}

export function linksSettings(env: Env, platform: Pick<PlatformSettings, 'trustedProxies'>): LinksSettings {
  return {
    codeLength: intFrom(env, 'LINK_CODE_LENGTH', 7, 5, 32),
    cacheTtlMs: intFrom(env, 'LINK_CACHE_TTL_MS', 60_000, 0, 3_600_000),
    cacheMaxEntries: intFrom(env, 'LINK_CACHE_MAX_ENTRIES', 100_000, 1, 10_000_000),
    clickFlushMs: intFrom(env, 'CLICK_FLUSH_MS', 100, 1, 60_000),
    clickBatchSize: intFrom(env, 'CLICK_BATCH_SIZE', 2000, 1, 10_000),
    clickBufferMax: intFrom(env, 'CLICK_BUFFER_MAX', 100_000, 1, 10_000_000),
    clickEventsPollMs: intFrom(env, 'CLICK_EVENTS_POLL_MS', 5000, 10, 3_600_000),
    geoipDb: env.GEOIP_DB || undefined,
    passwordAttempts: intFrom(env, 'LINK_PASSWORD_ATTEMPTS', 10, 1, 10_000),
    passwordWindowMs: intFrom(env, 'LINK_PASSWORD_WINDOW_MS', 900_000, 1000, 86_400_000),
    trustedProxies: platform.trustedProxies,
    domainsMax: intFrom(env, 'LINK_DOMAINS_MAX', 50, 0, 10_000),
    domainClaimTtlMs: intFrom(env, 'LINK_DOMAIN_CLAIM_TTL_MS', 7 * 86_400_000, 0, 365 * 86_400_000),
    allowPrivateNetworks: boolFrom(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    clicksRetentionDays: intFrom(env, 'CLICKS_RETENTION_DAYS', 0, 0, 365_000),
  };
}
