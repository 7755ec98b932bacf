/**
 * libpq's multi-host connection strings, which node-postgres (and pg-connection-string 2.14,
 * the newest) do not read: `postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`.
 * The list is split here into one connection string per host, each of which node-postgres
 * understands; the pool (primary.ts) tries them in order. Only the host list in the address is
 * read (not libpq's `host=a,b` query form); `target_session_attrs` is `any` (the first host that
 * answers) or `read-write` (the first that accepts writes), as in libpq.
 */
import { ConfigError } from '../platform/settings.ts';

export interface HostTarget {
  /** `host:port` as written, for logs and errors. */
  name: string;
  /** A single-host connection string for node-postgres. */
  connectionString: string;
}

export interface ParsedDatabaseUrl {
  targets: HostTarget[];
  /** target_session_attrs=read-write: only a host where `transaction_read_only` is off will do. */
  readWrite: boolean;
}

const ATTRS = new Set(['any', 'read-write']);

export function parseDatabaseUrl(url: string, variable = 'DATABASE_URL'): ParsedDatabaseUrl {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/i.exec(url.trim());
  if (!m) throw new ConfigError(`${variable} must be a postgres:// address, got "${redact(url)}"`);
  const [, scheme, authority, rest] = m;
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : '';
  const hostList = at >= 0 ? authority.slice(at + 1) : authority;
  // Split on commas outside IPv6 brackets.
  const hosts = hostList.split(/,(?![^[]*\])/).filter((h) => h !== '');
  const query = rest.indexOf('?');
  const params = new URLSearchParams(query >= 0 ? rest.slice(query + 1).replace(/#.*$/, '') : '');
  const attrs = params.get('target_session_attrs') ?? 'any';
  if (!ATTRS.has(attrs))
    throw new ConfigError(`${variable}: target_session_attrs must be any or read-write, got "${attrs}"`);
  params.delete('target_session_attrs');
  const path = query >= 0 ? rest.slice(0, query) : rest.replace(/#.*$/, '');
  const search = params.toString();
  const tail = `${path}${search ? `?${search}` : ''}`;
  if (hosts.length === 0) hosts.push('');
  const targets = hosts.map((host) => {
    if (!/^(\[[0-9A-Fa-f:.]+\]|[^:[\]]*)(:\d{1,5})?$/.test(host))
      throw new ConfigError(`${variable}: "${host}" is no host or host:port`);
    return { name: host || 'localhost', connectionString: `${scheme}${userinfo}${host}${tail}` };
  });
  return { targets, readWrite: attrs === 'read-write' };
}

/**
 * DATABASE_READ_URL: one or more addresses, separated by commas or white space. A comma also
 * separates libpq's hosts, so an entry is a new address only where it starts with a scheme.
 */
export function parseReadUrls(raw: string | undefined): string[] {
  if (!raw?.trim()) return [];
  const urls = raw
    .trim()
    .split(/[\s,]+(?=postgres(?:ql)?:\/\/)/i)
    .map((u) => u.trim().replace(/,$/, ''))
    .filter(Boolean);
  for (const u of urls) {
    const parsed = parseDatabaseUrl(u, 'DATABASE_READ_URL');
    if (parsed.targets.length > 1)
      throw new ConfigError('DATABASE_READ_URL: each replica is one host; list several replicas as several addresses');
  }
  return urls;
}

/** An address without its password, for logs and messages. */
export function redact(url: string): string {
  return url.replace(/(\/\/[^:/@]*):[^@/]*@/, '$1:***@');
}

/** A replica's name in status and logs: its host, port and database, never its password. */
export function replicaName(url: string): string {
  const m = /^postgres(?:ql)?:\/\/(?:[^@/]*@)?([^/?#]*)(\/[^?#]*)?/i.exec(url);
  return m ? `${m[1] || 'localhost'}${m[2] ?? ''}` : redact(url);
}
