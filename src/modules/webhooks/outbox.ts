/**
 * The event outbox: events are written in the transaction of the change that caused them,
 * together with one delivery row and one `webhooks.deliver` job per active registration
 * subscribed to their type. A committed change always has its deliveries queued, a
 * rolled-back one has none. Every delivery job of the module (first attempts, retries,
 * redeliveries, tests) is queued here.
 */
import { type Static, Type } from 'typebox';
import type { Db, Queryable } from '../../db/index.ts';
import type { EventScope, NewEvent } from '../../platform/events.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import type { JobQueue } from '../../platform/tasks.ts';
import { EventCatalogue } from './catalogue.ts';
import * as repo from './outbox.repository.ts';
import type { WebhookFilters } from './webhooks.repository.ts';
import type { EventEnvelope } from './webhooks.schema.ts';
import type { WebhooksSettings } from './webhooks.settings.ts';

export const DELIVER_TASK = 'webhooks.deliver';
/**
 * The most attempts one delivery job makes. Enough that the engine's cost per delivery (a
 * job's insert, claim and completion) becomes small next to the POST; few enough that one job
 * of a slow receiver holds its lane slot for few rounds of its in-flight limit.
 */
export const DELIVERIES_PER_JOB = 50;

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
  /**
   * More attempts of the same trigger made by this job (delivery.ts, "Delivery at scale"): the
   * deliveries of one change to one registration, or attempts put off together, go in one job
   * rather than one job each. Each item is judged alone, like a job of its own.
   */
  more: Type.Optional(
    Type.Array(Type.Object({ deliveryId: Type.String({ maxLength: 64 }), attempt: Type.Integer({ minimum: 1 }) }), {
      maxItems: DELIVERIES_PER_JOB - 1,
    }),
  ),
});
export type DeliverPayload = Static<typeof DeliverPayload>;
/** One attempt to queue, with when it is due (now when absent). */
export interface QueuedAttempt {
  /** Its registration: a job holds one registration's attempts only (a lane slot each, as before). */
  webhookId: string;
  deliveryId: string;
  attempt: number;
  trigger: DeliverPayload['trigger'];
  runAt?: Date;
}

export type { NewEvent } from '../../platform/events.ts';

/**
 * Queues one attempt of a delivery, and publishes the module's own events (what the delivery
 * task needs: the next attempt, and `webhook.disabled`).
 */
export interface DeliveryQueue {
  queueDelivery(q: Queryable, collectionId: string, payload: DeliverPayload, runAt?: Date): Promise<void>;
  /** Several attempts in one statement; neighbours with the same trigger and due time share a job. */
  queueAttempts(q: Queryable, collectionId: string, attempts: QueuedAttempt[]): Promise<void>;
  publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<string[]>;
}

/**
 * How long a collection found without an active registration is taken to have none, without
 * asking again (ms). Most collections subscribe to nothing; asking on every change cost a
 * statement per write (a case create kept 0.81 of its throughput). A registration created or
 * enabled in this process is heard at once; one created through another process hears changes
 * committed from at most this long after (docs/design/webhooks.md "Where nobody listens").
 */
export const SILENT_MEMORY_MS = 1000;

export class WebhookOutbox implements DeliveryQueue {
  /** Collections read without an active registration, until when that is believed (ms epoch). */
  private readonly silentUntil = new Map<string, number>();
  /**
   * Registration changes seen here per collection: a read that began before one may not be
   * remembered as silence (it may predate the new registration).
   */
  private readonly changes = new Map<string, number>();
  constructor(
    private readonly db: Db,
    private readonly settings: Pick<WebhooksSettings, 'maxRetries' | 'logRetentionMs'>,
    /** Where delivery jobs go: the job engine (modules/jobs). */
    private readonly jobs: JobQueue,
    /** Every type published, checked here (catalogue.ts). */
    private readonly catalogue: EventCatalogue,
  ) {}

  /**
   * Writes events and queues their deliveries. Call inside the transaction of the change
   * that caused them (`q` is that transaction). Returns the ids of the events stored (those
   * with at least one active subscribed registration).
   */
  async publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<string[]> {
    if (events.length === 0) return [];
    for (const e of events) this.catalogue.check(e);
    const subscriptions = await this.subscriptionsOf(q, collectionId);
    if (subscriptions.length === 0) return [];
    const written = await this.writeEvents(q, collectionId, events, (e) =>
      subscriptions
        .filter((s) => EventCatalogue.covers(s.events, e.type) && passes(s.filters, e.scope))
        .map((s) => s.id),
    );
    return written.eventIds;
  }

  /**
   * Whether the collection was found without an active registration a moment ago
   * (SILENT_MEMORY_MS): a publish then writes nothing and asks nothing. A caller may skip
   * building its events, or a transaction it needed only for them.
   */
  hasNoSubscribers(collectionId: string): boolean {
    const until = this.silentUntil.get(collectionId);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.silentUntil.delete(collectionId);
    return false;
  }

  /** Whether an active registration subscribes to `type` (filters aside); remembers silence as publish does. */
  async subscribes(q: Queryable, collectionId: string, type: string): Promise<boolean> {
    return (await this.subscriptionsOf(q, collectionId)).some((s) => EventCatalogue.covers(s.events, type));
  }

  /**
   * The collection's active registrations (locked against deletion, outbox.repository.ts),
   * or none without asking while its silence is remembered. A read that finds none is
   * remembered, unless a registration changed here since it began (it may predate that one).
   */
  private async subscriptionsOf(q: Queryable, collectionId: string): ReturnType<typeof repo.activeSubscriptions> {
    if (this.hasNoSubscribers(collectionId)) return [];
    const seen = this.changes.get(collectionId) ?? 0;
    const subscriptions = await repo.activeSubscriptions(q, collectionId);
    if (subscriptions.length === 0 && (this.changes.get(collectionId) ?? 0) === seen) {
      if (this.silentUntil.size > 10_000) this.silentUntil.clear(); // bounded: many tenants forget at once
      this.silentUntil.set(collectionId, Date.now() + SILENT_MEMORY_MS);
    }
    return subscriptions;
  }

  /** A registration of the collection was created or changed here: ask again at the next publish. */
  forgetSilence(collectionId: string): void {
    this.silentUntil.delete(collectionId);
    this.changes.set(collectionId, (this.changes.get(collectionId) ?? 0) + 1);
  }

  /**
   * Writes events to the given recipients: one statement for the events, one for their
   * deliveries, then one job per delivery.
   */
  async writeEvents(
    q: Queryable,
    collectionId: string,
    events: NewEvent[],
    recipients: (event: NewEvent) => string[],
    trigger: DeliverPayload['trigger'] = 'automatic',
  ): Promise<{ eventIds: string[]; deliveryIds: string[] }> {
    const createdAt = new Date();
    // An event nobody is subscribed to is not stored: the outbox holds what must be sent.
    const rows = events
      .map((e) => ({ e, to: recipients(e) }))
      .filter(({ to }) => to.length > 0)
      .map(({ e, to }) => {
        const envelope: EventEnvelope = {
          type: e.type,
          id: newTimeOrderedId('evt'),
          created_at: createdAt.toISOString(),
          data: e.data,
        };
        return { id: envelope.id, type: e.type, body: JSON.stringify(envelope), createdAt, to };
      });
    if (rows.length === 0) return { eventIds: [], deliveryIds: [] };
    const deliveries = rows.flatMap((r) =>
      r.to.map((webhookId) => ({
        id: newTimeOrderedId('dlv'),
        webhookId,
        eventId: r.id,
        retries: this.settings.maxRetries,
      })),
    );
    await repo.insertEvents(q, collectionId, rows, deliveries);
    // One job per registration (and DELIVERIES_PER_JOB), all in one statement: a job per
    // delivery cost a statement and a job each (2,000 per batch of clicks).
    const byWebhook = new Map<string, QueuedAttempt[]>();
    for (const d of deliveries) {
      const list = byWebhook.get(d.webhookId) ?? [];
      list.push({ webhookId: d.webhookId, deliveryId: d.id, attempt: 1, trigger });
      byWebhook.set(d.webhookId, list);
    }
    await this.queueAttempts(q, collectionId, [...byWebhook.values()].flat());
    return { eventIds: rows.map((r) => r.id), deliveryIds: deliveries.map((d) => d.id) };
  }

  /** Several attempts in one statement (a recover), a job each. */
  async queueDeliveries(q: Queryable, collectionId: string, payloads: DeliverPayload[]): Promise<void> {
    if (payloads.length === 0) return;
    await this.jobs.enqueueMany(
      q,
      collectionId,
      payloads.map((payload) => ({ task: DELIVER_TASK, payload, maxAttempts: 5 })),
    );
  }

  /**
   * Attempts in one statement: neighbours in the list with the same registration, trigger and
   * due time share a job (up to DELIVERIES_PER_JOB), so callers list them together.
   */
  async queueAttempts(q: Queryable, collectionId: string, attempts: QueuedAttempt[]): Promise<void> {
    if (attempts.length === 0) return;
    const jobs: { task: string; payload: DeliverPayload; runAt?: Date; maxAttempts: number }[] = [];
    let open: { payload: DeliverPayload & { more: { deliveryId: string; attempt: number }[] } } | undefined;
    let last: QueuedAttempt | undefined;
    for (const a of attempts) {
      const joins =
        open &&
        last &&
        last.webhookId === a.webhookId &&
        last.trigger === a.trigger &&
        last.runAt?.getTime() === a.runAt?.getTime() &&
        open.payload.more.length < DELIVERIES_PER_JOB - 1;
      if (open && joins) open.payload.more.push({ deliveryId: a.deliveryId, attempt: a.attempt });
      else {
        open = { payload: { deliveryId: a.deliveryId, attempt: a.attempt, trigger: a.trigger, more: [] } };
        jobs.push({ task: DELIVER_TASK, payload: open.payload, runAt: a.runAt, maxAttempts: 5 });
      }
      last = a;
    }
    // A job of one attempt keeps the payload it always had.
    for (const j of jobs) if (j.payload.more?.length === 0) delete j.payload.more;
    await this.jobs.enqueueMany(q, collectionId, jobs);
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

/** The filters key of each scope key. */
const FILTER_OF = {
  appId: 'appIds',
  linkId: 'linkIds',
  interactionId: 'interactionIds',
  journeyId: 'journeyIds',
} as const satisfies Record<keyof EventScope, keyof WebhookFilters>;

/** Whether an event passes a registration's filters: each list given must hold what the event is about. */
function passes(filters: WebhookFilters | null, scope: EventScope | undefined): boolean {
  if (!filters) return true;
  for (const [key, list] of Object.entries(FILTER_OF) as [keyof EventScope, keyof WebhookFilters][]) {
    const allowed = filters[list];
    if (!allowed) continue;
    const value = scope?.[key];
    if (value == null || !allowed.includes(value)) return false;
  }
  return true;
}
