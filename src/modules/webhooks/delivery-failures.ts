/**
 * A failed attempt's record, in its own transaction (webhook delivery, delivery.ts): the
 * attempt row, then the delivery's next automatic retry as a new job (WEBHOOK_MAX_RETRIES,
 * exponential backoff with jitter, capped, Retry-After honoured), or the delivery failed for
 * good; WEBHOOK_DISABLE_AFTER_FAILURES failed deliveries in a row disable the registration,
 * cancel its pending deliveries and tell the collection's other registrations
 * (`webhook.disabled`). Failures are rare: unlike successes they are not gathered per turn, and
 * they take the module's locks one delivery at a time, the registration first.
 */
import type { Queryable } from '../../db/index.ts';
import * as attemptRepo from './attempts.repository.ts';
import type { DeliverPayload, DeliveryQueue } from './outbox.ts';
import type { AttemptResult } from './sender.ts';
import * as repo from './webhooks.repository.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

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

/** One attempt a job makes. */
export interface Item {
  deliveryId: string;
  attempt: number;
  trigger: DeliverPayload['trigger'];
}

/** What the failure path needs of the delivery: its settings, backoff, queue and log. */
export interface FailureDeps {
  settings: WebhooksSettings;
  backoff: attemptRepo.Backoff;
  queue: DeliveryQueue;
  log: { warn(obj: object, msg?: string): void };
}

/** Records a failed attempt; answers the job's result for it. */
export async function recordFailedAttempt(
  tx: Queryable,
  deps: FailureDeps,
  collectionId: string,
  item: Item,
  startedAt: Date,
  result: AttemptResult,
  /** The attempt took the registration's turn after a backoff (see the top). */
  turn: boolean,
): Promise<Record<string, unknown>> {
  // The registration first: the failure counts and cancelPending below write it and its other
  // deliveries, and a disable takes them in that order too.
  await attemptRepo.lockWebhookOfDelivery(tx, collectionId, item.deliveryId);
  const d = await repo.lockDelivery(tx, collectionId, item.deliveryId);
  // Another job made this attempt meanwhile (a redeliver racing a retry): keep its record.
  if (d?.status !== 'pending' || d.attempt_count !== item.attempt - 1) return { skipped: 'raced' };
  await attemptRepo.insertAttempt(tx, collectionId, {
    deliveryId: d.id,
    webhookId: d.webhook_id,
    attempt: item.attempt,
    trigger: item.trigger,
    startedAt,
    durationMs: result.durationMs,
    statusCode: result.statusCode,
    outcome: result.outcome,
    error: result.error,
    responseExcerpt: result.responseExcerpt,
  });
  const base = { attemptCount: item.attempt, lastStatusCode: result.statusCode, lastError: result.error };
  const state = await attemptRepo.recordFailedAttempt(tx, collectionId, d.webhook_id, { ...deps.backoff, turn });
  if (state?.active && d.retries_left > 0) {
    const retry = deps.settings.maxRetries - d.retries_left + 1;
    const runAt = new Date(Date.now() + retryDelayMs(deps.settings, retry, result.retryAfterMs));
    await repo.updateDelivery(tx, collectionId, d.id, {
      ...base,
      status: 'pending',
      retriesLeft: d.retries_left - 1,
      nextAttemptAt: runAt,
    });
    await deps.queue.queueDelivery(
      tx,
      collectionId,
      { deliveryId: d.id, attempt: item.attempt + 1, trigger: 'retry' },
      runAt,
    );
    return { outcome: result.outcome, error: result.error, retryAt: runAt.toISOString() };
  }
  await repo.updateDelivery(tx, collectionId, d.id, {
    ...base,
    status: 'failed',
    nextAttemptAt: null,
  });
  // The delivery has failed (its last automatic retry, or its registration switched off):
  // WEBHOOK_DISABLE_AFTER_FAILURES of them in a row disable the registration.
  const limit = deps.settings.disableAfterFailures;
  const after = await attemptRepo.recordFailedDelivery(
    tx,
    collectionId,
    d.webhook_id,
    limit,
    `${limit === 1 ? 'a failed delivery' : `${limit} consecutive failed deliveries`}; last: ${result.error ?? 'failed'}`,
  );
  if (after && !after.active && after.consecutive_failures === limit) {
    deps.log.warn(
      { collectionId, webhookId: d.webhook_id },
      'webhook registration disabled after consecutive failed deliveries',
    );
    await repo.cancelPending(tx, collectionId, d.webhook_id, 'registration disabled');
    // The collection's other registrations that subscribe to it hear of it (this one is off).
    await deps.queue.publish(tx, collectionId, [
      {
        type: 'webhook.disabled',
        data: {
          webhook_id: d.webhook_id,
          url: after.url,
          disabled_at: after.disabled_at?.toISOString() ?? new Date().toISOString(),
          disabled_reason: after.disabled_reason,
          consecutive_failures: after.consecutive_failures,
        },
      },
    ]);
  }
  return { outcome: result.outcome, error: result.error, final: true };
}
