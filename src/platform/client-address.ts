/**
 * Who the client is, behind the proxies the deployment trusts (TRUSTED_PROXIES, parsed once by
 * src/config.ts): the address rate limits count by and clicks record, and the geo headers a
 * trusted CDN or load balancer adds. An HTTP concern of the platform, not of one module.
 */
import { BlockList, isIP } from 'node:net';

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

/** Country, region and city as set by common CDNs and load balancers, when the peer is trusted. */
export function proxyGeo(headers: Record<string, string | string[] | undefined>): {
  country: string;
  region: string;
  city: string;
} {
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
  // The subdivision: an ISO 3166-2 code (without the country) from most, a name from some.
  const region = [
    'x-vercel-ip-country-region',
    'cf-region-code',
    'cloudfront-viewer-country-region',
    'x-appengine-region',
    'x-region',
  ]
    .map((h) => first(headers[h]).trim())
    .find((v) => v.length > 0 && v !== '?');
  return { country: country ?? '', region: (region ?? '').slice(0, 100), city: (city ?? '').slice(0, 100) };
}
