/**
 * Delivery: the `webhooks.deliver` task. A job makes one attempt, or several (`more`: the
 * deliveries of one change to one registration, or attempts put off together), and records
 * each; a failed attempt schedules the next as a new job (runAt) in the same transaction, so the
 * schedule survives a crash and belongs to this module (WEBHOOK_MAX_RETRIES retries,
 * exponential backoff with jitter, capped, Retry-After honoured). A job names the attempt
 * number of each delivery it is for, so a duplicated or stale job changes nothing. A delivery
 * fails when its last automatic retry fails; WEBHOOK_DISABLE_AFTER_FAILURES consecutive failed
 * deliveries (not attempts: CONTRACT §8) disable the registration and cancel its pending
 * deliveries.
 *
 * Delivery at scale (issue 24, item 6; docs/design/webhooks.md "Delivery at scale"): the engine claims a lane's due jobs
 * together, and their handlers start in the same event-loop turn. What they need from the
 * database is gathered per collection and turn (`Coalescer`): one query loads the work of
 * every attempt that asked in that turn, one statement records every success that ended in
 * it, one transaction puts off every attempt held back in it. While one such statement is on
 * its way, the next batch grows. The POSTs go concurrently over the sender's keep-alive pool
 * (one per receiver origin, sender.ts). Failures keep the per-delivery transaction (retries,
 * backoff, disabling; delivery-failures.ts): they are rare, and they take locks in the
 * module's order one by one.
 *
 * An attempt's states, in this process:
 *   loaded → (stale | cancelled) ends it
 *   loaded → waiting for an in-flight place (healthy registration, at most IN_FLIGHT.waitMs)
 *          → put off (no place in time, over `maxPerSecond`, or backing off; a job for the
 *            same attempt later, nothing counted, the lane slot freed)
 *          → sending → recorded (success: batched; failure: its own transaction)
 * Crash anywhere: the job stays claimed by a dead worker and runs again after the lock
 * timeout; attempts already recorded are skipped by their number, the others are sent again
 * (at least once). Shutdown mid-job: nothing more is sent, the job throws and is released.
 *
 * Fairness: deliveries run in a lane of the job engine of their own (JOBS_DELIVERIES_*), where
 * each collection holds at most its share of a worker's slots (jobs engine/fairness.ts).
 * Inside that share, one registration cannot take every slot, nor keep taking them while
 * its receiver fails:
 * - In flight: a worker process makes at most WEBHOOK_MAX_IN_FLIGHT attempts to one
 *   registration at once. An attempt beyond that waits for a place only while its
 *   registration is healthy, and only IN_FLIGHT.waitMs (a fast receiver frees one in well
 *   under a millisecond); then it is put off (a new job for the same attempt, a moment later,
 *   no attempt counted) and frees its slot. Putting off at once, as before, turned a burst to
 *   one fast receiver into waves half a second apart (600–950 deliveries/s).
 * - Rate: `maxPerSecond` of a registration (optional): at most that many attempts start in any
 *   second in one worker process (a sliding window of the last starts, `RateWindow`); the
 *   others are put off, spread at that rate, not counted as failures. Per process: N worker
 *   processes may send N times the rate (docs/webhooks.md says so).
 * - Backoff: a failed attempt holds the registration's next attempts back for
 *   WEBHOOK_BACKOFF_BASE_MS × 2^(consecutive failures − 1), at most WEBHOOK_BACKOFF_MAX_MS.
 *   When it has passed, one attempt takes the turn (holding the others back for one more
 *   period), as a circuit breaker's probe: a success ends the backoff, a failure doubles it.
 *   Failures count once per round for the backoff's length (attempts that failed alongside
 *   the first, while its backoff runs, are logged, not counted). So a receiver that times out
 *   costs one slot per backoff, not one per delivery. With the backoff off (0), every failed
 *   attempt counts. Attempts loaded before a failure was recorded learn of it from this
 *   process (`failing`), so the rest of a job's attempts to a receiver that just failed go
 *   through the backoff rather than after it.
 *   Put-off attempts run when their time comes, not as soon as the receiver recovers. A
 *   redelivery or a test asked for by hand is not held back by the backoff (it is how one
 *   checks a receiver); the in-flight limit and the rate still apply to it.
 *
 * Trade-offs: a job of many attempts holds one lane slot until its last attempt ends (at most
 * DELIVERIES_PER_JOB, WEBHOOK_MAX_IN_FLIGHT at a time; a failure sends the rest through the
 * backoff, so a hanging receiver holds it for about one timeout). Gathering a turn's work
 * costs one event-loop turn (setImmediate) of latency. The in-flight wait holds a lane slot
 * for up to IN_FLIGHT.waitMs even when the receiver turns out to hang.
 *
 * Concurrency: transactions take a registration's row before its deliveries (see
 * webhooks.repository.ts), and one aborted by a deadlock or serialization failure anyway is
 * run again (`retryOnConflict`).
 */
import { type Db, retryOnConflict } from '../../db/index.ts';
import { defineTask, type TaskDefinition } from '../../platform/tasks.ts';
import * as attemptRepo from './attempts.repository.ts';
import { type FailureDeps, type Item, recordFailedAttempt } from './delivery-failures.ts';
import { Coalescer, InFlight, RateWindow } from './delivery-flow.ts';
import { DELIVER_TASK, DeliverPayload, type DeliveryQueue, type QueuedAttempt } from './outbox.ts';
import type { AttemptResult, WebhookSender } from './sender.ts';
import { signatureHeaders } from './signing.ts';
import * as repo from './webhooks.repository.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

interface Log {
  warn(obj: object, msg?: string): void;
}

/**
 * How an attempt waits for a place among the registration's requests in flight, and how far
 * it is put off when it gets none (ms).
 */
const IN_FLIGHT = {
  /**
   * An attempt to a healthy registration waits while places keep being freed: it is put off
   * once none has been freed for `waitMs` (the receiver stalls), or after `waitMaxMs` in all
   * (a slow receiver does not hold lane slots for long).
   */
  waitMs: 50,
  waitMaxMs: 1000,
  /** How far a put-off attempt goes: a moment, jittered. */
  deferMs: 500,
  /** A put-off attempt runs this much later at most than the time it waits for, so they do not all start at once. */
  deferJitterMs: 250,
  /**
   * Put-off times are rounded up to this grid, so that attempts put off together share a job
   * (outbox `queueAttempts`) instead of taking one each.
   */
  deferGridMs: 50,
};
/** A registration's rate window unused this long is dropped. */
const RATE_IDLE_MS = 60_000;

/** Thrown when the process stops: the job goes back to the queue, for a worker that runs. */
class Stopping extends Error {}

/** What the metrics hear of deliveries (webhooks.metrics.ts). */
export interface DeliveryObserver {
  /** An attempt was sent (or refused by the SSRF guard), with its outcome and time. */
  attempted(outcome: AttemptResult['outcome'], seconds: number): void;
  /** A delivery failed for good: its last automatic attempt failed. */
  deliveryFailed(): void;
}

export class WebhookDelivery {
  /** A failing registration's backoff, from the settings. */
  private readonly backoff: attemptRepo.Backoff;
  /** Attempts this process is making now (and waiting for a place), per registration ("collection/webhook"). */
  private readonly inFlight = new Map<string, InFlight>();
  /** Attempts this process is sending now, all registrations together (shutdown waits for 0). */
  private sending = 0;
  /** Rate windows of registrations with `maxPerSecond`, per "collection/webhook". */
  private readonly rates = new Map<string, RateWindow>();
  private lastRateSweep = 0;
  /**
   * Registrations whose attempt failed in this process since their last success here: attempts
   * loaded before that failure was recorded go through the backoff too (see the top).
   */
  private readonly failing = new Set<string>();
  private closing = false;
  private readonly loads: Coalescer<string, attemptRepo.DeliveryWork | undefined>;
  private readonly successes: Coalescer<attemptRepo.SuccessfulAttempt, boolean>;
  private readonly putOffs: Coalescer<QueuedAttempt & { runAt: Date }, boolean>;
  /** What a failed attempt's record needs (delivery-failures.ts). */
  private readonly failures: FailureDeps;

  constructor(
    private readonly settings: WebhooksSettings,
    log: Log,
    /** Makes the signed POST (with the SSRF guard). */
    private readonly sender: WebhookSender,
    /** Where the next attempt of a failed delivery is queued: the outbox. */
    private readonly queue: DeliveryQueue,
    /** Told of each attempt sent and each delivery that failed for good (the metrics). */
    private readonly observer?: DeliveryObserver,
  ) {
    this.backoff = { baseMs: settings.backoffBaseMs, maxMs: settings.backoffMaxMs };
    this.failures = { settings, backoff: this.backoff, queue, log };
    this.loads = new Coalescer(async (db, collectionId, ids) => {
      const found = await attemptRepo.loadDeliveryWorks(db, collectionId, [...new Set(ids)]);
      return ids.map((id) => found.get(id));
    });
    this.successes = new Coalescer(async (db, collectionId, attempts) => {
      // One attempt per delivery in a statement: a duplicate job's second success is "raced".
      const first = new Map<string, attemptRepo.SuccessfulAttempt>();
      for (const a of attempts) if (!first.has(a.deliveryId)) first.set(a.deliveryId, a);
      // Committed without waiting for the WAL flush: a success lost to a crash right after is
      // sent again (the receiver deduplicates on the event id, as for any retry), so the record
      // need not cost a disk flush per batch (the flush was the batch's longest wait).
      const recorded = await retryOnConflict(() =>
        db.transaction(async (tx) => {
          await attemptRepo.commitWithoutFlush(tx);
          return attemptRepo.recordSuccessfulAttempts(tx, collectionId, [...first.values()]);
        }),
      );
      return attempts.map((a) => first.get(a.deliveryId) === a && recorded.has(a.deliveryId));
    });
    this.putOffs = new Coalescer(async (db, collectionId, items) => {
      const waiting = await retryOnConflict(() =>
        db.transaction(async (tx) => {
          const still = await attemptRepo.deferAttempts(tx, collectionId, items);
          // In due order, so that attempts put off to the same moment share a job.
          const queued = items
            .filter((i) => still.has(i.deliveryId))
            .sort(
              (x, y) =>
                x.webhookId.localeCompare(y.webhookId) ||
                x.runAt.getTime() - y.runAt.getTime() ||
                x.trigger.localeCompare(y.trigger),
            );
          await this.queue.queueAttempts(tx, collectionId, queued);
          return still;
        }),
      );
      return items.map((i) => waiting.has(i.deliveryId));
    });
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
      handler: (payload, ctx) => this.runJob(ctx.db, ctx.job.collectionId, payload, ctx.signal),
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
    return this.sending === 0 ? this.sender.close() : Promise.resolve();
  }

  /**
   * A job's attempts, each judged alone; the answer of a job of one attempt is that attempt's
   * (as before jobs carried several). Any attempt that could not end here (stopping, a database
   * error) fails the job after the others have ended: the engine runs it again, and the attempts
   * recorded meanwhile are then skipped by their number.
   */
  async runJob(
    db: Db,
    collectionId: string,
    payload: DeliverPayload,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const items: Item[] = [
      { deliveryId: payload.deliveryId, attempt: payload.attempt, trigger: payload.trigger },
      ...(payload.more ?? []).map((m) => ({ ...m, trigger: payload.trigger })),
    ];
    if (items.length === 1) return this.runAttempt(db, collectionId, items[0], signal);
    // At most WEBHOOK_MAX_IN_FLIGHT of the job's attempts at a time: more would only queue for
    // the registration's places (and time out there while the first ones are sent).
    const settled: PromiseSettledResult<Record<string, unknown>>[] = [];
    let next = 0;
    const lane = async () => {
      while (next < items.length) {
        const i = next++;
        settled[i] = await this.runAttempt(db, collectionId, items[i], signal).then(
          (value) => ({ status: 'fulfilled', value }) as const,
          (reason) => ({ status: 'rejected', reason }) as const,
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(items.length, this.settings.maxInFlight) }, lane));
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    const counts: Record<string, number> = {};
    for (const r of settled) {
      const v = (r as PromiseFulfilledResult<Record<string, unknown>>).value;
      const kind = 'outcome' in v ? String(v.outcome) : 'deferred' in v ? 'deferred' : 'skipped';
      counts[kind] = (counts[kind] ?? 0) + 1;
    }
    return { attempts: items.length, ...counts };
  }

  /** Runs one attempt of a delivery and records it. */
  async runAttempt(db: Db, collectionId: string, item: Item, signal?: AbortSignal): Promise<Record<string, unknown>> {
    if (this.closing) throw new Stopping('webhooks stopping; the attempt is made later');
    const work = await this.loads.submit(db, collectionId, item.deliveryId);
    if (!work) return { skipped: 'delivery or registration no longer exists' };
    const { delivery, webhook, body } = work;
    if (delivery.status !== 'pending' || delivery.attempt_count !== item.attempt - 1) {
      return {
        skipped: `attempt ${item.attempt} is stale (delivery ${delivery.status}, ${delivery.attempt_count} attempts)`,
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
    // A redelivery or a test someone asked for is made now: it is how they check the receiver.
    const asked = item.trigger === 'redeliver' || item.trigger === 'test';
    const failing = () => (webhook.failures > 0 || this.failing.has(key)) && this.backoff.baseMs > 0 && !asked;
    let places = this.inFlight.get(key);
    if (!places) {
      places = new InFlight();
      this.inFlight.set(key, places);
    }
    // Only a healthy registration's attempts wait for a place; one that fails is not waited for.
    const got = places.acquire(this.settings.maxInFlight, failing() ? 0 : IN_FLIGHT.waitMs, IN_FLIGHT.waitMaxMs);
    if (!(got === true || (await got))) {
      this.dropIfIdle(key, places);
      return this.putOff(
        db,
        collectionId,
        delivery.webhook_id,
        item,
        Date.now() + IN_FLIGHT.deferMs,
        'in-flight limit',
        true,
      );
    }
    // Read again after the wait: the attempt that freed the place may have failed.
    const backingOff = failing();
    let turn = false;
    let startedAt: Date;
    let result: AttemptResult;
    this.sending++;
    try {
      if (webhook.maxPerSecond !== null) {
        const at = this.rateStart(key, webhook.maxPerSecond);
        if (at !== true)
          return await this.putOff(db, collectionId, delivery.webhook_id, item, at, 'rate limit (maxPerSecond)', false);
      }
      if (backingOff) {
        // One attempt per backoff period: the others wait a period for its outcome.
        const t = await attemptRepo.takeBackoffTurn(db, collectionId, delivery.webhook_id, this.backoff);
        if (!t.taken)
          return await this.putOff(
            db,
            collectionId,
            delivery.webhook_id,
            item,
            t.until.getTime(),
            'registration backing off',
            true,
          );
        turn = true;
      }
      if (this.closing) throw new Stopping('webhooks stopping; the attempt is made later');
      startedAt = new Date();
      result = await this.sender.send(
        webhook.url,
        signatureHeaders(webhook.secret, delivery.event_id, body, new Date(), webhook.previousSecret),
        body,
        signal,
      );
    } finally {
      this.sending--;
      places.release();
      this.dropIfIdle(key, places);
      if (this.closing && this.sending === 0) void this.sender.close();
    }
    this.observer?.attempted(result.outcome, result.durationMs / 1000);
    // Shutting down mid-attempt: record nothing; the engine releases the job and it runs again.
    if (signal?.aborted) throw new Stopping('worker stopping; attempt abandoned');
    if (result.outcome === 'succeeded') {
      this.failing.delete(key);
      const recorded = await this.successes.submit(db, collectionId, {
        deliveryId: delivery.id,
        attempt: item.attempt,
        trigger: item.trigger,
        startedAt,
        durationMs: result.durationMs,
        statusCode: result.statusCode!,
        responseExcerpt: result.responseExcerpt,
      });
      return recorded ? { outcome: 'succeeded', statusCode: result.statusCode } : { skipped: 'raced' };
    }
    this.failing.add(key);
    const recorded = await retryOnConflict(() =>
      db.transaction((tx) => recordFailedAttempt(tx, this.failures, collectionId, item, startedAt, result, turn)),
    );
    // Counted once committed: a transaction run again after a conflict counts once.
    if (recorded.final === true) this.observer?.deliveryFailed();
    return recorded;
  }

  private dropIfIdle(key: string, places: InFlight): void {
    if (places.idle && this.inFlight.get(key) === places) this.inFlight.delete(key);
  }

  /** A start under the registration's `maxPerSecond`, or when to come back (ms epoch). */
  private rateStart(key: string, maxPerSecond: number): true | number {
    const now = Date.now();
    if (now - this.lastRateSweep > RATE_IDLE_MS) {
      this.lastRateSweep = now;
      for (const [k, w] of this.rates) if (now - w.lastUsed > RATE_IDLE_MS) this.rates.delete(k);
    }
    let w = this.rates.get(key);
    // A changed limit starts a new window (PATCH maxPerSecond).
    if (!w || w.rate !== maxPerSecond) {
      w = new RateWindow(maxPerSecond);
      this.rates.set(key, w);
    }
    const taken = w.take(now);
    return taken === true ? true : w.putOff(taken);
  }

  /**
   * Puts an attempt off to `until` (ms epoch; `jitter`ed, on the IN_FLIGHT.deferGridMs grid): a job for
   * the same attempt then, the delivery's next attempt time shown, nothing counted. The slot is
   * free again at once. Gathered per turn (`putOffs`), so a burst held back costs one
   * transaction, and attempts put off to the same moment share a job.
   */
  private async putOff(
    db: Db,
    collectionId: string,
    webhookId: string,
    item: Item,
    until: number,
    why: string,
    jitter: boolean,
  ): Promise<Record<string, unknown>> {
    const at = until + (jitter ? Math.round(Math.random() * IN_FLIGHT.deferJitterMs) : 0);
    const runAt = new Date(Math.ceil(at / IN_FLIGHT.deferGridMs) * IN_FLIGHT.deferGridMs);
    const waiting = await this.putOffs.submit(db, collectionId, { ...item, webhookId, runAt });
    return waiting ? { deferred: why, until: runAt.toISOString() } : { skipped: 'raced' };
  }
}
