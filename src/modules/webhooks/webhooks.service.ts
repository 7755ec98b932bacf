/**
 * Webhooks: registrations of a collection, the event outbox, and delivery.
 *
 * An event is written in the same transaction as the change that caused it, together with
 * one delivery row and one `webhooks.deliver` job per active registration subscribed to its
 * type: a committed change always has its deliveries queued, a rolled-back one has none.
 * Each job makes one attempt and records it; on failure it schedules the next attempt as a
 * new job (runAt) in the same transaction, so the schedule survives a crash and belongs to
 * this module (3 retries, exponential backoff with jitter, capped, Retry-After honoured).
 * A job names the attempt number it is for, so a duplicated or stale job changes nothing.
 *
 * Concurrency: transactions take a registration's row before its deliveries (see
 * webhooks.repository.ts), and one aborted by a deadlock or serialization failure anyway is
 * run again (`retryOnConflict`). The registration cap is checked under a per-collection
 * lock, so parallel creates cannot overshoot it.
 */

import { type Static, Type } from 'typebox';
import { type Db, type Queryable, retryOnConflict } from '../../db/index.ts';
import { badRequest, conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { defineTask, type TaskDefinition } from '../../platform/tasks.ts';
import { type AttemptResult, WebhookSender } from './sender.ts';
import { newSecret, signatureHeaders } from './signing.ts';
import { literalHostReason } from './ssrf.ts';
import * as repo from './webhooks.repository.ts';
import {
  type CreateWebhookBody,
  type Delivery,
  type DeliveryAttempt,
  type DeliveryListQuery,
  type EventEnvelope,
  type RotateSecretBody,
  TEST_EVENT_TYPE,
  type UpdateWebhookBody,
  type Webhook,
} from './webhooks.schema.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

export const DELIVER_TASK = 'webhooks.deliver';

/** The part of the job engine this module needs (see src/modules/jobs). */
export interface JobQueue {
  enqueue(
    q: Queryable,
    collectionId: string,
    options: { task: string; payload?: unknown; runAt?: Date; maxAttempts?: number },
  ): Promise<unknown>;
}

const DeliverPayload = Type.Object({
  deliveryId: Type.String({ maxLength: 64 }),
  /** The attempt number this job makes (1 = first); anything else already happened. */
  attempt: Type.Integer({ minimum: 1 }),
  trigger: Type.Union([
    Type.Literal('automatic'),
    Type.Literal('retry'),
    Type.Literal('redeliver'),
    Type.Literal('test'),
  ]),
});
export type DeliverPayload = Static<typeof DeliverPayload>;

interface Log {
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
}

/** An event to publish: its type and data; id and time are given here. */
export interface NewEvent {
  type: string;
  data: Record<string, unknown>;
}

function toWebhook(r: repo.WebhookRow, withSecret = false): Webhook {
  const w: Webhook = {
    id: r.id,
    url: r.url,
    events: r.events,
    active: r.active,
    description: r.description,
    consecutiveFailures: r.consecutive_failures,
    disabledAt: r.disabled_at ? r.disabled_at.toISOString() : null,
    disabledReason: r.disabled_reason,
    previousSecretExpiresAt:
      r.previous_secret_expires_at && r.previous_secret_expires_at.getTime() > Date.now()
        ? r.previous_secret_expires_at.toISOString()
        : null,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
  if (withSecret) w.secret = r.secret;
  return w;
}

const toAttempt = (a: repo.AttemptRow): DeliveryAttempt => ({
  attempt: a.attempt,
  trigger: a.trigger,
  at: a.started_at.toISOString(),
  durationMs: a.duration_ms,
  statusCode: a.status_code,
  outcome: a.outcome,
  error: a.error,
  responseExcerpt: a.response_excerpt,
});

function toDelivery(d: repo.DeliveryRow, attempts: repo.AttemptRow[]): Delivery {
  return {
    id: d.id,
    webhookId: d.webhook_id,
    eventId: d.event_id,
    eventType: d.event_type,
    status: d.status,
    attemptCount: d.attempt_count,
    nextAttemptAt: d.next_attempt_at ? d.next_attempt_at.toISOString() : null,
    lastStatusCode: d.last_status_code,
    lastError: d.last_error,
    attempts: attempts.map(toAttempt),
    createdAt: d.created_at.toISOString(),
    updatedAt: d.updated_at.toISOString(),
  };
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

export class WebhooksService {
  private readonly sender: WebhookSender;

  constructor(
    private readonly db: Db,
    readonly settings: WebhooksSettings,
    private readonly log: Log,
    /** Where deliveries are queued: the job engine (modules/jobs). */
    private readonly jobs: JobQueue,
  ) {
    this.sender = new WebhookSender({
      allowPrivateNetworks: this.settings.allowPrivateNetworks,
      timeoutMs: this.settings.timeoutMs,
      responseExcerptBytes: this.settings.responseExcerptBytes,
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
      handler: (payload, ctx) => this.runAttempt(ctx.db, ctx.job.collectionId, payload, ctx.signal),
    });
  }

  private pruneTimer: NodeJS.Timeout | undefined;

  /**
   * Hourly (in worker processes, see the manifest): delete finished deliveries past the
   * retention, and forget secrets whose grace period after a rotation is over.
   */
  startHousekeeping(): void {
    if (this.pruneTimer) return;
    const run = () => {
      void this.prune().catch((err: unknown) => this.log.warn({ err }, 'webhooks: pruning the delivery log failed'));
      void this.forgetRetiredSecrets().catch((err: unknown) =>
        this.log.warn({ err }, 'webhooks: forgetting retired secrets failed'),
      );
    };
    this.pruneTimer = setInterval(run, 3_600_000);
    this.pruneTimer.unref();
    run();
  }

  /** Deletes events older than the retention whose deliveries are all final. */
  async prune(now = Date.now()): Promise<number> {
    const before = new Date(now - this.settings.logRetentionMs);
    let total = 0;
    for (;;) {
      const n = await repo.pruneEvents(this.db, before, 1000);
      total += n;
      if (n < 1000) return total;
    }
  }

  /** A replaced secret past its grace period signs nothing; it is not kept at rest either. */
  forgetRetiredSecrets(): Promise<number> {
    return repo.forgetRetiredSecrets(this.db);
  }

  async close(): Promise<void> {
    clearInterval(this.pruneTimer);
    await this.sender.close();
  }

  // --- registrations -------------------------------------------------------------------

  private checkUrl(raw: string): string {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw badRequest('url must be an absolute http or https address', { field: 'url' });
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw badRequest('url must use http or https', { field: 'url' });
    }
    if (!this.settings.allowPrivateNetworks) {
      const host = u.hostname.toLowerCase();
      const literal = literalHostReason(host);
      if (literal || host === 'localhost' || host.endsWith('.localhost')) {
        throw badRequest(
          `url points at a ${literal?.reason ?? 'loopback'} address; receivers must be reachable on the public internet`,
          { field: 'url' },
        );
      }
    }
    return u.toString();
  }

  async create(collectionId: string, body: CreateWebhookBody): Promise<Webhook> {
    const url = this.checkUrl(body.url);
    return this.db.transaction(async (tx) => {
      // Count and insert under one lock: otherwise parallel creates all see room for one more.
      await repo.lockRegistrations(tx, collectionId);
      if ((await repo.countWebhooks(tx, collectionId)) >= this.settings.maxRegistrations) {
        throw conflict(`A collection may hold at most ${this.settings.maxRegistrations} webhook registrations`);
      }
      const row = await repo.insertWebhook(tx, collectionId, {
        id: newId('wh'),
        url,
        events: body.events,
        active: body.active ?? true,
        description: body.description ?? null,
        secret: newSecret(),
      });
      return toWebhook(row, true);
    });
  }

  async list(collectionId: string): Promise<{ items: Webhook[] }> {
    return { items: (await repo.listWebhooks(this.db, collectionId)).map((r) => toWebhook(r)) };
  }

  async get(collectionId: string, id: string): Promise<Webhook> {
    const row = await repo.findWebhook(this.db, collectionId, id);
    if (!row) throw notFound('Webhook');
    return toWebhook(row);
  }

  async update(collectionId: string, id: string, body: UpdateWebhookBody): Promise<Webhook> {
    const url = body.url !== undefined ? this.checkUrl(body.url) : undefined;
    return this.inTransaction(async (tx) => {
      // The registration first, then its deliveries (cancelPending): the module's lock order.
      const current = await repo.findWebhook(tx, collectionId, id, 'update');
      if (!current) throw notFound('Webhook');
      const row = await repo.updateWebhook(tx, collectionId, id, {
        url,
        events: body.events,
        description: body.description,
        active: body.active,
        // Turning a registration on (again) starts its failure count afresh.
        reenable: body.active === true,
      });
      if (body.active === false) await repo.cancelPending(tx, collectionId, id, 'registration deactivated');
      return toWebhook(row!);
    });
  }

  async remove(collectionId: string, id: string): Promise<{ success: boolean }> {
    if (!(await retryOnConflict(() => repo.deleteWebhook(this.db, collectionId, id)))) throw notFound('Webhook');
    return { success: true };
  }

  /** A new secret; the replaced one keeps signing next to it for the grace period. */
  async rotateSecret(collectionId: string, id: string, body: RotateSecretBody = {}): Promise<Webhook> {
    const graceSeconds = body.graceSeconds ?? this.settings.secretGraceSeconds;
    const row = await repo.updateWebhook(this.db, collectionId, id, { rotate: { secret: newSecret(), graceSeconds } });
    if (!row) throw notFound('Webhook');
    return toWebhook(row, true);
  }

  // --- events (the outbox) ---------------------------------------------------------------

  /**
   * Writes events and queues their deliveries. Call inside the transaction of the change
   * that caused them (`q` is that transaction). Returns the ids of the events stored (those
   * with at least one active subscribed registration).
   */
  async publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<string[]> {
    if (events.length === 0) return [];
    const subscriptions = await repo.activeSubscriptions(q, collectionId);
    const written = await this.writeEvents(q, collectionId, events, (type) =>
      subscriptions.filter((s) => s.events.includes(type)).map((s) => s.id),
    );
    return written.eventIds;
  }

  /** One statement for the events, one for their deliveries, then one job per delivery. */
  private async writeEvents(
    q: Queryable,
    collectionId: string,
    events: NewEvent[],
    recipients: (type: string) => string[],
    trigger: DeliverPayload['trigger'] = 'automatic',
  ): Promise<{ eventIds: string[]; deliveryIds: string[] }> {
    const createdAt = new Date();
    // An event nobody is subscribed to is not stored: the outbox holds what must be sent.
    const rows = events
      .filter((e) => recipients(e.type).length > 0)
      .map((e) => {
        const envelope: EventEnvelope = {
          type: e.type,
          id: newId('evt'),
          created_at: createdAt.toISOString(),
          data: e.data,
        };
        return { id: envelope.id, type: e.type, body: JSON.stringify(envelope), createdAt };
      });
    if (rows.length === 0) return { eventIds: [], deliveryIds: [] };
    await repo.insertEvents(q, collectionId, rows);
    const deliveries = rows.flatMap((r) =>
      recipients(r.type).map((webhookId) => ({
        id: newId('dlv'),
        webhookId,
        eventId: r.id,
        retries: this.settings.maxRetries,
      })),
    );
    await repo.insertDeliveries(q, collectionId, deliveries);
    for (const d of deliveries) await this.enqueue(q, collectionId, { deliveryId: d.id, attempt: 1, trigger });
    return { eventIds: rows.map((r) => r.id), deliveryIds: deliveries.map((d) => d.id) };
  }

  private async enqueue(q: Queryable, collectionId: string, payload: DeliverPayload, runAt?: Date): Promise<void> {
    // The engine's own retries only cover a crash or a database error inside the handler;
    // delivery failures are scheduled by this module.
    await this.jobs.enqueue(q, collectionId, { task: DELIVER_TASK, payload, runAt, maxAttempts: 5 });
  }

  async sendTest(collectionId: string, id: string): Promise<Delivery> {
    const deliveryId = await this.inTransaction(async (tx) => {
      // Kept active until the delivery is written; FOR SHARE lets other deliveries be written.
      const w = await repo.findWebhook(tx, collectionId, id, 'share');
      if (!w) throw notFound('Webhook');
      if (!w.active) throw conflict('The registration is not active; re-enable it with PATCH {"active": true} first');
      const written = await this.writeEvents(
        tx,
        collectionId,
        [{ type: TEST_EVENT_TYPE, data: { webhook_id: w.id, message: 'This is a test event sent on request.' } }],
        () => [w.id],
        'test',
      );
      return written.deliveryIds[0];
    });
    return this.getDelivery(collectionId, id, deliveryId);
  }

  // --- delivery log ----------------------------------------------------------------------

  async listDeliveries(
    collectionId: string,
    webhookId: string,
    query: DeliveryListQuery,
  ): Promise<{ items: Delivery[]; limit: number; offset: number; total: number }> {
    if (!(await repo.findWebhook(this.db, collectionId, webhookId))) throw notFound('Webhook');
    const limit = query.limit ?? 20;
    const offset = query.offset ?? 0;
    const { rows, total } = await repo.listDeliveries(this.db, collectionId, webhookId, { ...query, limit, offset });
    const attempts = await repo.attemptsOf(
      this.db,
      collectionId,
      rows.map((r) => r.id),
    );
    const items = rows.map((r) =>
      toDelivery(
        r,
        attempts.filter((a) => a.delivery_id === r.id),
      ),
    );
    return { items, limit, offset, total };
  }

  async getDelivery(collectionId: string, webhookId: string, deliveryId: string): Promise<Delivery> {
    const row = await repo.findDelivery(this.db, collectionId, webhookId, deliveryId);
    if (!row) throw notFound('Delivery');
    return toDelivery(row, await repo.attemptsOf(this.db, collectionId, [deliveryId]));
  }

  /** Sends a delivery again, with the same event id and a fresh set of automatic retries. */
  async redeliver(collectionId: string, webhookId: string, deliveryId: string): Promise<Delivery> {
    await this.inTransaction(async (tx) => {
      // The registration before the delivery (the lock order), and held: a disable committing
      // meanwhile would leave a pending delivery behind a registration that is off.
      const w = await repo.findWebhook(tx, collectionId, webhookId, 'share');
      if (!w) throw notFound('Webhook');
      const d = await repo.lockDelivery(tx, collectionId, deliveryId);
      if (!d || d.webhook_id !== webhookId) throw notFound('Delivery');
      if (!w.active) throw conflict('The registration is not active; re-enable it with PATCH {"active": true} first');
      await repo.updateDelivery(tx, collectionId, deliveryId, {
        status: 'pending',
        retriesLeft: this.settings.maxRetries,
        nextAttemptAt: new Date(),
      });
      await this.enqueue(tx, collectionId, { deliveryId, attempt: d.attempt_count + 1, trigger: 'redeliver' });
    });
    return this.getDelivery(collectionId, webhookId, deliveryId);
  }

  // --- the delivery task -----------------------------------------------------------------

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

  /** A transaction of this service, run again when PostgreSQL aborts it for a deadlock. */
  private inTransaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return retryOnConflict(() => this.db.transaction(fn));
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
      await this.enqueue(tx, collectionId, { deliveryId: d.id, attempt: payload.attempt + 1, trigger: 'retry' }, runAt);
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
