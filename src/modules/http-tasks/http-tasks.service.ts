/**
 * `http` jobs: a job that makes one HTTP request (the Cloud Tasks / QStash model). The request
 * is signed like a webhook delivery (Standard Webhooks headers, and `x-service-signature`),
 * with the collection's own secret (`GET .../http-tasks/secret`), `webhook-id` being the job's
 * id, the same on every attempt, so a receiver can drop a repeat. A 2xx answer completes the
 * job with `{status, body, durationMs}` (the answer's first 2 KB); anything else fails the
 * attempt: retried with the engine's backoff, or later when the answer says so (Retry-After).
 * The address follows the webhooks' SSRF rule: checked when the job is enqueued (an address
 * literal) and on every attempt (every address the name resolves to).
 * Trade-off: a refused address fails every attempt alike; retries use up the job's attempts.
 */

import type { Db } from '../../db/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { FRAMING_HEADERS, type OutboundHttp, type OutboundResponse } from '../../platform/outbound-http.ts';
import { literalHostReason } from '../../platform/ssrf.ts';
import { defineTask, RetryLater, type TaskDefinition } from '../../platform/tasks.ts';
import { httpUrl } from '../../platform/urls.ts';
import { newSecret, signatureHeaders } from '../webhooks/index.ts';
import * as repo from './http-tasks.repository.ts';
import { HTTP_TASK_LIMITS, HttpTaskPayload, type HttpTaskSecret } from './http-tasks.schema.ts';

export const HTTP_TASK = 'http';

/** Headers a job may not set: the signature's, which the service sets, and the framing ones. */
const RESERVED = new Set([
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'x-service-signature',
  'x-service-signature-previous',
  ...FRAMING_HEADERS,
]);

/** The most a Retry-After may put the next attempt off (longer asks wait this long). */
const MAX_RETRY_AFTER_MS = 3_600_000;

export interface HttpTasksSettings {
  allowPrivateNetworks: boolean;
  secretGraceSeconds: number;
}

/** The replaced secret while it still signs (its grace period), else null. */
const stillSigning = (row: repo.SecretRow): string | null =>
  row.previous_secret && row.previous_until && row.previous_until.getTime() > Date.now() ? row.previous_secret : null;

const view = (row: repo.SecretRow): HttpTaskSecret => ({
  secret: row.secret,
  previousSecretExpiresAt: stillSigning(row) ? (row.previous_until?.toISOString() ?? null) : null,
  createdAt: row.created_at.toISOString(),
  rotatedAt: row.rotated_at?.toISOString() ?? null,
});

export class HttpTasksService {
  constructor(
    private readonly db: Db,
    private readonly http: OutboundHttp,
    private readonly settings: HttpTasksSettings,
  ) {}

  /** Closes the client's connections (the module's stop). */
  close(): void {
    this.http.close();
  }

  /** The collection's signing secret (made on first use). */
  async secret(collectionId: string): Promise<HttpTaskSecret> {
    return view(await repo.secretOf(this.db, collectionId, newSecret()));
  }

  /** A new signing secret; the old one keeps signing for `graceSeconds` (default the webhooks'). */
  async rotateSecret(collectionId: string, body: { graceSeconds?: number } = {}): Promise<HttpTaskSecret> {
    const grace = body.graceSeconds ?? this.settings.secretGraceSeconds;
    return view(await repo.rotateSecret(this.db, collectionId, newSecret(), grace));
  }

  task(): TaskDefinition {
    return defineTask({
      name: HTTP_TASK,
      payload: HttpTaskPayload,
      visible: true,
      description:
        'Makes one HTTP request, signed with the collection’s http-task secret (Standard Webhooks headers; `webhook-id` is the job id). A 2xx completes the job with the status and the answer’s start; anything else is retried with backoff, Retry-After honoured.',
      example: { url: 'https://hooks.example.com/work', method: 'POST', body: { orderId: 'o-1' } },
      prepare: (payload) => this.check(payload),
      handler: async (p, ctx) => {
        const secret = await repo.secretOf(ctx.db, ctx.job.collectionId, newSecret());
        const json = p.body !== undefined && typeof p.body !== 'string';
        const body = p.body === undefined ? '' : json ? JSON.stringify(p.body) : (p.body as string);
        const given = Object.fromEntries(Object.entries(p.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
        const res = await this.http.send({
          url: p.url,
          method: p.method ?? 'POST',
          headers: {
            'user-agent': 'collection-platform-jobs/1',
            ...(json && !given['content-type'] ? { 'content-type': 'application/json' } : {}),
            ...given,
            ...signatureHeaders(secret.secret, `job_${ctx.job.id}`, body, new Date(), stillSigning(secret)),
          },
          body: body === '' ? undefined : body,
          timeoutMs: p.timeoutMs ?? HTTP_TASK_LIMITS.defaultTimeoutMs,
          signal: ctx.signal,
        });
        if (res.outcome === 'succeeded') {
          return { status: res.statusCode, body: res.responseExcerpt, durationMs: res.durationMs };
        }
        throw failure(res);
      },
    });
  }

  /** What a schema cannot say: an http(s) address, public unless allowed; no reserved header. */
  private check(p: HttpTaskPayload): HttpTaskPayload {
    const url = httpUrl(p.url, 'payload.url');
    const literal = this.settings.allowPrivateNetworks ? undefined : literalHostReason(url.hostname);
    if (literal) {
      throw badRequest(
        `payload.url points at ${literal.address} (${literal.reason}); requests go to public addresses only. For local development set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (docs/jobs.md, "HTTP jobs")`,
        { field: 'payload.url', setting: 'WEBHOOK_ALLOW_PRIVATE_NETWORKS' },
      );
    }
    const reserved = Object.keys(p.headers ?? {}).filter((h) => RESERVED.has(h.toLowerCase()));
    if (reserved.length) {
      throw badRequest(
        `payload.headers may not set ${reserved.join(', ')}: the service sets them (signature, framing)`,
        {
          field: 'payload.headers',
          headers: reserved,
        },
      );
    }
    return p;
  }
}

/** The error of a failed attempt: what the receiver answered, and when it asked to be tried again. */
function failure(res: OutboundResponse): Error {
  const excerpt = res.responseExcerpt ? `: ${res.responseExcerpt.slice(0, 200)}` : '';
  const message = `${res.error ?? `HTTP ${res.statusCode}`}${excerpt}`;
  if (res.retryAfterMs !== null) return new RetryLater(message, Math.min(res.retryAfterMs, MAX_RETRY_AFTER_MS));
  return new Error(message);
}
