/**
 * How a domain's ownership is checked: the two lookups a verification makes, behind one
 * interface (`DomainChecks`) so that tests pass their own resolver or point the HTTP check at a
 * local server (docs/links.md, "Domains").
 *
 * - DNS: the TXT records at `_platform-verify.<domain>` must include `platform-verify=<token>`.
 * - HTTP: `http://<domain>/.well-known/platform-verify.txt` must answer 200 with the token as
 *   its body (surrounding white space ignored). The request follows the outbound rule of every
 *   tenant-chosen address (platform/ssrf.ts: public addresses only unless
 *   WEBHOOK_ALLOW_PRIVATE_NETWORKS), no redirects, 5 s, the body read up to 1 KiB.
 *   This service never answers that path itself: a domain already pointed at the deployment
 *   proves nothing about who registered it here (the dangling-CNAME takeover), so such a
 *   domain is verified by DNS.
 */
import { Resolver } from 'node:dns/promises';
import { OutboundHttp } from '../../platform/outbound-http.ts';

export const DNS_PREFIX = '_platform-verify';
export const TXT_VALUE_PREFIX = 'platform-verify=';
export const HTTP_TOKEN_PATH = '/.well-known/platform-verify.txt';

export interface DomainChecks {
  /**
   * The TXT records at `name`, each as its strings (node:dns `resolveTxt`'s shape). A name with
   * no records answers [] or throws ENODATA/ENOTFOUND; other errors are reported as such.
   */
  resolveTxt(name: string): Promise<string[][]>;
  /** The body of `http://<domain><path>` when it answers 200, else an error saying why. */
  fetchHttpToken(domain: string, path: string): Promise<{ body: string } | { error: string }>;
}

/** Where the HTTP check connects instead of the domain's own address (tests: a local server). */
export interface HttpCheckTarget {
  host: string;
  port: number;
}

/**
 * The checks against the real DNS and the domain's real address. `connectTo` (tests only)
 * sends the HTTP check to another address, with the domain as its Host header.
 */
export function defaultDomainChecks(options: {
  allowPrivateNetworks: boolean;
  connectTo?: HttpCheckTarget;
  timeoutMs?: number;
}): DomainChecks {
  const timeoutMs = options.timeoutMs ?? 5000;
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  const http = new OutboundHttp({
    allowPrivateNetworks: options.allowPrivateNetworks,
    maxTimeoutMs: timeoutMs,
    excerptBytes: 1024,
  });
  return {
    resolveTxt: (name) => resolver.resolveTxt(name),
    async fetchHttpToken(domain, path) {
      const target = options.connectTo;
      const url = target ? `http://${target.host}:${target.port}${path}` : `http://${domain}${path}`;
      const res = await http.send({
        url,
        method: 'GET',
        headers: target ? { host: domain } : {},
        body: undefined,
        timeoutMs,
      });
      if (res.outcome === 'succeeded' && res.statusCode === 200) return { body: res.responseExcerpt ?? '' };
      return { error: res.error ?? `HTTP ${res.statusCode}` };
    },
  };
}
