/**
 * `allowedOrigins`: which sites may submit an interaction. An entry is
 * - `*`: every origin;
 * - an origin, `https://shop.example.com` or `https://shop.example.com:8443`: the scheme, the
 *   host and the port must all be the Origin's (no port written: the scheme's default);
 * - a host without a scheme, `shop.example.com` or `shop.example.com:8443`: that host over
 *   http or https, on any port unless one is written.
 * A host written `*.example.com` (with or without a scheme) matches the subdomains of
 * example.com at any depth, and not example.com itself.
 *
 * Hosts are compared whole, label by label, after the Origin has been parsed as a URL: an
 * allow-list checked as a substring would let `evil-example.com` or `example.com.evil.net`
 * through an entry `example.com`.
 */

interface OriginRule {
  /** null: http or https. */
  scheme: string | null;
  host: string;
  /** The host's subdomains rather than the host. */
  subdomains: boolean;
  /** null: any port. */
  port: string | null;
}

const DEFAULT_PORTS = new Map([
  ['http', '80'],
  ['https', '443'],
  ['ws', '80'],
  ['wss', '443'],
]);
const defaultPort = (scheme: string) => DEFAULT_PORTS.get(scheme) ?? '';

const ENTRY = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\*\.)?([^:/?#@\s[\]*]+|\[[0-9a-f:.]+\])(?::(\d{1,5}))?\/*$/;

/** The rule an entry states, `any` for `*`, or undefined when it can match no origin. */
export function parseOriginEntry(entry: string): OriginRule | 'any' | undefined {
  const text = entry.trim().toLowerCase();
  if (text === '*') return 'any';
  const m = ENTRY.exec(text);
  if (!m) return undefined;
  const [, scheme, wildcard, rawHost, port] = m;
  if (port !== undefined && Number(port) > 65535) return undefined;
  let host: string;
  try {
    // The URL parser writes a host as an Origin's host is written (IDN in punycode, IPv6 in
    // brackets), so both sides are compared in one form.
    host = new URL(`http://${rawHost}`).hostname;
  } catch {
    return undefined;
  }
  if (host === '') return undefined;
  return { scheme: scheme ?? null, host, subdomains: wildcard !== undefined, port: port ?? null };
}

interface Origin {
  scheme: string;
  host: string;
  /** The port, the scheme's default when the Origin has none. */
  port: string;
}

/** An Origin header as a browser sends it (`scheme://host[:port]`), or undefined (e.g. `null`). */
function parseOrigin(origin: string): Origin | undefined {
  let url: URL;
  try {
    url = new URL(origin.trim().toLowerCase());
  } catch {
    return undefined;
  }
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '' && url.pathname !== '/')) {
    return undefined;
  }
  if (url.hostname === '') return undefined;
  const scheme = url.protocol.slice(0, -1);
  return { scheme, host: url.hostname, port: url.port || defaultPort(scheme) };
}

function matches(rule: OriginRule, o: Origin): boolean {
  if (rule.scheme === null ? o.scheme !== 'http' && o.scheme !== 'https' : rule.scheme !== o.scheme) return false;
  if (rule.subdomains ? !o.host.endsWith(`.${rule.host}`) : o.host !== rule.host) return false;
  if (rule.port !== null) return rule.port === o.port;
  // An origin written without a port is at its scheme's default; a host alone takes any port.
  return rule.scheme === null || o.port === defaultPort(rule.scheme);
}

/** Whether a submit with this Origin header may go on: no entries, or one that matches it. */
export function originAllowed(allowed: string[], origin: string | undefined): boolean {
  if (allowed.length === 0) return true;
  const rules = allowed.map(parseOriginEntry);
  if (rules.includes('any')) return true;
  const o = origin === undefined ? undefined : parseOrigin(origin);
  if (!o) return false;
  return rules.some((rule) => rule !== undefined && rule !== 'any' && matches(rule, o));
}

/** The index of the first entry that can match no origin, or -1. */
export function unmatchableOrigin(allowed: readonly string[]): number {
  return allowed.findIndex((entry) => parseOriginEntry(entry) === undefined);
}
