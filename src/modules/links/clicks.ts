/**
 * Click capture, off the response path. The redirect handler only copies a few request
 * fields into a buffer; parsing the user agent, the GeoIP lookup, the database writes and
 * the `link.clicked` events happen in batches a moment later (CLICK_FLUSH_MS, or sooner when
 * CLICK_BATCH_SIZE clicks are waiting). A batch is one transaction: clicks, counters and
 * events are stored together or not at all. Clicks still buffered when the process is
 * stopped gracefully are flushed on close; a crash loses at most one flush interval's clicks.
 */
import { readFile } from 'node:fs/promises';
import { BlockList, isIP } from 'node:net';
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
}

export type TrustedProxies = (address: string) => boolean;

const normalise = (ip: string) => (ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip);

/** TRUSTED_PROXIES: a comma list of addresses and CIDR ranges (IPv4 or IPv6). */
export function parseTrustedProxies(spec: string | undefined): TrustedProxies {
  const list = new BlockList();
  let any = false;
  for (const item of (spec ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [address, bits] = item.split('/');
    const family = isIP(address);
    if (family === 0) throw new Error(`TRUSTED_PROXIES: "${item}" is not an address or CIDR range`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
    any = true;
  }
  if (!any) return () => false;
  return (address) => {
    const a = normalise(address);
    const family = isIP(a);
    return family !== 0 && list.check(a, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/**
 * The client's address: the socket peer, unless that peer is a trusted proxy, in which case
 * X-Forwarded-For is walked from the right past every trusted hop. Entries left of the
 * first untrusted hop are whatever the client wrote, so they are never believed.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies,
): { ip: string; viaTrustedProxy: boolean } {
  let ip = normalise(peer ?? '');
  if (!trusted(ip)) return { ip, viaTrustedProxy: false };
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  while (hops.length > 0 && trusted(ip)) {
    const next = normalise(hops.pop()!);
    if (isIP(next) === 0) break;
    ip = next;
  }
  return { ip, viaTrustedProxy: true };
}

const first = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h) ?? '';

/** Country and city as set by common CDNs and load balancers, when the peer is trusted. */
export function proxyGeo(headers: Record<string, string | string[] | undefined>): { country: string; city: string } {
  const country = [
    'cf-ipcountry',
    'x-vercel-ip-country',
    'cloudfront-viewer-country',
    'x-appengine-country',
    'x-country-code',
  ]
    .map((h) => first(headers[h]).trim().toUpperCase())
    .find((v) => /^[A-Z]{2}$/.test(v) && v !== 'XX' && v !== 'T1' && v !== 'ZZ');
  let city = ['x-vercel-ip-city', 'cf-ipcity', 'cloudfront-viewer-city', 'x-appengine-city', 'x-city']
    .map((h) => first(headers[h]).trim())
    .find((v) => v.length > 0 && v !== '?');
  if (city) {
    try {
      city = decodeURIComponent(city);
    } catch {
      // not percent-encoded: keep as sent
    }
  }
  return { country: country ?? '', city: (city ?? '').slice(0, 100) };
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
  };
}
