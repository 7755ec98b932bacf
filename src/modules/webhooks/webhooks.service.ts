/**
 * The webhooks module's service, composed by its manifest (index.ts) from three parts, each
 * given its collaborators through its constructor:
 * - registrations (registrations.ts): the `/v1/webhooks` API;
 * - the outbox (outbox.ts): events written in the transaction of a change, and every
 *   delivery job queued;
 * - delivery (delivery.ts): the `webhooks.deliver` task, retries, disabling.
 * Here: the event publisher other modules are given, and the housekeeping the manifest
 * declares (hourly system schedules, docs/schedules.md).
 */
import type { Queryable } from '../../db/index.ts';
import type { EventCatalogue } from './catalogue.ts';
import type { WebhookDelivery } from './delivery.ts';
import type { NewEvent, WebhookOutbox } from './outbox.ts';
import type { WebhookRegistrations } from './registrations.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

export class WebhooksService {
  constructor(
    readonly settings: WebhooksSettings,
    /** Every event type published (buildApp adds each module's). */
    readonly catalogue: EventCatalogue,
    readonly registrations: WebhookRegistrations,
    readonly outbox: WebhookOutbox,
    readonly delivery: WebhookDelivery,
  ) {}

  /**
   * Writes events and queues their deliveries, inside the transaction `q` of the change that
   * caused them (the `EventPublisher` other modules are given).
   */
  publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<string[]> {
    return this.outbox.publish(q, collectionId, events);
  }

  /** See EventPublisher (platform/events.ts) and the outbox's SILENT_MEMORY_MS. */
  hasNoSubscribers(collectionId: string): boolean {
    return this.outbox.hasNoSubscribers(collectionId);
  }

  /** See EventPublisher (platform/events.ts). */
  subscribes(q: Queryable, collectionId: string, type: string): Promise<boolean> {
    return this.outbox.subscribes(q, collectionId, type);
  }

  /** Deletes events older than the retention whose deliveries are all final. */
  prune(now = Date.now()): Promise<number> {
    return this.outbox.prune(now);
  }

  /** A replaced secret past its grace period signs nothing; it is not kept at rest either. */
  forgetRetiredSecrets(): Promise<number> {
    return this.registrations.forgetRetiredSecrets();
  }

  async close(): Promise<void> {
    await this.delivery.close();
  }
}
