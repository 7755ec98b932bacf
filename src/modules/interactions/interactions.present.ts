/** An event row as the API answers it and export files hold it. */
import type * as repo from './interactions.repository.ts';
import type { InteractionEventRow } from './interactions.schema.ts';

export function toEventRow(e: repo.EventRow): InteractionEventRow {
  return {
    orgId: e.collection_id,
    collectionId: e.collection_id,
    eventId: e.event_id,
    timestamp: e.occurred_at.toISOString(),
    appId: e.app_id,
    interactionId: e.interaction_id,
    scope: e.scope,
    broadcastId: e.broadcast_id,
    journeyId: e.journey_id,
    userId: e.user_id,
    contactId: e.contact_id,
    anonId: e.anon_id,
    outcome: e.outcome,
    metadata: e.metadata,
    source: e.source,
    deleted: e.deleted_at !== null,
  };
}
