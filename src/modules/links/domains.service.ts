/**
 * A collection's own domains for its short links (docs/links.md, "Domains"): registered,
 * verified (DNS TXT or HTTP token, through `DomainChecks`, domains.checks.ts), used by links,
 * removed. The redirect asks `isCustomHost` whether a request's Host is a verified domain: a
 * process-memory answer (TtlCache), dropped in every process when a domain is verified or
 * removed (the links' change channel, payload `@<domain>`).
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import sql from 'sql-template-tag';
import type { Db, Queryable } from '../../db/index.ts';
import { badRequest, conflict, notFound } from '../../platform/errors.ts';
import { TtlCache } from '../../platform/ttl-cache.ts';
import { DNS_PREFIX, type DomainChecks, HTTP_TOKEN_PATH, TXT_VALUE_PREFIX } from './domains.checks.ts';
import * as repo from './domains.repository.ts';
import { DOMAIN_MAX, type LinkDomain, type VerifyDomainBody } from './domains.schema.ts';
import { LINKS_CHANNEL } from './links.repository.ts';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Host names that are never a collection's: they name this machine or nothing public. */
const RESERVED = /(^|\.)(localhost|local|localdomain|internal|invalid|test|example|home\.arpa|arpa)$/;

/** The payload that announces a domain's change on the links' channel. */
export const domainNotice = (domain: string) => `@${domain}`;

export interface DomainSettings {
  /** LINK_DOMAINS_MAX: domains a collection may register. */
  domainsMax: number;
  /** LINK_DOMAIN_CLAIM_TTL_MS: how long an unverified registration keeps others out. */
  claimTtlMs: number;
  cacheTtlMs: number;
  cacheMaxEntries: number;
}

export class DomainsService {
  /** host → whether it is a verified custom domain (the redirect's question). */
  private readonly hosts: TtlCache<string, boolean>;
  private readonly ownHost: string;

  constructor(
    private readonly db: Db,
    private readonly settings: DomainSettings,
    /** The deployment's public address: its host is never a collection's domain. */
    publicBaseUrl: string,
    /** The ownership checks (tests give their own resolver, or point HTTP at a local server). */
    private checks: DomainChecks,
  ) {
    this.hosts = new TtlCache(settings.cacheTtlMs, settings.cacheMaxEntries);
    this.ownHost = new URL(publicBaseUrl).hostname.toLowerCase();
  }

  /** Replaces the ownership checks (tests: a local resolver, a local HTTP server). */
  useChecks(checks: DomainChecks): void {
    this.checks = checks;
  }

  /** The deployment's own host name (PUBLIC_BASE_URL's). */
  get deploymentHost(): string {
    return this.ownHost;
  }

  /**
   * A domain as stored: trimmed, lower-case, Unicode as punycode, no trailing dot; a 400 naming
   * what is wrong with anything else (a scheme, port, path, address literal, the deployment's
   * own host, a reserved name).
   */
  normalise(raw: string, field = 'domain'): string {
    const bad = (why: string) => badRequest(`${field} ${why}`, { field });
    let name = raw.trim().toLowerCase();
    if (/[/:@?#\s\\]/.test(name)) throw bad('must be a host name alone: no scheme, port, path or user');
    if (name.startsWith('[') || isIP(name) !== 0) throw bad('must be a host name, not an IP address');
    if (name.endsWith('.')) name = name.slice(0, -1);
    const ascii = domainToASCII(name);
    if (!ascii) throw bad('is not a valid host name');
    if (ascii.length > DOMAIN_MAX) throw bad(`is longer than ${DOMAIN_MAX} characters`);
    const labels = ascii.split('.');
    if (labels.length < 2) throw bad('must have at least two labels (go.example.com)');
    if (!labels.every((l) => LABEL.test(l))) throw bad('has a label that is not 1-63 letters, digits or inner hyphens');
    if (/^[0-9]+$/.test(labels[labels.length - 1])) throw bad('must end in a top-level name, not a number');
    if (ascii === this.ownHost) throw bad("is the deployment's own host");
    if (RESERVED.test(ascii)) throw bad('is a reserved name (localhost, .local, .internal, .test, .example, …)');
    return ascii;
  }

  private present(r: repo.DomainRow): LinkDomain {
    return {
      domain: r.domain,
      verified: r.verified_at !== null,
      verifiedAt: r.verified_at?.toISOString() ?? null,
      verification: {
        token: r.token,
        dns: { type: 'TXT', name: `${DNS_PREFIX}.${r.domain}`, value: `${TXT_VALUE_PREFIX}${r.token}` },
        http: { url: `http://${r.domain}${HTTP_TOKEN_PATH}`, body: r.token },
      },
      checkedAt: r.checked_at?.toISOString() ?? null,
      checkError: r.check_error,
      createdAt: r.created_at.toISOString(),
    };
  }

  async register(collectionId: string, raw: string): Promise<LinkDomain> {
    const domain = this.normalise(raw);
    const row = await this.db.transaction(async (tx) => {
      if ((await repo.countDomains(tx, collectionId)) >= this.settings.domainsMax) {
        throw badRequest(`A collection may register at most ${this.settings.domainsMax} domains (LINK_DOMAINS_MAX)`, {
          field: 'domain',
          max: this.settings.domainsMax,
        });
      }
      const token = randomBytes(16).toString('hex');
      const inserted = await repo.insertDomain(tx, collectionId, domain, token, this.settings.claimTtlMs);
      if (inserted) return inserted;
      const holder = await repo.domainHolder(tx, domain);
      throw conflict(
        holder === collectionId
          ? `The domain "${domain}" is already registered by this collection`
          : `The domain "${domain}" is registered by another collection`,
        { field: 'domain' },
      );
    });
    return this.present(row);
  }

  async list(collectionId: string): Promise<{ items: LinkDomain[] }> {
    return { items: (await repo.listDomains(this.db, collectionId)).map((r) => this.present(r)) };
  }

  /** A path's domain, normalised as stored; a name that cannot be one is simply not found. */
  private pathDomain(raw: string): string {
    try {
      return this.normalise(raw);
    } catch {
      throw notFound('Domain');
    }
  }

  async get(collectionId: string, raw: string): Promise<LinkDomain> {
    const row = await repo.findDomain(this.db, collectionId, this.pathDomain(raw));
    if (!row) throw notFound('Domain');
    return this.present(row);
  }

  /**
   * Looks for the proof now and records what it found. A domain once verified stays verified
   * (a later failed check is recorded in `checkError` but takes nothing away from live links).
   */
  async verify(collectionId: string, raw: string, body: VerifyDomainBody): Promise<LinkDomain> {
    const domain = this.pathDomain(raw);
    const row = await repo.findDomain(this.db, collectionId, domain);
    if (!row) throw notFound('Domain');
    const method = body.method ?? 'any';
    const errors: string[] = [];
    let proven = false;
    if (method !== 'http') {
      const error = await this.checkDns(domain, row.token);
      if (error) errors.push(error);
      else proven = true;
    }
    if (!proven && method !== 'dns') {
      const error = await this.checkHttp(domain, row.token);
      if (error) errors.push(error);
      else proven = true;
    }
    const updated = await this.db.transaction(async (tx) => {
      const after = await repo.recordCheck(tx, collectionId, domain, proven ? null : errors.join('; '));
      if (proven && !row.verified_at) await notifyDomain(tx, domain);
      return after;
    });
    if (!updated) throw notFound('Domain');
    if (proven) this.hosts.invalidate(domain);
    return this.present(updated);
  }

  private async checkDns(domain: string, token: string): Promise<string | null> {
    const name = `${DNS_PREFIX}.${domain}`;
    const want = `${TXT_VALUE_PREFIX}${token}`;
    let records: string[][];
    try {
      records = await this.checks.resolveTxt(name);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENODATA' || code === 'ENOTFOUND') return `dns: no TXT record at ${name}`;
      return `dns: looking up ${name} failed (${code ?? (err as Error).message})`;
    }
    // A long TXT value may come split in strings of 255: joined, as resolvers document.
    if (records.some((r) => r.join('').trim() === want)) return null;
    return records.length === 0
      ? `dns: no TXT record at ${name}`
      : `dns: the TXT records at ${name} do not include "${want}"`;
  }

  private async checkHttp(domain: string, token: string): Promise<string | null> {
    const url = `http://${domain}${HTTP_TOKEN_PATH}`;
    try {
      const res = await this.checks.fetchHttpToken(domain, HTTP_TOKEN_PATH);
      if ('error' in res) return `http: ${url} answered no token (${res.error})`;
      return res.body.trim() === token ? null : `http: ${url} does not answer the token`;
    } catch (err) {
      return `http: fetching ${url} failed (${(err as Error).message})`;
    }
  }

  /**
   * Removes a domain. Refused (409) while live links are on it: they would answer 404 from
   * then on, and their printed addresses with them; move or delete them first. Deleted links
   * on it keep their codes' claims, so should the domain come back to another collection, it
   * cannot hand those codes on.
   */
  async remove(collectionId: string, raw: string): Promise<{ success: boolean }> {
    const domain = this.pathDomain(raw);
    await this.db.transaction(async (tx) => {
      const row = await repo.findDomain(tx, collectionId, domain, true);
      if (!row) throw notFound('Domain');
      const live = await repo.liveLinksOn(tx, collectionId, domain);
      if (live > 0) {
        throw conflict(
          `The domain "${domain}" has ${live} live link${live === 1 ? '' : 's'}: move them to another domain (PATCH the link's domain) or delete them first`,
          { field: 'domain', liveLinks: live },
        );
      }
      await repo.deleteDomain(tx, collectionId, domain);
      await notifyDomain(tx, domain);
    });
    this.hosts.invalidate(domain);
    return { success: true };
  }

  /** For a link's `domain`: the verified domain of the collection, normalised; else a 400. */
  async usable(q: Queryable, collectionId: string, raw: string, at = ''): Promise<string> {
    const domain = this.normalise(raw, `${at}domain`);
    const row = await repo.findDomain(q, collectionId, domain);
    if (!row) {
      throw badRequest(`${at}domain "${domain}" is not a domain of this collection (register it at …/domains)`, {
        field: `${at}domain`,
      });
    }
    if (!row.verified_at) {
      throw badRequest(`${at}domain "${domain}" is not verified yet (POST …/domains/${domain}/verify)`, {
        field: `${at}domain`,
      });
    }
    return domain;
  }

  /**
   * Whether a request's host is a verified custom domain, from memory: undefined when not known
   * yet (then `lookupHost`). The deployment's own host, and a name no collection could register
   * (an address, localhost, a name without a dot), never are, without a look.
   */
  cachedHost(host: string, now = Date.now()): boolean | undefined {
    if (host === this.ownHost || !host.includes('.') || host.startsWith('[')) return false;
    return this.hosts.get(host, now);
  }

  /** Reads whether the host is a verified custom domain, and remembers the answer (negative too). */
  async lookupHost(host: string, now = Date.now()): Promise<boolean> {
    const token = this.hosts.token();
    const known = await repo.isVerifiedDomain(this.db, host);
    this.hosts.set(host, known, token, now);
    return known;
  }

  /** Another process changed a domain (LISTEN): forget what was known of it. */
  changed(domain: string): void {
    this.hosts.invalidate(domain);
  }

  clear(): void {
    this.hosts.clear();
  }
}

async function notifyDomain(tx: Queryable, domain: string): Promise<void> {
  await tx.query(sql`SELECT pg_notify(${LINKS_CHANNEL}, ${domainNotice(domain)})`);
}
