/**
 * One HTTP attempt at a receiver. Bounded in every direction: a timeout covering connect to
 * last byte, no redirects followed (a 3xx is a failure), the answer read only up to a small
 * cap, and the SSRF guard on the address actually connected to.
 */
import { Agent, request } from 'undici';
import { describeFailure, parseRetryAfter, readCapped } from '../../platform/outbound-http.ts';
import { guardedLookup, literalHostReason, RefusedAddressError } from '../../platform/ssrf.ts';

export interface AttemptResult {
  outcome: 'succeeded' | 'failed' | 'refused';
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseExcerpt: string | null;
  /** Seconds the receiver asked us to wait (Retry-After), when it said so. */
  retryAfterMs: number | null;
}

export interface SenderOptions {
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  responseExcerptBytes: number;
  userAgent?: string;
}

export class WebhookSender {
  private readonly agent: Agent;
  private closed: Promise<void> | undefined;

  constructor(private readonly options: SenderOptions) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup(options.allowPrivateNetworks), timeout: options.timeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 4_000,
      connections: 64,
    });
  }

  async send(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<AttemptResult> {
    const started = performance.now();
    const done = (r: Omit<AttemptResult, 'durationMs'>): AttemptResult => ({
      ...r,
      durationMs: Math.round(performance.now() - started),
    });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return done({
        outcome: 'failed',
        statusCode: null,
        error: 'invalid URL',
        responseExcerpt: null,
        retryAfterMs: null,
      });
    }
    if (!this.options.allowPrivateNetworks) {
      const literal = literalHostReason(target.hostname);
      if (literal) {
        const refusal = new RefusedAddressError(target.hostname, literal.address, literal.reason);
        return done({
          outcome: 'refused',
          statusCode: null,
          error: refusal.message,
          responseExcerpt: null,
          retryAfterMs: null,
        });
      }
    }
    // One timer and one controller for the whole attempt (connect to last byte read), aborted by
    // the worker's signal too: AbortSignal.any with AbortSignal.timeout cost more per attempt
    // than the rest of the send, at thousands of attempts a second.
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException('The attempt timed out', 'TimeoutError')),
      this.options.timeoutMs,
    );
    const stop = () => deadline.abort(signal?.reason);
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });
    try {
      const res = await request(target, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': this.options.userAgent ?? 'collection-platform-webhooks/1',
          ...headers,
        },
        body,
        signal: deadline.signal,
      });
      const excerpt = await readCapped(res.body, this.options.responseExcerptBytes);
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      return done({
        outcome: ok ? 'succeeded' : 'failed',
        statusCode: res.statusCode,
        error: ok
          ? null
          : res.statusCode >= 300 && res.statusCode < 400
            ? 'redirect not followed'
            : `HTTP ${res.statusCode}`,
        responseExcerpt: excerpt,
        retryAfterMs: ok ? null : parseRetryAfter(res.headers['retry-after']),
      });
    } catch (err) {
      const { refused, message } = describeFailure(
        deadline.signal.reason?.name === 'TimeoutError' ? deadline.signal.reason : err,
      );
      return done({
        outcome: refused ? 'refused' : 'failed',
        statusCode: null,
        error: message,
        responseExcerpt: null,
        retryAfterMs: null,
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', stop);
    }
  }

  /**
   * Closes the connections, once: delivery closes it when it stops and again when its last
   * attempt in flight ends, and undici's second `close()` of a closed agent rejects
   * (ClientDestroyedError), which the caller that does not wait would leave unhandled.
   */
  close(): Promise<void> {
    this.closed ??= this.agent.close().catch(() => {});
    return this.closed;
  }
}
