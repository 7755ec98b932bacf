/**
 * Webhooks: signed HTTP notifications of a collection's events to receivers it registers.
 * - registration: a receiver url, the event types it wants, active or not, a signing secret.
 * - event: one thing that happened (`link.created`, ...), written to the outbox (`webhook_events`)
 *   in the transaction of the change; its envelope `{type, id, created_at, data}` is the body.
 * - delivery: one event to one registration; made of attempts (the delivery log).
 * - attempt: one signed POST, made by a `webhooks.deliver` job; failures are retried 3 times
 *   with backoff; a delivery fails when its last retry fails, and 10 consecutive failed
 *   deliveries disable the registration (recover sends them again).
 * - SSRF guard: receivers must resolve to public addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS).
 * - catalogue: every event type of every module (their manifests' `events`), with the JSON
 *   Schema of its data; registrations subscribe to types, families (`case.*`) or `*`.
 */
import { defineModule, EVERY_ROLE } from '../../platform/module.ts';
import { EventCatalogue } from './catalogue.ts';
import { deliveriesRoutes } from './deliveries.routes.ts';
import { WebhookDelivery } from './delivery.ts';
import { WebhookOutbox } from './outbox.ts';
import { WebhookRegistrations } from './registrations.ts';
import { WebhookSender } from './sender.ts';
import { webhookEvents } from './webhooks.events.ts';
import { webhooksMetrics } from './webhooks.metrics.ts';
import { webhooksRoutes } from './webhooks.routes.ts';
import { WebhooksService } from './webhooks.service.ts';
import { webhooksSettings } from './webhooks.settings.ts';

export { forbiddenAddressReason } from '../../platform/ssrf.ts';
export { EventCatalogue, type EventTypeEntry, eventSchemaName } from './catalogue.ts';
export { WebhookDelivery } from './delivery.ts';
export { retryDelayMs } from './delivery-failures.ts';
export { DELIVER_TASK, type DeliverPayload, type NewEvent, WebhookOutbox } from './outbox.ts';
export { WebhookRegistrations } from './registrations.ts';
export { WebhookSender } from './sender.ts';
export { newSecret, serviceSignature, signatureHeaders, standardSignature } from './signing.ts';
export { RotateSecretBody, TEST_EVENT_TYPE } from './webhooks.schema.ts';
export { WebhooksService } from './webhooks.service.ts';
export { type WebhooksSettings, webhooksSettings } from './webhooks.settings.ts';

export const webhooksModule = defineModule({
  name: 'webhooks',
  needs: [],
  settings: webhooksSettings,
  tables: { owns: ['webhooks', 'webhook_events', 'webhook_deliveries', 'webhook_attempts'], reads: ['collections'] },
  // The outbox queues on the job engine; delivery and registrations queue through the outbox.
  // The catalogue starts empty: buildApp adds every module's `events`, this one's included.
  create: ({ db, log, queue, metrics }, settings) => {
    const catalogue = new EventCatalogue(settings.eventsStrict, log);
    const outbox = new WebhookOutbox(db, settings, queue, catalogue);
    const sender = new WebhookSender({
      allowPrivateNetworks: settings.allowPrivateNetworks,
      timeoutMs: settings.timeoutMs,
      responseExcerptBytes: settings.responseExcerptBytes,
    });
    const delivery = new WebhookDelivery(settings, log, sender, outbox, webhooksMetrics(metrics, queue));
    const registrations = new WebhookRegistrations(db, settings, outbox, catalogue);
    return new WebhooksService(settings, catalogue, registrations, outbox, delivery);
  },
  routes: (service) => [...webhooksRoutes(service), ...deliveriesRoutes(service)],
  events: webhookEvents,
  tasks: (service) => [service.delivery.deliverTask()],
  // Every process closes the sender's connections.
  background: (service) => [{ roles: EVERY_ROLE, start: () => undefined, stop: () => service.close() }],
  // Hourly, in one worker of the deployment (system schedules); both are idempotent.
  housekeeping: (service) => [
    {
      name: 'webhooks.prune',
      cron: '17 * * * *',
      description: 'Deletes events older than WEBHOOK_LOG_RETENTION_DAYS whose deliveries are all final',
      run: () => service.prune(),
    },
    {
      name: 'webhooks.forgetRetiredSecrets',
      cron: '17 * * * *',
      description: 'Erases replaced signing secrets whose grace period is over',
      run: () => service.forgetRetiredSecrets(),
    },
  ],
});
