/**
 * Delivery: the `webhooks.deliver` task. Each job makes one attempt and records it; on
 * failure it schedules the next attempt as a new job (runAt) in the same transaction, so the
 * schedule survives a crash and belongs to this module (WEBHOOK_MAX_RETRIES retries,
 * exponential backoff with jitter, capped, Retry-After honoured). A job names the attempt
 * number it is for, so a duplicated or stale job changes nothing. A delivery fails when its
 * last automatic retry fails; WEBHOOK_DISABLE_AFTER_FAILURES consecutive failed deliveries (not
 * attempts: CONTRACT §8) disable the registration and cancel its pending deliveries.
 *
 * Fairness: deliveries run in a lane of the job engine of their own (JOBS_DELIVERIES_*), where
 * each collection holds at most its share of a worker's slots (jobs engine.ts, "Fairness").
 * Inside that share, one registration cannot take every slot, nor keep taking them while
 * its receiver fails:
 * - In flight: a worker process makes at most WEBHOOK_MAX_IN_FLIGHT attempts to one
 *   registration at once; an attempt beyond that is put off (a new job for the same attempt,
 *   a moment later, no attempt counted) and frees its slot at once.
 * - Backoff: a failed attempt holds the registration's next attempts back for
 *   WEBHOOK_BACKOFF_BASE_MS × 2^(consecutive failures − 1), at most WEBHOOK_BACKOFF_MAX_MS.
 *   When it has passed, one attempt takes the turn (holding the others back for one more
 *   period), as a circuit breaker's probe: a success ends the backoff, a failure doubles it.
 *   Failures count once per round for the backoff's length (attempts that failed alongside
 *   the first, while its backoff runs, are logged, not counted). So a receiver that times out
 *   costs one slot per backoff, not one per delivery. With the backoff off (0), every failed
 *   attempt counts.
 *   Put-off attempts run when their time comes, not as soon as the receiver recovers. A
 *   redelivery or a test asked for by hand is not held back (it is how one checks a receiver).
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

/** How far an attempt over the in-flight limit is put off: a moment, jittered (ms). */
const IN_FLIGHT_DEFER_MS = 500;
/** A put-off attempt runs this much later at most than the time it waits for, so they do not all start at once. */
const DEFER_JITTER_MS = 250;

export class WebhookDelivery {
  /** A failing registration's backoff, from the settings. */
  private readonly backoff: repo.Backoff;
  /** Attempts this process is making now, per registration ("collection/webhook"). */
  private readonly inFlight = new Map<string, number>();
  private closing = false;

  constructor(
    private readonly settings: WebhooksSettings,
    private readonly log: Log,
    /** Makes the signed POST (with the SSRF guard). */
    private readonly sender: WebhookSender,
    /** Where the next attempt of a failed delivery is queued: the outbox. */
    private readonly queue: DeliveryQueue,
  ) {
    this.backoff = { baseMs: settings.backoffBaseMs, maxMs: settings.backoffMaxMs };
  }

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
      // Slots of their own: no tenant job waits behind a receiver, nor a delivery behind a tenant's jobs.
      lane: 'deliveries',
      handler: (payload, ctx) => this.runAttempt(ctx.db, ctx.job.collectionId, payload, ctx.signal),
    });
  }

  /**
   * Makes no new attempt and closes the sender's connections once the attempts in flight have
   * ended, without waiting for them: the module stops before the job engine, whose stop ends
   * them (or they time out). Waiting here held a shutdown for WEBHOOK_TIMEOUT_MS per hanging
   * receiver before the engine could even begin to stop.
   */
  close(): Promise<void> {
    this.closing = true;
    return this.inFlight.size === 0 ? this.sender.close() : Promise.resolve();
  }

  /** Runs one attempt of a delivery; the `webhooks.deliver` task's handler. */
  async runAttempt(
    db: Db,
    collectionId: string,
    payload: DeliverPayload,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    // Stopping: the job goes back to the queue (an engine retry), for a worker that runs.
    if (this.closing) throw new Error('webhooks stopping; the attempt is made later');
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
    const key = `${collectionId}/${delivery.webhook_id}`;
    const inFlight = this.inFlight.get(key) ?? 0;
    if (inFlight >= this.settings.maxInFlight)
      return this.putOff(db, collectionId, payload, new Date(Date.now() + IN_FLIGHT_DEFER_MS), 'in-flight limit');
    // Taken now, before anything else is awaited, so that concurrent attempts count each other.
    this.inFlight.set(key, inFlight + 1);
    let turn = false;
    let startedAt: Date;
    let result: AttemptResult;
    try {
      // A redelivery or a test someone asked for is made now: it is how they check the receiver.
      const asked = payload.trigger === 'redeliver' || payload.trigger === 'test';
      if (webhook.failures > 0 && this.backoff.baseMs > 0 && !asked) {
        // One attempt per backoff period: the others wait a period for its outcome.
        const t = await repo.takeBackoffTurn(db, collectionId, delivery.webhook_id, this.backoff);
        if (!t.taken) return await this.putOff(db, collectionId, payload, t.until, 'registration backing off');
        turn = true;
      }
      if (this.closing) throw new Error('webhooks stopping; the attempt is made later');
      startedAt = new Date();
      result = await this.sender.send(
        webhook.url,
        signatureHeaders(webhook.secret, delivery.event_id, body, new Date(), webhook.previousSecret),
        body,
        signal,
      );
    } finally {
      const n = (this.inFlight.get(key) ?? 1) - 1;
      if (n > 0) this.inFlight.set(key, n);
      else this.inFlight.delete(key);
      if (this.closing && this.inFlight.size === 0) void this.sender.close();
    }
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
      db.transaction((tx) => this.recordFailedAttempt(tx, collectionId, payload, startedAt, result, turn)),
    );
  }

  /**
   * Puts an attempt off to `until` (jittered): a job for the same attempt then, the delivery's
   * next attempt time shown, nothing counted. The slot is free again at once.
   */
  private async putOff(
    db: Db,
    collectionId: string,
    payload: DeliverPayload,
    until: Date,
    why: string,
  ): Promise<Record<string, unknown>> {
    const runAt = new Date(until.getTime() + Math.round(Math.random() * DEFER_JITTER_MS));
    const waiting = await retryOnConflict(() =>
      db.transaction(async (tx) => {
        if (!(await repo.deferAttempt(tx, collectionId, payload.deliveryId, payload.attempt, runAt))) return false;
        await this.queue.queueDelivery(tx, collectionId, payload, runAt);
        return true;
      }),
    );
    return waiting ? { deferred: why, until: runAt.toISOString() } : { skipped: 'raced' };
  }

  private async recordFailedAttempt(
    tx: Queryable,
    collectionId: string,
    payload: DeliverPayload,
    startedAt: Date,
    result: AttemptResult,
    /** The attempt took the registration's turn after a backoff (see the top). */
    turn: boolean,
  ): Promise<Record<string, unknown>> {
    // The registration first: the failure counts and cancelPending below write it and its other
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
    const state = await repo.recordFailedAttempt(tx, collectionId, d.webhook_id, { ...this.backoff, turn });
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
    // The delivery has failed (its last automatic retry, or its registration switched off):
    // WEBHOOK_DISABLE_AFTER_FAILURES of them in a row disable the registration.
    const limit = this.settings.disableAfterFailures;
    const after = await repo.recordFailedDelivery(
      tx,
      collectionId,
      d.webhook_id,
      limit,
      `${limit} consecutive failed deliveries; last: ${result.error ?? 'failed'}`,
    );
    if (after && !after.active && after.consecutive_failures === limit) {
      this.log.warn(
        { collectionId, webhookId: d.webhook_id },
        'webhook registration disabled after consecutive failed deliveries',
      );
      await repo.cancelPending(tx, collectionId, d.webhook_id, 'registration disabled');
      // The collection's other registrations that subscribe to it hear of it (this one is off).
      await this.queue.publish(tx, collectionId, [
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
}
