/**
 * Where one visit of a link goes: the link's rules (first match wins), else its A/B variants
 * (sticky per visitor), else its destination; then the short URL's query string merged in.
 *
 * Everything is compiled once, when the link enters the redirect cache (`compileRouting`):
 * value lists become Sets, destinations are split into base, query and fragment, variant
 * weights become cumulative bounds. A visit then costs Set look-ups and string joins; the user
 * agent, the country and the language are worked out only when a rule asks for them, and user
 * agents and Accept-Language headers (a few make most of the traffic) are remembered.
 */
import { createHash } from 'node:crypto';
import UAParser from 'ua-parser-js';
import { badRequest } from '../../platform/errors.ts';
import { httpUrl } from '../../platform/urls.ts';
import { deviceType } from './clicks.ts';
import type { Rule, Variant } from './routing.schema.ts';

/**
 * Query parameters of the short URL that belong to other features and are never passed on
 * (`qr`: the mark of a visit from a QR code).
 */
export const RESERVED_QUERY: ReadonlySet<string> = new Set(['qr']);

/** A destination split once, so that a visit's query string is merged without parsing it. */
export interface Target {
  url: string;
  /** Up to the query or the fragment. */
  base: string;
  /** Its own query string, without `?`. */
  query: string;
  /** Its fragment with `#`, or empty. */
  hash: string;
  /** Its own query parameters' names: they win over the visit's. */
  keys: ReadonlySet<string>;
  /**
   * Which way of the link it is, stored with each click it takes: `destination`, `rule:<i>` or
   * `variant:<i>` (indexes into the link's rules and variants as they were at the click).
   */
  route: string;
}

interface CompiledRule {
  os?: ReadonlySet<string>;
  device?: ReadonlySet<string>;
  country?: ReadonlySet<string>;
  language?: ReadonlySet<string>;
  target: Target;
}

export interface Routing {
  destination: Target;
  rules: CompiledRule[] | null;
  /** What the rules read, so that a visit works out nothing else. */
  needsAgent: boolean;
  needsCountry: boolean;
  needsLanguage: boolean;
  variants: Target[] | null;
  /** Each variant's cumulative weight: variant i takes rolls below bounds[i]. */
  bounds: number[];
  passQuery: boolean;
  expiredUrl: string | null;
  passwordHash: string | null;
}

/** What a link row holds of its routing. */
export interface RoutingFields {
  destinationUrl: string;
  rules: Rule[] | null;
  variants: Variant[] | null;
  passQuery: boolean;
  expiredUrl: string | null;
  passwordHash: string | null;
}

const NO_KEYS: ReadonlySet<string> = new Set();

export function target(url: string, route = 'destination'): Target {
  const hashAt = url.indexOf('#');
  const hash = hashAt < 0 ? '' : url.slice(hashAt);
  const beforeHash = hashAt < 0 ? url : url.slice(0, hashAt);
  const queryAt = beforeHash.indexOf('?');
  const base = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
  const query = queryAt < 0 ? '' : beforeHash.slice(queryAt + 1);
  return { url, base, query, hash, keys: query ? new Set(new URLSearchParams(query).keys()) : NO_KEYS, route };
}

const setOf = (v: string | string[] | undefined, norm: (s: string) => string) =>
  v === undefined ? undefined : new Set((Array.isArray(v) ? v : [v]).map(norm));
const lower = (s: string) => s.toLowerCase();
const upper = (s: string) => s.toUpperCase();

export function compileRouting(f: RoutingFields): Routing {
  const rules = f.rules?.length
    ? f.rules.map((r, i) => ({
        os: setOf(r.when.os, lower),
        device: setOf(r.when.device, lower),
        country: setOf(r.when.country, upper),
        language: setOf(r.when.language, lower),
        target: target(r.url, `rule:${i}`),
      }))
    : null;
  let sum = 0;
  const bounds = f.variants?.map((v) => (sum += v.weight)) ?? [];
  const variants = f.variants?.length ? f.variants.map((v, i) => target(v.url, `variant:${i}`)) : null;
  return {
    destination: target(f.destinationUrl),
    rules,
    needsAgent: !!rules?.some((r) => r.os || r.device),
    needsCountry: !!rules?.some((r) => r.country),
    needsLanguage: !!rules?.some((r) => r.language),
    variants,
    bounds,
    passQuery: f.passQuery,
    expiredUrl: f.expiredUrl,
    passwordHash: f.passwordHash,
  };
}

// --- the visitor ------------------------------------------------------------------------

/** What a visit tells about its visitor; each asked for only when a rule needs it. */
export interface Visitor {
  /** The raw User-Agent header. */
  userAgent: string;
  /** The raw Accept-Language header. */
  acceptLanguage: string;
  /** ISO 3166-1 alpha-2, upper case, or empty when unknown. */
  country(): string;
  /** The variant key: a first-party cookie's value, else derived from address and user agent. */
  key(): string;
}

export interface Agent {
  /** ios | android | windows | macos | linux | chromeos, or empty. */
  os: string;
  /** mobile | tablet | desktop, or what the click recorder calls it otherwise (bot, smarttv, …). */
  device: string;
}

const OS_NAMES: Record<string, string> = {
  iOS: 'ios',
  Android: 'android',
  Windows: 'windows',
  'Windows Phone': 'windows',
  'Mac OS': 'macos',
  'Chrome OS': 'chromeos',
  'Chromium OS': 'chromeos',
};
const LINUX = new Set([
  'Linux',
  'Ubuntu',
  'Debian',
  'Fedora',
  'Arch',
  'Mint',
  'CentOS',
  'Gentoo',
  'SUSE',
  'openSUSE',
  'Slackware',
  'Mandriva',
  'Kubuntu',
  'Xubuntu',
  'RedHat',
  'Manjaro',
  'elementary OS',
]);

/** Parsing is regex-heavy and a few user agents make most of the traffic: remember them. */
const agents = new Map<string, Agent>();
const languages = new Map<string, string>();
const REMEMBERED_MAX = 2000;

function remember<V>(map: Map<string, V>, key: string, value: V): V {
  if (map.size >= REMEMBERED_MAX) map.clear();
  map.set(key, value);
  return value;
}

/** The OS and device type of a user agent (device as the click recorder parses it: clicks.ts). */
export function agentOf(userAgent: string): Agent {
  const known = agents.get(userAgent);
  if (known) return known;
  if (!userAgent) return { os: '', device: '' };
  const name = new UAParser(userAgent).getOS().name ?? '';
  const os = OS_NAMES[name] ?? (LINUX.has(name) ? 'linux' : '');
  return remember(agents, userAgent, { os, device: deviceType(userAgent) });
}

/**
 * The primary subtag of the visitor's most preferred language (`de-CH;q=0.9, en` → `en`): the
 * highest `q`, the first of equals; `*` and malformed entries are skipped. Empty when none.
 */
export function primaryLanguage(header: string): string {
  if (!header) return '';
  const known = languages.get(header);
  if (known !== undefined) return known;
  let best = '';
  let bestQ = 0;
  for (const entry of header.slice(0, 500).split(',')) {
    const [tag, ...params] = entry.split(';');
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split('=');
      if (k.trim() === 'q') q = Number(v);
    }
    const primary = tag.trim().split('-')[0].toLowerCase();
    if (!LANGUAGE.test(primary) || !(q > bestQ)) continue;
    best = primary;
    bestQ = q;
  }
  return remember(languages, header, best);
}
const LANGUAGE = /^[a-z]{2,3}$/;

// --- choosing ---------------------------------------------------------------------------

/** 32-bit FNV-1a with MurmurHash3's finaliser: fast, and its low bits are well mixed. */
export function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The variant a visitor gets: the same for the same visitor key and link, every time, in every
 * process (no state, no database), and independent between links (the link id is hashed in).
 */
export function variantIndex(bounds: readonly number[], visitorKey: string, linkId: string): number {
  const roll = hash32(`${visitorKey}\u0000${linkId}`) % bounds[bounds.length - 1];
  let i = 0;
  while (bounds[i] <= roll) i++;
  return i;
}

/** The variant key of a visitor without our cookie: address and user agent, hashed. */
export function addressKey(ip: string, userAgent: string): string {
  return createHash('sha256').update(`${ip}\n${userAgent}`).digest('base64url').slice(0, 22);
}

function matches(rule: CompiledRule, agent: Agent | undefined, country: string, language: string): boolean {
  if (rule.os && !rule.os.has(agent?.os ?? '')) return false;
  if (rule.device && !rule.device.has(agent?.device ?? '')) return false;
  if (rule.country && !rule.country.has(country)) return false;
  return !rule.language || rule.language.has(language);
}

/** Where this visitor goes (before the query string): a rule's, a variant's, or the destination. */
export function choose(r: Routing, linkId: string, v: Visitor): Target {
  if (r.rules) {
    const agent = r.needsAgent ? agentOf(v.userAgent) : undefined;
    const country = r.needsCountry ? v.country() : '';
    const language = r.needsLanguage ? primaryLanguage(v.acceptLanguage) : '';
    for (const rule of r.rules) if (matches(rule, agent, country, language)) return rule.target;
  }
  if (r.variants) return r.variants[variantIndex(r.bounds, v.key(), linkId)];
  return r.destination;
}

/** Bytes a browser may send in a query string that a Location header may carry as they are. */
const PLAIN_PAIR = /^[\x21-\x7e]*$/;
const UNSAFE_CHAR = /[^\x21-\x7e]/g;
/** Node reads the request line as latin1: each character is one byte, re-encoded as it came. */
const byte = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;

function decodeName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
}

/**
 * The target with the visit's query string (`raw`, without `?`) merged in: the visit's
 * parameters are appended after the destination's own, except those the destination already
 * has (the link's own parameters win: a visitor cannot rewrite a campaign's tags or a partner
 * id) and the reserved ones of other features.
 */
export function withQuery(t: Target, raw: string): string {
  if (!raw) return t.url;
  let extra = '';
  for (const pair of raw.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const name = decodeName(eq < 0 ? pair : pair.slice(0, eq));
    if (RESERVED_QUERY.has(name) || t.keys.has(name)) continue;
    extra += `${extra ? '&' : ''}${PLAIN_PAIR.test(pair) ? pair : pair.replace(UNSAFE_CHAR, byte)}`;
  }
  if (!extra) return t.url;
  return `${t.base}?${t.query ? `${t.query}&` : ''}${extra}${t.hash}`;
}

// --- checking what an admin gives -------------------------------------------------------

/**
 * Schemes a rule may never send to. A rule's `url` may be an app deep link (`myapp://…`,
 * Android's `intent://…`) because a rule can aim it at visitors known to be on the phone that
 * has the app; browser-internal and script-running schemes are never a destination.
 */
const BLOCKED_SCHEMES = new Set([
  'javascript:',
  'data:',
  'vbscript:',
  'file:',
  'blob:',
  'about:',
  'filesystem:',
  'view-source:',
  'chrome:',
  'chrome-extension:',
  'moz-extension:',
  'resource:',
  'jar:',
  'ws:',
  'wss:',
  'ftp:',
]);
/** What a Location header carries safely: printable ASCII, no spaces. */
const PRINTABLE = /^[\x21-\x7e]+$/;

/** A rule's url: http(s) (normalised as a destination is), or an app deep link. */
export function ruleUrl(raw: string, field: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest(`${field} must be an absolute address (http, https, or an app link such as myapp://…)`, {
      field,
    });
  }
  if (u.protocol === 'http:' || u.protocol === 'https:') return u.toString();
  if (BLOCKED_SCHEMES.has(u.protocol)) {
    throw badRequest(`${field} may not use ${u.protocol} (only http, https and app deep links)`, { field });
  }
  const href = u.href;
  if (!PRINTABLE.test(href) || href.length > 2048) throw badRequest(`${field} is not a valid app link`, { field });
  return href;
}

/** The routing fields of a request, checked and normalised (`at` prefixes the field names); null stays null (removed). */
export function checkRouting(
  body: { rules?: Rule[] | null; variants?: Variant[] | null; expiredUrl?: string | null },
  at = '',
): { rules?: Rule[] | null; variants?: Variant[] | null; expiredUrl?: string | null } {
  const { rules, variants, expiredUrl } = body;
  return {
    rules: rules ? rules.map((r, i) => ({ when: r.when, url: ruleUrl(r.url, `${at}rules[${i}].url`) })) : rules,
    variants: variants
      ? variants.map((v, i) => ({ url: httpUrl(v.url, `${at}variants[${i}].url`).toString(), weight: v.weight }))
      : variants,
    expiredUrl: expiredUrl ? httpUrl(expiredUrl, `${at}expiredUrl`).toString() : expiredUrl,
  };
}
