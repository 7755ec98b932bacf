/**
 * The HTTP client of `webhook` effects. An effect's address is chosen by a tenant, as a webhook
 * receiver's is, so it gets the same SSRF rule (the webhooks module's `forbiddenAddressReason`,
 * judged on every address a hostname resolves to, on every attempt, and on address literals,
 * which connect without a lookup), unless WEBHOOK_ALLOW_PRIVATE_NETWORKS allows private
 * networks. Its own client rather than the webhooks module's `WebhookSender` because an effect
 * chooses its method (GET, PUT, ...) and the sender only POSTs signed events. Bounded like the
 * sender: a timeout from connect to the last byte, no redirects followed (a 3xx is a failure),
 * the answer read up to a small excerpt.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, request } from 'undici';
import { forbiddenAddressReason, readCapped } from '../webhooks/index.ts';

export interface EffectRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface EffectResponse {
  /** refused: the SSRF rule; failed: no 2xx answer (worth another attempt). */
  outcome: 'succeeded' | 'failed' | 'refused';
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  durationMs: number;
}

class RefusedAddress extends Error {}

function refusal(host: string, address: string, reason: string): RefusedAddress {
  return new RefusedAddress(
    `refused: ${host} resolves to ${address} (${reason}); private networks are not allowed (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows them, for development)`,
  );
}

/** Resolves as usual, then refuses the connection when any address is not public. */
function guardedLookup(): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      for (const a of addresses) {
        const reason = forbiddenAddressReason(a.address);
        if (reason) return callback(refusal(hostname, a.address, reason));
      }
      if (options?.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
      callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}

/** The guard's refusal, wherever undici wrapped it (a connect error's cause, or its cause). */
function refusedIn(err: unknown): RefusedAddress | undefined {
  let e = err as { cause?: unknown } | undefined;
  for (let i = 0; i < 4 && e; i++) {
    if (e instanceof RefusedAddress) return e;
    e = e.cause as typeof e;
  }
  return undefined;
}

function describe(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.code === 'UND_ERR_HEADERS_TIMEOUT' || e?.code === 'UND_ERR_BODY_TIMEOUT') {
    return 'timeout';
  }
  const code = e?.cause?.code ?? e?.code;
  const message = e?.cause?.message ?? e?.message ?? String(err);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

export class EffectHttp {
  private readonly agent: Agent;

  constructor(private readonly options: { allowPrivateNetworks: boolean; maxTimeoutMs: number; excerptBytes: number }) {
    this.agent = new Agent({
      connect: options.allowPrivateNetworks
        ? { timeout: options.maxTimeoutMs }
        : { lookup: guardedLookup(), timeout: options.maxTimeoutMs },
      headersTimeout: options.maxTimeoutMs,
      bodyTimeout: options.maxTimeoutMs,
      keepAliveTimeout: 4_000,
      connections: 32,
    });
  }

  async send(r: EffectRequest): Promise<EffectResponse> {
    const started = performance.now();
    const done = (x: Omit<EffectResponse, 'durationMs'>): EffectResponse => ({
      ...x,
      durationMs: Math.round(performance.now() - started),
    });
    const failed = (error: string, outcome: 'failed' | 'refused' = 'failed') =>
      done({ outcome, statusCode: null, error, responseExcerpt: null });
    let target: URL;
    try {
      target = new URL(r.url);
    } catch {
      return failed('invalid URL', 'refused');
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return failed('not an http(s) URL', 'refused');
    if (!this.options.allowPrivateNetworks) {
      // An address literal connects without a lookup: judged here.
      const bare = target.hostname.replace(/^\[(.*)\]$/, '$1');
      const reason = isIP(bare) === 0 ? undefined : forbiddenAddressReason(bare);
      if (reason) return failed(refusal(target.hostname, bare, reason).message, 'refused');
    }
    const timeout = AbortSignal.timeout(Math.min(r.timeoutMs, this.options.maxTimeoutMs));
    try {
      const res = await request(target, {
        method: r.method as 'POST',
        dispatcher: this.agent,
        headers: r.headers,
        body: r.body,
        signal: r.signal ? AbortSignal.any([r.signal, timeout]) : timeout,
      });
      const excerpt = await readCapped(res.body, this.options.excerptBytes);
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      const error = ok
        ? null
        : res.statusCode >= 300 && res.statusCode < 400
          ? `HTTP ${res.statusCode}: redirect not followed`
          : `HTTP ${res.statusCode}`;
      return done({
        outcome: ok ? 'succeeded' : 'failed',
        statusCode: res.statusCode,
        error,
        responseExcerpt: excerpt,
      });
    } catch (err) {
      const refused = refusedIn(err);
      return refused ? failed(refused.message, 'refused') : failed(describe(err));
    }
  }

  /**
   * Takes no new request and closes the connections once the requests in flight have ended,
   * without waiting for them: the module stops before the job engine, whose stop ends them (or
   * their timeout does), as the webhooks module's sender does.
   */
  close(): void {
    void this.agent.close().catch(() => {});
  }
}
