/**
 * What an effect's `{{token}}`s read, and how they are replaced: the guide's context of a stored
 * event (docs/interactions.md, Effects), and the standard body of a webhook effect without one.
 */
import { isObject } from '../../platform/schemas.ts';
import type * as repo from './interactions.events.repository.ts';

export const TOKEN = /\{\{\s*([A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*)\s*\}\}/g;

/** What `{{token}}`s read: the guide's context of an event (docs/interactions.md, Effects). */
export interface EventContext {
  eventId: string;
  collectionId: string;
  appId: string | null;
  interactionId: string;
  contactId: string | null;
  userId: string | null;
  anonId: string | null;
  productId: string | null;
  proofId: string | null;
  variantId: string | null;
  batchId: string | null;
  outcome: string | null;
  eventType: string | null;
  source: string | null;
  channel: string;
  scope: string | null;
  broadcastId: string | null;
  journeyId: string | null;
  timestamp: string;
  metadata: Record<string, unknown>;
}

export function eventContext(e: repo.EventRow): EventContext {
  return {
    eventId: e.event_id,
    collectionId: e.collection_id,
    appId: e.app_id,
    interactionId: e.interaction_id,
    contactId: e.contact_id,
    userId: e.user_id,
    anonId: e.anon_id,
    productId: e.product_id,
    proofId: e.proof_id,
    variantId: e.variant_id,
    batchId: e.batch_id,
    outcome: e.outcome,
    eventType: e.event_type,
    source: e.source_tag,
    channel: e.source,
    scope: e.scope,
    broadcastId: e.broadcast_id,
    journeyId: e.journey_id,
    timestamp: e.occurred_at.toISOString(),
    metadata: e.metadata ?? {},
  };
}

/** A dot path's value; own fields only (`{{metadata.constructor}}` is no value). */
function lookup(context: EventContext, path: string): unknown {
  let value: unknown = context;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A token's text: null and undefined are '', objects their JSON. */
function tokenText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Every `{{token}}` of a string replaced by its text (`encode` applied to each, for URLs). */
export function interpolateString(s: string, context: EventContext, encode = (t: string) => t): string {
  return s.replace(TOKEN, (_, path: string) => encode(tokenText(lookup(context, path))));
}

/** A template (object, array, string) with every string interpolated; keys are kept as written. */
export function interpolate(template: unknown, context: EventContext): unknown {
  if (typeof template === 'string') return interpolateString(template, context);
  if (Array.isArray(template)) return template.map((v) => interpolate(v, context));
  if (isObject(template)) {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, interpolate(v, context)]));
  }
  return template;
}

/** The body a webhook effect without `body` sends: the guide's standard payload. */
export function standardBody(c: EventContext) {
  return {
    eventId: c.eventId,
    collectionId: c.collectionId,
    appId: c.appId,
    interactionId: c.interactionId,
    contactId: c.contactId,
    userId: c.userId,
    productId: c.productId,
    proofId: c.proofId,
    outcome: c.outcome,
    eventType: c.eventType,
    metadata: c.metadata,
    timestamp: c.timestamp,
  };
}
