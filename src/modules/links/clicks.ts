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
import UAParser from 'ua-parser-js';
import type { NewClick } from './links.repository.ts';

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
  /** 'link' (absent: the same), or 'qr' for a visit of the QR code's address (qr.ts). */
  trigger?: string;
  /** The click id appended to the destination (attribution.ts), else null or absent. */
  clickId?: string | null;
}

const BOT = /bot|crawl|spider|slurp|facebookexternalhit|preview|curl|wget|python-requests|httpclient|headless/i;

/** Parsing is regex-heavy and a few user agents make most of the traffic: remember them. */
const deviceCache = new Map<string, string>();
const DEVICE_CACHE_MAX = 2000;

export function deviceType(userAgent: string): string {
  if (!userAgent) return '';
  let type = deviceCache.get(userAgent);
  if (type === undefined) {
    type = BOT.test(userAgent) ? 'bot' : (new UAParser(userAgent).getDevice().type ?? 'desktop');
    if (deviceCache.size >= DEVICE_CACHE_MAX) deviceCache.clear();
    deviceCache.set(userAgent, type);
  }
  return type;
}

/** A GeoLite2/GeoIP2 City (or Country) database, read once into memory. */
export class GeoIp {
  private constructor(private readonly reader: Reader<CityResponse>) {}

  static async open(path: string): Promise<GeoIp> {
    return new GeoIp(new Reader<CityResponse>(await readFile(path)));
  }

  lookup(ip: string): { country: string; city: string } {
    if (isIP(ip) === 0) return { country: '', city: '' };
    try {
      const r = this.reader.get(ip);
      return { country: r?.country?.iso_code ?? '', city: r?.city?.names?.en ?? '' };
    } catch {
      return { country: '', city: '' };
    }
  }
}

export function enrich(raw: RawClick, geo: GeoIp | undefined): NewClick {
  const fromDb = geo ? geo.lookup(raw.ip) : { country: '', city: '' };
  return {
    collectionId: raw.collectionId,
    linkId: raw.linkId,
    clickedAt: raw.at,
    ipAddress: raw.ip,
    userAgent: raw.userAgent.slice(0, 1000),
    referer: raw.referer.slice(0, 2000),
    country: fromDb.country || raw.proxyCountry,
    city: fromDb.city || (fromDb.country ? '' : raw.proxyCity),
    deviceType: deviceType(raw.userAgent),
    trigger: raw.trigger ?? 'link',
    clickId: raw.clickId ?? null,
  };
}
