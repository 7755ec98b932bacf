/**
 * The event outbox: events are written in the transaction of the change that caused them,
 * together with one delivery row and one `webhooks.deliver` job per active registration
 * subscribed to their type. A committed change always has its deliveries queued, a
 * rolled-back one has none. Every delivery job of the module (first attempts, retries,
 * redeliveries, tests) is queued here.
 */
import { type Static, Type } from 'typebox';
import type { Db, Queryable } from '../../db/index.ts';
import { newId } from '../../platform/ids.ts';
import * as repo from './webhooks.repository.ts';
import type { EventEnvelope } from './webhooks.schema.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

export const DELIVER_TASK = 'webhooks.deliver';

/** The part of the job engine this module needs (see src/modules/jobs). */
export interface JobQueue {
  enqueue(
    q: Queryable,
    collectionId: string,
    options: { task: string; payload?: unknown; runAt?: Date; maxAttempts?: number },
  ): Promise<unknown>;
  enqueueMany(
    q: Queryable,
    collectionId: string,
    list: { task: string; payload?: unknown; runAt?: Date; maxAttempts?: number }[],
  ): Promise<unknown>;
}

export const DeliverPayload = Type.Object({
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

/** An event to publish: its type and data; id and time are given here. */
export interface NewEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * Queues one attempt of a delivery, and publishes the module's own events (what the delivery
 * task needs: the next attempt, and `webhook.disabled`).
 */
export interface DeliveryQueue {
  queueDelivery(q: Queryable, collectionId: string, payload: DeliverPayload, runAt?: Date): Promise<void>;
  publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<string[]>;
}

export class WebhookOutbox implements DeliveryQueue {
  constructor(
    private readonly db: Db,
    private readonly settings: Pick<WebhooksSettings, 'maxRetries' | 'logRetentionMs'>,
    /** Where delivery jobs go: the job engine (modules/jobs). */
    private readonly jobs: JobQueue,
  ) {}

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

  /**
   * Writes events to the given recipients: one statement for the events, one for their
   * deliveries, then one job per delivery.
   */
  async writeEvents(
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
    for (const d of deliveries) await this.queueDelivery(q, collectionId, { deliveryId: d.id, attempt: 1, trigger });
    return { eventIds: rows.map((r) => r.id), deliveryIds: deliveries.map((d) => d.id) };
  }

  /** Several attempts in one statement (a recover). */
  async queueDeliveries(q: Queryable, collectionId: string, payloads: DeliverPayload[]): Promise<void> {
    if (payloads.length === 0) return;
    await this.jobs.enqueueMany(
      q,
      collectionId,
      payloads.map((payload) => ({ task: DELIVER_TASK, payload, maxAttempts: 5 })),
    );
  }

  async queueDelivery(q: Queryable, collectionId: string, payload: DeliverPayload, runAt?: Date): Promise<void> {
    // The engine's own retries only cover a crash or a database error inside the handler;
    // delivery failures are scheduled by this module (delivery.ts).
    await this.jobs.enqueue(q, collectionId, { task: DELIVER_TASK, payload, runAt, maxAttempts: 5 });
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
}
