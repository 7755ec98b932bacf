/**
 * The HTTP client for requests to addresses a tenant chooses, other than signed webhook events
 * (which have their own sender in the webhooks module): interaction `webhook` effects and `http`
 * jobs. Such an address gets the SSRF rule (ssrf.ts: judged on every address a hostname
 * resolves to, on every attempt, and on address literals, which connect without a lookup),
 * unless `allowPrivateNetworks` (WEBHOOK_ALLOW_PRIVATE_NETWORKS) allows private networks. The
 * caller chooses the method, headers and body. Bounded: a timeout from connect to the last
 * byte, no redirects followed (a 3xx is a failure), the answer read up to a small excerpt.
 */
import { Agent, request } from 'undici';
import { guardedLookup, literalHostReason, RefusedAddressError } from './ssrf.ts';

export interface OutboundRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface OutboundResponse {
  /** refused: the SSRF rule, or not an http(s) URL; failed: no 2xx answer (worth another attempt). */
  outcome: 'succeeded' | 'failed' | 'refused';
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** The answer's Retry-After, in ms from now, when it gave one (a date or seconds). */
  retryAfterMs: number | null;
  durationMs: number;
}

/** The methods a tenant's request may use. */
export const OUTBOUND_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** A header name as HTTP allows it (a token), up to 100 characters. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

/** Header names a tenant's request may not set: the client sets them from the request itself. */
export const FRAMING_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);

/** Reads at most `cap` bytes of a body, then drops the connection's remaining bytes. */
export async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, cap: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= cap) break;
    }
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).subarray(0, cap).toString('utf8');
}

/** Retry-After as ms from now: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The guard's refusal, wherever undici wrapped it (a connect error's cause, or its cause). */
function refusedIn(err: unknown): RefusedAddressError | undefined {
  let e = err as { cause?: unknown } | undefined;
  for (let i = 0; i < 4 && e; i++) {
    if (e instanceof RefusedAddressError) return e;
    e = e.cause as typeof e;
  }
  return undefined;
}

/**
 * Why a request got no answer, in words: the SSRF guard's refusal (wherever undici wrapped
 * it), `timeout`, or the error's code and message (a connect error's cause says more than the
 * wrapper). Shared by this client and the webhooks' sender.
 */
export function describeFailure(err: unknown): { refused: boolean; message: string } {
  const refused = refusedIn(err);
  if (refused) return { refused: true, message: refused.message };
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.code === 'UND_ERR_HEADERS_TIMEOUT' || e?.code === 'UND_ERR_BODY_TIMEOUT') {
    return { refused: false, message: 'timeout' };
  }
  const code = e?.cause?.code ?? e?.code;
  const message = e?.cause?.message ?? e?.message ?? String(err);
  return { refused: false, message: code && !message.includes(code) ? `${code}: ${message}` : message };
}

export class OutboundHttp {
  private readonly agent: Agent;

  constructor(private readonly options: { allowPrivateNetworks: boolean; maxTimeoutMs: number; excerptBytes: number }) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup(options.allowPrivateNetworks), timeout: options.maxTimeoutMs },
      headersTimeout: options.maxTimeoutMs,
      bodyTimeout: options.maxTimeoutMs,
      keepAliveTimeout: 4_000,
      connections: 32,
    });
  }

  async send(r: OutboundRequest): Promise<OutboundResponse> {
    const started = performance.now();
    const done = (x: Omit<OutboundResponse, 'durationMs'>): OutboundResponse => ({
      ...x,
      durationMs: Math.round(performance.now() - started),
    });
    const failed = (error: string, outcome: 'failed' | 'refused' = 'failed') =>
      done({ outcome, statusCode: null, error, responseExcerpt: null, retryAfterMs: null });
    let target: URL;
    try {
      target = new URL(r.url);
    } catch {
      return failed('invalid URL', 'refused');
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return failed('not an http(s) URL', 'refused');
    if (!this.options.allowPrivateNetworks) {
      // An address literal connects without a lookup: judged here.
      const literal = literalHostReason(target.hostname);
      if (literal)
        return failed(new RefusedAddressError(target.hostname, literal.address, literal.reason).message, 'refused');
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
        retryAfterMs: ok ? null : parseRetryAfter(res.headers['retry-after']),
      });
    } catch (err) {
      const why = describeFailure(err);
      return failed(why.message, why.refused ? 'refused' : 'failed');
    }
  }

  /**
   * Takes no new request and closes the connections once the requests in flight have ended,
   * without waiting for them: a module stops before the job engine, whose stop ends them (or
   * their timeout does), as the webhooks module's sender does.
   */
  close(): void {
    void this.agent.close().catch(() => {});
  }
}
