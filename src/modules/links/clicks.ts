/**
 * Click capture, off the response path. The redirect handler only copies a few request
 * fields into a buffer; parsing the user agent, the GeoIP lookup, the database writes and
 * the `link.clicked` events happen in batches a moment later (CLICK_FLUSH_MS, or sooner when
 * CLICK_BATCH_SIZE clicks are waiting). A batch is one transaction: clicks, counters and
 * events are stored together or not at all. Clicks still buffered when the process is
 * stopped gracefully are flushed on close; a crash loses at most one flush interval's clicks.
 */
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { type CityResponse, Reader } from 'maxmind';
import type { NewClick } from './links.repository.ts';
import { parseAgent } from './user-agent.ts';

/** What the redirect handler copies from the request. */
export interface RawClick {
  collectionId: string;
  linkId: string;
  code: string;
  destinationUrl: string;
  at: Date;
  ip: string;
  userAgent: string;
  referer: string;
  /** From a trusted proxy's geo headers; empty when untrusted or absent. */
  proxyCountry: string;
  proxyCity: string;
  /** The link's custom domain (its events' short_url); null or absent: the deployment's own. */
  domain?: string | null;
  /** What led to the click: `link` (the short address followed; absent: the same), `qr` (its QR code scanned, qr.ts). */
  trigger?: string;
  /** The click id appended to the destination (attribution.ts), else null or absent. */
  clickId?: string | null;
  /** The subdivision (ISO 3166-2 code, or as the proxy names it) from a trusted proxy's header. */
  proxyRegion?: string;
  /** The short address's query string, without `?` ('' when none): the UTM parameters are read from it. */
  query?: string;
  /** The way of the link taken (routing.ts, `Target.route`); absent: `destination`. */
  route?: string;
}

/** The device type of a user agent: `bot` for crawlers, previewers and HTTP libraries (user-agent.ts). */
export const deviceType = (userAgent: string): string => parseAgent(userAgent).device;

interface Geo {
  country: string;
  region: string;
  city: string;
}
const NO_GEO: Geo = { country: '', region: '', city: '' };

/** A GeoLite2/GeoIP2 City (or Country) database, read once into memory. */
export class GeoIp {
  private constructor(private readonly reader: Reader<CityResponse>) {}

  static async open(path: string): Promise<GeoIp> {
    return new GeoIp(new Reader<CityResponse>(await readFile(path)));
  }

  lookup(ip: string): Geo {
    if (isIP(ip) === 0) return NO_GEO;
    try {
      const r = this.reader.get(ip);
      return {
        country: r?.country?.iso_code ?? '',
        region: r?.subdivisions?.[0]?.iso_code ?? '',
        city: r?.city?.names?.en ?? '',
      };
    } catch {
      return NO_GEO;
    }
  }
}

const UTM = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content'] as const;
const UTM_MAX = 200;

/** The five UTM parameters of a query string ('' for each one absent). */
export function utmOf(query: string): Record<(typeof UTM)[number], string> {
  const utm = { utm_source: '', utm_medium: '', utm_campaign: '', utm_term: '', utm_content: '' };
  if (!query.includes('utm_')) return utm;
  const params = new URLSearchParams(query);
  // Decoded from the address: a %00 would be a NUL, which PostgreSQL refuses in text (and with
  // it the click).
  for (const k of UTM) utm[k] = (params.get(k) ?? '').replaceAll('\u0000', '').slice(0, UTM_MAX);
  return utm;
}

/**
 * A stored click from what the redirect copied: geo, the user agent's device, browser and OS,
 * the UTM parameters. Its `visitor` is filled in by the batch (visitors.ts), which has the day's salt.
 */
export function enrich(raw: RawClick, geo: GeoIp | undefined): NewClick {
  const fromDb = geo ? geo.lookup(raw.ip) : NO_GEO;
  const agent = parseAgent(raw.userAgent);
  const utm = utmOf(raw.query ?? '');
  // The proxy's region and city describe its own country: used only when the database named none.
  const proxyPlace = !fromDb.country;
  return {
    collectionId: raw.collectionId,
    linkId: raw.linkId,
    clickedAt: raw.at,
    ipAddress: raw.ip,
    userAgent: raw.userAgent.slice(0, 1000),
    referer: raw.referer.slice(0, 2000),
    country: fromDb.country || raw.proxyCountry,
    city: fromDb.city || (proxyPlace ? raw.proxyCity : ''),
    region: fromDb.region || (proxyPlace ? (raw.proxyRegion ?? '') : ''),
    deviceType: agent.device,
    browser: agent.browser,
    os: agent.os,
    utmSource: utm.utm_source,
    utmMedium: utm.utm_medium,
    utmCampaign: utm.utm_campaign,
    utmTerm: utm.utm_term,
    utmContent: utm.utm_content,
    trigger: raw.trigger ?? 'link',
    clickId: raw.clickId ?? null,
    route: raw.route ?? 'destination',
    visitor: '',
  };
}
