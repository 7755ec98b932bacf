/**
 * The SSRF guard. A receiver address is chosen by a tenant, so the service must never be
 * turned into a client of its own network: every address an attempt would connect to is
 * checked after DNS resolution (a hostname is only a pointer to an address, and it may
 * point at 127.0.0.1 or at the cloud metadata service), on every attempt.
 *
 * Only globally routable unicast is allowed: IPv4 outside the special-purpose registry, and
 * IPv6 inside 2000::/3 minus its special ranges. IPv4 embedded in IPv6 (mapped, compatible,
 * NAT64, 6to4) is judged by the IPv4 address it carries.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/** [first address as a number, prefix length] */
const V4_BLOCKED: [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

const V4_RANGES = V4_BLOCKED.map(([base, bits]) => {
  const size = 2 ** (32 - bits);
  const start = v4ToInt(base);
  return { start, end: start + size - 1 };
});

function v4Blocked(n: number): boolean {
  return V4_RANGES.some((r) => n >= r.start && n <= r.end);
}

/** Eight 16-bit groups of an IPv6 address (handles `::` and a trailing dotted IPv4). */
function v6Groups(ip: string): number[] {
  let text = ip.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const n = v4ToInt(dotted[1]);
    text = `${text.slice(0, -dotted[1].length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
  const groups = tail !== undefined ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return groups.map((g) => Number.parseInt(g, 16));
}

function v6Reason(ip: string): string | undefined {
  const g = v6Groups(ip);
  const embeddedV4 = (hi: number, lo: number) => hi * 65536 + lo;
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeros(8)) return 'unspecified';
  if (zeros(7) && g[7] === 1) return 'loopback';
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated): judged by the IPv4 inside.
  if (zeros(5) && (g[5] === 0xffff || g[5] === 0)) {
    const reason = v4Reason(embeddedV4(g[6], g[7]));
    return reason ? `IPv4-embedded ${reason}` : g[5] === 0 ? 'IPv4-compatible (deprecated)' : undefined;
  }
  // NAT64 64:ff9b::/96
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const reason = v4Reason(embeddedV4(g[6], g[7]));
    return reason ? `NAT64 ${reason}` : undefined;
  }
  // 6to4 2002::/16 carries an IPv4 address in groups 1-2.
  if (g[0] === 0x2002) {
    const reason = v4Reason(embeddedV4(g[1], g[2]));
    return reason ? `6to4 ${reason}` : undefined;
  }
  if ((g[0] & 0xe000) !== 0x2000) {
    if ((g[0] & 0xfe00) === 0xfc00) return 'unique-local';
    if ((g[0] & 0xffc0) === 0xfe80) return 'link-local';
    if ((g[0] & 0xffc0) === 0xfec0) return 'site-local';
    if ((g[0] & 0xff00) === 0xff00) return 'multicast';
    return 'reserved';
  }
  if (g[0] === 0x2001 && g[1] < 0x200) return 'IETF protocol assignment (Teredo, benchmarking, ORCHID)';
  if (g[0] === 0x2001 && g[1] === 0xdb8) return 'documentation';
  if (g[0] === 0x3fff && g[1] < 0x1000) return 'documentation';
  return undefined;
}

function v4Reason(n: number): string | undefined {
  if (!v4Blocked(n)) return undefined;
  if (n >>> 24 === 127) return 'loopback';
  if (n >>> 16 === 0xa9fe) return 'link-local';
  if (n >>> 24 === 10 || n >>> 20 === 0xac1 || n >>> 16 === 0xc0a8) return 'private';
  if (n >>> 28 === 0xe) return 'multicast';
  return 'reserved';
}

/** Why an address may not be connected to, or undefined when it is public. */
export function forbiddenAddressReason(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return v4Reason(v4ToInt(bare));
  if (family === 6) return v6Reason(bare);
  return 'not an IP address';
}

export class RefusedAddressError extends Error {
  readonly code = 'EADDRREFUSED_BY_POLICY';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(
      `refused: ${host} resolves to ${address} (${reason}); private networks are not allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows them, for development)`,
    );
  }
}

/**
 * A `lookup` for net/tls connect that resolves as usual, then refuses the connection when
 * any resolved address is not public. Refusing on any (not all) keeps a hostname with one
 * public and one private address from being steered to the private one.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      if (!allowPrivate) {
        for (const a of addresses) {
          const reason = forbiddenAddressReason(a.address);
          if (reason) return callback(new RefusedAddressError(hostname, a.address, reason));
        }
      }
      if (options?.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
      callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}

/**
 * The check an address literal needs before connecting: net.connect skips `lookup` for an
 * IP literal, so a URL such as http://[::1]/ or http://10.0.0.1/ is judged here.
 */
export function literalHostReason(hostname: string): { address: string; reason: string } | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) === 0) return undefined;
  const reason = forbiddenAddressReason(bare);
  return reason ? { address: bare, reason } : undefined;
}
