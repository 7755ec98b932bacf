/** An event row as the API answers it and export files hold it. */
import type * as repo from './interactions.events.repository.ts';
import { InteractionEventRow } from './interactions.schema.ts';

/**
 * Columns that may be unset, by the row field that shows them: a field is present when the
 * event has a value and absent otherwise (never null).
 */
const OPTIONAL_FIELDS = [
  ['appId', 'app_id'],
  ['scope', 'scope'],
  ['broadcastId', 'broadcast_id'],
  ['journeyId', 'journey_id'],
  ['userId', 'user_id'],
  ['contactId', 'contact_id'],
  ['anonId', 'anon_id'],
  ['outcome', 'outcome'],
  ['metadata', 'metadata'],
  ['productId', 'product_id'],
  ['proofId', 'proof_id'],
  ['variantId', 'variant_id'],
  ['batchId', 'batch_id'],
  ['source', 'source_tag'],
  ['eventType', 'event_type'],
  ['clickId', 'click_id'],
] as const satisfies readonly (readonly [keyof InteractionEventRow, keyof repo.EventRow])[];

/** Every field a row has by name; an extra of the same name never shows in its place. */
const ROW_FIELDS = new Set(Object.keys(InteractionEventRow.properties));

/**
 * The row: its own fields, then the extras sent with the event as further top-level fields
 * (the original's rows are open objects), leaving out any extra named like a row field.
 * Built with Object.fromEntries so that an extra named `__proto__` stays an own field.
 */
export function toEventRow(e: repo.EventRow): InteractionEventRow {
  const entries: [string, unknown][] = [];
  if (e.extra) for (const entry of Object.entries(e.extra)) if (!ROW_FIELDS.has(entry[0])) entries.push(entry);
  entries.push(
    ['orgId', e.org_id ?? e.collection_id],
    ['collectionId', e.collection_id],
    ['eventId', e.event_id],
    ['timestamp', e.occurred_at.toISOString()],
    ['interactionId', e.interaction_id],
  );
  for (const [field, column] of OPTIONAL_FIELDS) if (e[column] !== null) entries.push([field, e[column]]);
  entries.push(['channel', e.source], ['deleted', e.deleted_at !== null]);
  return Object.fromEntries(entries) as InteractionEventRow;
}
