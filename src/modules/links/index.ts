/**
 * Links: short addresses of a collection that redirect to a destination.
 * - link: `code` → `destinationUrl`, optional `expiresAt`; `shortUrl` = PUBLIC_BASE_URL/l/{code}.
 * - redirect: `GET /l/{code}`: 302 (404 unknown or deleted, 410 expired), served from an
 *   in-process cache dropped on change in every process (LISTEN/NOTIFY `links_changed`).
 * - click: one visit, captured off the response path (ip via TRUSTED_PROXIES, user agent,
 *   referer, country/city via GEOIP_DB or trusted proxy headers, device type), stored in
 *   batches with the link's counter and a `link.clicked` event.
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
import { ClickEventPublisher } from './click-events.ts';
import { ClickRecorder } from './click-recorder.ts';
import { linkEvents, shortUrl } from './links.events.ts';
import { linksRoutes } from './links.routes.ts';
import { LinksService } from './links.service.ts';
import { linksSettings } from './links.settings.ts';
import { redirectRoute } from './redirect.routes.ts';

export { ClickRecorder } from './click-recorder.ts';
export { deviceType } from './clicks.ts';
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
      'link_click_events',
      'link_click_rollup',
      'link_visitor_days',
      'link_visitor_salts',
    ],
    reads: ['collections'],
  },
  create: ({ db, log, publicBaseUrl }, settings, deps) => {
    const short = (code: string) => shortUrl(publicBaseUrl, code);
    const recorder = new ClickRecorder(db, settings, log, deps.webhooks, short);
    const clickEvents = new ClickEventPublisher(db, deps.webhooks, log, settings.clickEventsPollMs, short);
    return new LinksService(db, settings, publicBaseUrl, deps.webhooks, recorder, clickEvents);
  },
  routes: linksRoutes,
  plugin: redirectRoute,
  events: linkEvents,
  housekeeping: (service) => [
    {
      name: 'links.forgetVisitors',
      cron: '7 * * * *',
      description:
        'Deletes the visitor salts and the visitors seen of days before yesterday (UTC): their hashes can no longer be recomputed',
      run: () => service.analytics.forgetPastVisitors(),
    },
  ],
  // Every role: the redirect cache follows other processes' changes, and the last buffered
  // clicks are stored on stop (after the requests still running have finished). Processes that
  // run jobs publish the click events the batches note: stopped after the recorder's last batch
  // (the pieces stop in reverse order).
  background: (service) => [
    { roles: EVERY_ROLE, start: () => service.changes.start(), stop: () => service.changes.stop() },
    { roles: WORKING, start: () => service.clickEvents.start(), stop: () => service.clickEvents.stop() },
    { roles: EVERY_ROLE, start: () => service.clickRecorder.start(), stop: () => service.clickRecorder.stop() },
  ],
});
