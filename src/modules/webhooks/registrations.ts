/**
 * Registrations of a collection (the `/v1/webhooks` API): a receiver url, the event types it
 * wants, active or not, a signing secret; their delivery logs, test events and redeliveries.
 * Events and delivery jobs are written through the outbox (outbox.ts).
 *
 * Concurrency: transactions take a registration's row before its deliveries (see
 * webhooks.repository.ts), and one aborted by a deadlock or serialization failure anyway is
 * run again (`retryOnConflict`). The registration cap is checked under a per-collection
 * lock, so parallel creates cannot overshoot it.
 */
import { type Db, type Queryable, retryOnConflict } from '../../db/index.ts';
import { badRequest, conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { type PageWithTotal, paging } from '../../platform/schemas.ts';
import { literalHostReason } from '../../platform/ssrf.ts';
import { httpUrl } from '../../platform/urls.ts';
import type { EventCatalogue, EventTypeEntry } from './catalogue.ts';
import type { WebhookOutbox } from './outbox.ts';
import { newSecret } from './signing.ts';
import * as repo from './webhooks.repository.ts';
import {
  type CreateWebhookBody,
  type Delivery,
  type DeliveryAttempt,
  type DeliveryListQuery,
  type EventEnvelope,
  RECOVER_MAX,
  type RecoverAnswer,
  type RotateSecretBody,
  TEST_EVENT_TYPE,
  type UpdateWebhookBody,
  type Webhook,
} from './webhooks.schema.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

function toWebhook(r: repo.WebhookRow, withSecret = false): Webhook {
  const w: Webhook = {
    id: r.id,
    url: r.url,
    events: r.events,
    filters: r.filters,
    active: r.active,
    description: r.description,
    maxPerSecond: r.max_per_second,
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

/** The setting that lets receivers on loopback and private networks be registered (development). */
const PRIVATE_NETWORKS_SETTING = 'WEBHOOK_ALLOW_PRIVATE_NETWORKS';

export class WebhookRegistrations {
  constructor(
    private readonly db: Db,
    private readonly settings: WebhooksSettings,
    /** Writes test events and queues redeliveries. */
    private readonly outbox: Pick<WebhookOutbox, 'writeEvents' | 'queueDelivery' | 'queueDeliveries' | 'forgetSilence'>,
    /** What `events` may name (400 for anything else). */
    private readonly catalogue: EventCatalogue,
  ) {}

  /** The catalogue: every type with its description, data schema and example. */
  eventTypes(): { items: EventTypeEntry[] } {
    return { items: this.catalogue.list() };
  }

  /** A replaced secret past its grace period signs nothing; it is not kept at rest either. */
  forgetRetiredSecrets(): Promise<number> {
    return repo.forgetRetiredSecrets(this.db);
  }

  /** A transaction of this service, run again when PostgreSQL aborts it for a deadlock. */
  private inTransaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return retryOnConflict(() => this.db.transaction(fn));
  }

  /** Refuses a receiver on a private network unless the setting allows them, naming the setting. */
  private checkUrl(raw: string): string {
    const u = httpUrl(raw);
    if (!this.settings.allowPrivateNetworks) {
      const host = u.hostname.toLowerCase();
      const literal = literalHostReason(host);
      if (literal || host === 'localhost' || host.endsWith('.localhost')) {
        throw badRequest(
          `url points at a ${literal?.reason ?? 'loopback'} address; receivers must be reachable on the public internet. ` +
            `For a receiver on this machine or your network during development, start the service with ${PRIVATE_NETWORKS_SETTING}=true (docs/webhooks.md#safety)`,
          { field: 'url', setting: PRIVATE_NETWORKS_SETTING },
        );
      }
    }
    return u.toString();
  }

  async create(collectionId: string, body: CreateWebhookBody): Promise<Webhook> {
    const url = this.checkUrl(body.url);
    this.catalogue.checkSubscription(body.events);
    const created = await this.db.transaction(async (tx) => {
      // Count and insert under one lock: otherwise parallel creates all see room for one more.
      await repo.lockRegistrations(tx, collectionId);
      if ((await repo.countWebhooks(tx, collectionId)) >= this.settings.maxRegistrations) {
        throw conflict(`A collection may hold at most ${this.settings.maxRegistrations} webhook registrations`);
      }
      const row = await repo.insertWebhook(tx, collectionId, {
        id: newId('wh'),
        url,
        events: body.events,
        filters: body.filters ?? null,
        active: body.active ?? true,
        description: body.description ?? null,
        max_per_second: body.maxPerSecond ?? null,
        secret: newSecret(),
      });
      return toWebhook(row, true);
    });
    // After the commit: a publish reading before it is not remembered as silence (outbox.ts).
    this.outbox.forgetSilence(collectionId);
    return created;
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
    if (body.events) this.catalogue.checkSubscription(body.events);
    const updated = await this.inTransaction(async (tx) => {
      // The registration first, then its deliveries (cancelPending): the module's lock order.
      const current = await repo.findWebhook(tx, collectionId, id, 'update');
      if (!current) throw notFound('Webhook');
      const row = await repo.updateWebhook(tx, collectionId, id, {
        url,
        events: body.events,
        filters: body.filters,
        description: body.description,
        maxPerSecond: body.maxPerSecond,
        active: body.active,
        // Turning a registration on (again) starts its failure count afresh.
        reenable: body.active === true,
      });
      if (body.active === false) await repo.cancelPending(tx, collectionId, id, 'registration deactivated');
      return toWebhook(row!);
    });
    this.outbox.forgetSilence(collectionId);
    return updated;
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

  async sendTest(collectionId: string, id: string): Promise<Delivery> {
    const deliveryId = await this.inTransaction(async (tx) => {
      // Kept active until the delivery is written; FOR SHARE lets other deliveries be written.
      const w = await repo.findWebhook(tx, collectionId, id, 'share');
      if (!w) throw notFound('Webhook');
      if (!w.active) throw conflict('The registration is not active; re-enable it with PATCH {"active": true} first');
      const written = await this.outbox.writeEvents(
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
  ): Promise<PageWithTotal<Delivery>> {
    if (!(await repo.findWebhook(this.db, collectionId, webhookId))) throw notFound('Webhook');
    const { limit, offset } = paging(query, 20);
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
    const delivery = toDelivery(row, await repo.attemptsOf(this.db, collectionId, [deliveryId]));
    return { ...delivery, payload: JSON.parse(row.body) as EventEnvelope };
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
      await this.outbox.queueDelivery(tx, collectionId, {
        deliveryId,
        attempt: d.attempt_count + 1,
        trigger: 'redeliver',
      });
    });
    return this.getDelivery(collectionId, webhookId, deliveryId);
  }

  /**
   * Sends again every failed or cancelled delivery of the registration created since `since`
   * (at most RECOVER_MAX a call, oldest first): the same events, a fresh set of automatic
   * retries each. The registration must be active: re-enable it first.
   */
  async recover(collectionId: string, webhookId: string, since: Date): Promise<RecoverAnswer> {
    return this.inTransaction(async (tx) => {
      // The registration before its deliveries (the lock order), held against a disable.
      const w = await repo.findWebhook(tx, collectionId, webhookId, 'share');
      if (!w) throw notFound('Webhook');
      if (!w.active) throw conflict('The registration is not active; re-enable it with PATCH {"active": true} first');
      const reopened = await repo.reopenDeliveries(
        tx,
        collectionId,
        webhookId,
        since,
        this.settings.maxRetries,
        RECOVER_MAX,
      );
      await this.outbox.queueDeliveries(
        tx,
        collectionId,
        reopened.map((d) => ({ deliveryId: d.id, attempt: d.attempt_count + 1, trigger: 'redeliver' as const })),
      );
      // Those reopened wait now: any failed one left is past the bound.
      const more = reopened.length === RECOVER_MAX && (await repo.hasFailedSince(tx, collectionId, webhookId, since));
      return { count: reopened.length, more };
    });
  }
}
