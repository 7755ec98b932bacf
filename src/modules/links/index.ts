/**
 * Links: short addresses of a collection that redirect to a destination.
 * - link: `code` → `destinationUrl`, optional `expiresAt`; `shortUrl` = PUBLIC_BASE_URL/l/{code},
 *   or https://{domain}/{code} for a link on a custom domain.
 * - domain: a collection's own host name for its links, verified (DNS TXT or HTTP token)
 *   before use; codes are unique per domain (domains.service.ts).
 * - redirect: `GET /l/{code}` (and `GET /{code}` on a custom domain): the request's Host and the
 *   code → 302 (404 unknown or deleted, 410 expired), served from an in-process cache dropped on
 *   change in every process (LISTEN/NOTIFY `links_changed`).
 * - QR code: SVG or PNG of a link's address marked `?qr=1`, so a scan is a click with trigger
 *   `qr` (qr.ts).
 * - attribution: a link with `trackConversions` gets a click id (`pl_cid`) appended to its
 *   destination; interaction events carrying it are that link's conversions (attribution.ts).
 * - click: one visit, captured off the response path (ip via TRUSTED_PROXIES, user agent,
 *   referer, country/city via GEOIP_DB or trusted proxy headers, device type), stored in
 *   batches with the link's counter and a `link.clicked` event.
 * - routing: per-link rules (OS, device, country, language), A/B variants, the query string
 *   passed on, an expired link's fallback, a password (routing.ts, password-page.ts).
 * - bulk: up to 1,000 links per request, CSV export, CSV import as the `links.import` job.
 * - events: `link.created|updated|deleted` and `link.clicks.milestone`, published to the
 *   webhooks outbox in the transaction of the change; `link.clicked` noted by the click batch
 *   (one row per batch and subscribed collection) and published by processes that run jobs
 *   (click-events.ts), off the redirect's path.
 * - analytics: totals (clicks, uniques), series and breakdowns of a link (from its clicks) or of
 *   the collection (from the hourly rollup the click batch keeps, click-rollup.ts); bots apart;
 *   a visitor is a salted daily hash (visitors.ts). CSV export of clicks, streamed.
 */
import { defineModule, EVERY_ROLE, WORKING } from '../../platform/module.ts';
import { webhooksModule } from '../webhooks/index.ts';
import { attributionRoutes } from './attribution.routes.ts';
import { ClickEventPublisher } from './click-events.ts';
import { ClickRecorder } from './click-recorder.ts';
import { defaultDomainChecks } from './domains.checks.ts';
import { domainsRoutes } from './domains.routes.ts';
import { DomainsService } from './domains.service.ts';
import { bulkRoutes } from './links.bulk.routes.ts';
import { linkEvents, shortUrl } from './links.events.ts';
import { importTask } from './links.import.ts';
import { linksRoutes } from './links.routes.ts';
import { LinksService } from './links.service.ts';
import { linksSettings } from './links.settings.ts';
import { qrRoutes } from './qr.ts';
import { redirectRoute } from './redirect.routes.ts';

export { ClickRecorder } from './click-recorder.ts';
export { deviceType } from './clicks.ts';
export type { DomainChecks } from './domains.checks.ts';
export { defaultDomainChecks } from './domains.checks.ts';
export { RedirectCache } from './links.cache.ts';
export type { EventPublisher } from './links.events.ts';
export { LinksService } from './links.service.ts';
export { type LinksSettings, linksSettings } from './links.settings.ts';

export const linksModule = defineModule({
  name: 'links',
  needs: [webhooksModule],
  settings: linksSettings,
  tables: {
    owns: [
      'links',
      'link_codes',
      'link_clicks',
      // link_clicks' partition for times no month covers (0912); the monthly ones are made and
      // dropped by the upkeep (click-partitions.ts).
      'link_clicks_default',
      'link_click_events',
      'link_click_rollup',
      // The ranked dims' clicks per month (0650): the referer URL breakdown's threshold reads.
      'link_click_value_months',
      'link_visitor_days',
      'link_visitor_salts',
      'link_domains',
      'link_domain_codes',
    ],
    // Conversions count the interaction events that carry a click id (attribution.ts).
    reads: ['collections', 'interaction_events'],
  },
  create: ({ db, log, publicBaseUrl, metrics, analytics }, settings, deps) => {
    const short = (code: string, domain: string | null) => shortUrl(publicBaseUrl, code, domain);
    const recorder = new ClickRecorder(db, settings, log, deps.webhooks, short);
    // Read when scraped: the redirect itself does nothing more for the metrics.
    metrics.gauge({
      name: 'link_click_buffer_size',
      help: "Clicks in this process's buffer, not yet stored (CLICK_BUFFER_MAX at most)",
      collect: (g) => g.set(recorder.counts.buffered),
    });
    metrics.countedElsewhere({
      name: 'link_clicks_dropped_total',
      help: 'Clicks this process dropped because its buffer was full (the database not keeping up)',
      read: () => recorder.counts.dropped,
    });
    const clickEvents = new ClickEventPublisher(db, deps.webhooks, log, settings.clickEventsPollMs, short);
    const domains = new DomainsService(
      db,
      {
        domainsMax: settings.domainsMax,
        claimTtlMs: settings.domainClaimTtlMs,
        cacheTtlMs: settings.cacheTtlMs,
        cacheMaxEntries: settings.cacheMaxEntries,
      },
      publicBaseUrl,
      defaultDomainChecks({ allowPrivateNetworks: settings.allowPrivateNetworks }),
    );
    return new LinksService(db, settings, publicBaseUrl, deps.webhooks, recorder, clickEvents, domains, analytics);
  },
  routes: (service) => [
    ...linksRoutes(service),
    ...bulkRoutes(service),
    ...domainsRoutes(service.domains),
    ...qrRoutes(service),
    ...attributionRoutes(service),
  ],
  plugin: redirectRoute,
  tasks: (service) => [importTask(service)],
  events: linkEvents,
  housekeeping: (service) => [
    {
      name: 'links.forgetVisitors',
      cron: '7 * * * *',
      description:
        'Deletes the visitor salts and the visitors seen of days before yesterday (UTC): their hashes can no longer be recomputed',
      run: () => service.analytics.forgetPastVisitors(),
    },
    service.partitions.housekeeping(),
  ],
  // Every role: the redirect cache follows other processes' changes, and the last buffered
  // clicks are stored on stop (after the requests still running have finished). Processes that
  // run jobs publish the click events the batches note: stopped after the recorder's last batch
  // (the pieces stop in reverse order).
  background: (service) => [
    { roles: EVERY_ROLE, start: () => service.redirects.changes.start(), stop: () => service.redirects.changes.stop() },
    { roles: WORKING, start: () => service.clickEvents.start(), stop: () => service.clickEvents.stop() },
    { roles: EVERY_ROLE, start: () => service.clickRecorder.start(), stop: () => service.clickRecorder.stop() },
  ],
});
