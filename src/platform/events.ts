/**
 * Events: what a module tells the outside world about its changes, as signed webhook
 * deliveries (src/modules/webhooks). Each module declares the events it publishes in its
 * manifest (`events`), one `defineEvent` each: the type, a description, the JSON Schema of its
 * `data` (TypeBox) and an example. `buildApp` gathers every module's definitions into the
 * webhooks module's catalogue, which answers `GET /v1/webhooks/event-types`, fills the
 * OpenAPI document's `webhooks` section, checks what registrations subscribe to, and checks
 * every published event against its definition (strictly in tests: an event outside the
 * catalogue fails the change that published it).
 *
 * A module publishes through an `EventPublisher` (the webhooks service), inside the
 * transaction of the change, so a rolled-back change sends nothing.
 */
import type { TSchema } from 'typebox';
import type { Queryable } from '../db/index.ts';

/**
 * What an event is about, for the subscriptions' `filters`: a registration that narrows by
 * `appIds` hears only events whose `appId` is one of them, and so on. An event without the
 * value a filter narrows by does not pass that filter.
 */
export interface EventScope {
  appId?: string | null;
  linkId?: string | null;
  interactionId?: string | null;
  journeyId?: string | null;
}

/** An event to publish: its type and data (snake_case fields); id and time are given by the outbox. */
export interface NewEvent {
  type: string;
  data: Record<string, unknown>;
  /** What it is about, for filters; not part of the delivered body. */
  scope?: EventScope;
}

/** Writes events in the transaction `q` of the change that caused them. */
export interface EventPublisher {
  publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<unknown>;
  /**
   * True when the collection was found a moment ago without an active registration: a publish
   * would write nothing, so a writer may skip a transaction it needed only for its events.
   */
  hasNoSubscribers?(collectionId: string): boolean;
  /**
   * Whether an active registration of the collection subscribes to `type` (its filters aside):
   * a writer may note events for later publishing only when someone will want them.
   */
  subscribes?(q: Queryable, collectionId: string, type: string): Promise<boolean>;
}

export interface EventDefinition<Data extends TSchema = TSchema> {
  /** `family.name` (or `family.name.detail`); the family is what `family.*` subscribes to. */
  type: string;
  description: string;
  /** The JSON Schema of the event's `data`. */
  data: Data;
  /** An example `data`, valid against the schema (the catalogue test checks it). */
  example: Record<string, unknown>;
  /** Which `filters` keys can narrow this type (from the scope the module gives each event). */
  filterable?: readonly (keyof EventScope)[];
  /** false: sent to one registration on request (webhook.test), never subscribed to. */
  subscribable?: boolean;
}

export const defineEvent = <Data extends TSchema>(d: EventDefinition<Data>): EventDefinition<Data> => d;

/** The family of a type: what comes before its first dot (`journey.step.completed` → `journey`). */
export const eventFamily = (type: string): string => type.slice(0, Math.max(0, type.indexOf('.'))) || type;
