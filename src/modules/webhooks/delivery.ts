/**
 * Delivery: the `webhooks.deliver` task. Each job makes one attempt and records it; on
 * failure it schedules the next attempt as a new job (runAt) in the same transaction, so the
 * schedule survives a crash and belongs to this module (WEBHOOK_MAX_RETRIES retries,
 * exponential backoff with jitter, capped, Retry-After honoured). A job names the attempt
 * number it is for, so a duplicated or stale job changes nothing. WEBHOOK_DISABLE_AFTER_FAILURES
 * consecutive failed attempts disable the registration and cancel its pending deliveries.
 *
 * Concurrency: transactions take a registration's row before its deliveries (see
 * webhooks.repository.ts), and one aborted by a deadlock or serialization failure anyway is
 * run again (`retryOnConflict`).
 */
import { type Db, type Queryable, retryOnConflict } from '../../db/index.ts';
import { defineTask, type TaskDefinition } from '../../platform/tasks.ts';
import { DELIVER_TASK, DeliverPayload, type DeliveryQueue } from './outbox.ts';
import type { AttemptResult, WebhookSender } from './sender.ts';
import { signatureHeaders } from './signing.ts';
import * as repo from './webhooks.repository.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

interface Log {
  warn(obj: object, msg?: string): void;
}

/**
 * Delay before automatic retry number `retry` (1-based): base × factor^(retry-1), ±20 %
 * jitter, at least what Retry-After asked for, never more than the cap.
 */
export function retryDelayMs(
  cfg: Pick<WebhooksSettings, 'retryBaseMs' | 'retryFactor' | 'retryMaxDelayMs'>,
  retry: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number {
  const exponential = cfg.retryBaseMs * cfg.retryFactor ** (retry - 1);
  const jittered = exponential * (0.8 + 0.4 * random());
  return Math.round(Math.min(Math.max(jittered, retryAfterMs ?? 0), cfg.retryMaxDelayMs));
}

export class WebhookDelivery {
  constructor(
    private readonly settings: WebhooksSettings,
    private readonly log: Log,
    /** Makes the signed POST (with the SSRF guard). */
    private readonly sender: WebhookSender,
    /** Where the next attempt of a failed delivery is queued: the outbox. */
    private readonly queue: DeliveryQueue,
  ) {}

  /**
   * The delivery task. The engine's own retries only cover a crash or a database error inside
   * the handler; failed deliveries are scheduled by this module (runAttempt).
   */
  deliverTask(): TaskDefinition {
    return defineTask({
      name: DELIVER_TASK,
      payload: DeliverPayload,
      visible: false,
      maxAttempts: 5,
      handler: (payload, ctx) => this.runAttempt(ctx.db, ctx.job.collectionId, payload, ctx.signal),
    });
  }

  /** Closes the sender's connections. */
  close(): Promise<void> {
    return this.sender.close();
  }

  /** Runs one attempt of a delivery; the `webhooks.deliver` task's handler. */
  async runAttempt(
    db: Db,
    collectionId: string,
    payload: DeliverPayload,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const work = await repo.loadDeliveryWork(db, collectionId, payload.deliveryId);
    if (!work) return { skipped: 'delivery or registration no longer exists' };
    const { delivery, webhook, body } = work;
    if (delivery.status !== 'pending' || delivery.attempt_count !== payload.attempt - 1) {
      return {
        skipped: `attempt ${payload.attempt} is stale (delivery ${delivery.status}, ${delivery.attempt_count} attempts)`,
      };
    }
    if (!webhook.active) {
      await repo.updateDelivery(db, collectionId, delivery.id, {
        status: 'cancelled',
        nextAttemptAt: null,
        lastError: 'registration is not active',
      });
      return { skipped: 'registration is not active' };
    }
    const startedAt = new Date();
    const result = await this.sender.send(
      webhook.url,
      signatureHeaders(webhook.secret, delivery.event_id, body, new Date(), webhook.previousSecret),
      body,
      signal,
    );
    // Shutting down mid-attempt: record nothing; the engine releases the job and it runs again.
    if (signal?.aborted) throw new Error('worker stopping; attempt abandoned');
    if (result.outcome === 'succeeded') {
      const recorded = await retryOnConflict(() =>
        repo.recordSuccessfulAttempt(db, collectionId, {
          deliveryId: delivery.id,
          attempt: payload.attempt,
          trigger: payload.trigger,
          startedAt,
          durationMs: result.durationMs,
          statusCode: result.statusCode!,
          responseExcerpt: result.responseExcerpt,
        }),
      );
      return recorded ? { outcome: 'succeeded', statusCode: result.statusCode } : { skipped: 'raced' };
    }
    return retryOnConflict(() =>
      db.transaction((tx) => this.recordFailedAttempt(tx, collectionId, payload, startedAt, result)),
    );
  }

  private async recordFailedAttempt(
    tx: Queryable,
    collectionId: string,
    payload: DeliverPayload,
    startedAt: Date,
    result: AttemptResult,
  ): Promise<Record<string, unknown>> {
    // The registration first: recordFailure and cancelPending below write it and its other
    // deliveries, and a disable takes them in that order too.
    await repo.lockWebhookOfDelivery(tx, collectionId, payload.deliveryId);
    const d = await repo.lockDelivery(tx, collectionId, payload.deliveryId);
    // Another job made this attempt meanwhile (a redeliver racing a retry): keep its record.
    if (d?.status !== 'pending' || d.attempt_count !== payload.attempt - 1) return { skipped: 'raced' };
    await repo.insertAttempt(tx, collectionId, {
      deliveryId: d.id,
      webhookId: d.webhook_id,
      attempt: payload.attempt,
      trigger: payload.trigger,
      startedAt,
      durationMs: result.durationMs,
      statusCode: result.statusCode,
      outcome: result.outcome,
      error: result.error,
      responseExcerpt: result.responseExcerpt,
    });
    const base = { attemptCount: payload.attempt, lastStatusCode: result.statusCode, lastError: result.error };
    const limit = this.settings.disableAfterFailures;
    const state = await repo.recordFailure(
      tx,
      collectionId,
      d.webhook_id,
      limit,
      `${limit} consecutive failed delivery attempts; last: ${result.error ?? 'failed'}`,
    );
    if (state && !state.active && state.consecutive_failures >= limit) {
      this.log.warn(
        { collectionId, webhookId: d.webhook_id },
        'webhook registration disabled after consecutive failures',
      );
      await repo.cancelPending(tx, collectionId, d.webhook_id, 'registration disabled');
    }
    if (state?.active && d.retries_left > 0) {
      const retry = this.settings.maxRetries - d.retries_left + 1;
      const runAt = new Date(Date.now() + retryDelayMs(this.settings, retry, result.retryAfterMs));
      await repo.updateDelivery(tx, collectionId, d.id, {
        ...base,
        status: 'pending',
        retriesLeft: d.retries_left - 1,
        nextAttemptAt: runAt,
      });
      await this.queue.queueDelivery(
        tx,
        collectionId,
        { deliveryId: d.id, attempt: payload.attempt + 1, trigger: 'retry' },
        runAt,
      );
      return { outcome: result.outcome, error: result.error, retryAt: runAt.toISOString() };
    }
    await repo.updateDelivery(tx, collectionId, d.id, {
      ...base,
      status: 'failed',
      nextAttemptAt: null,
    });
    return { outcome: result.outcome, error: result.error, final: true };
  }
}
