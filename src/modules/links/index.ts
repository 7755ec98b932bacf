/**
 * Links: short addresses of a collection that redirect to a destination.
 * - link: `code` → `destinationUrl`, optional `expiresAt`; `shortUrl` = PUBLIC_BASE_URL/l/{code}.
 * - redirect: `GET /l/{code}`: 302 (404 unknown or deleted, 410 expired), served from an
 *   in-process cache dropped on change in every process (LISTEN/NOTIFY `links_changed`).
 * - click: one visit, captured off the response path (ip via TRUSTED_PROXIES, user agent,
 *   referer, country/city via GEOIP_DB or trusted proxy headers, device type), stored in
 *   batches with the link's counter and a `link.clicked` event.
 * - events: `link.created|updated|deleted|clicked`, published to the webhooks outbox in the
 *   transaction of the change.
 */
export { clientAddress, deviceType, parseTrustedProxies, proxyGeo } from './clicks.ts';
export { RedirectCache } from './links.cache.ts';
export { linksRoutes } from './links.routes.ts';
export { type EventPublisher, LinksService, linksSettings } from './links.service.ts';
