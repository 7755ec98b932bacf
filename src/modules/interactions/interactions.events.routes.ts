/** Admin routes that write events: append, and the two forms of an event update. */
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import type { InteractionEventWriter } from './interactions.events.service.ts';
import { ADMIN_BASE, tags } from './interactions.paths.ts';
import * as S from './interactions.schema.ts';

export const eventRoutes = (events: InteractionEventWriter) => [
  defineRoute({
    method: 'POST',
    url: `${ADMIN_BASE}/append`,
    operationId: 'interactions_append',
    tags,
    summary: 'Append an interaction event (admin; no permission checks; userId or contactId required)',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.AppendInteractionBody,
    response: S.SubmitInteractionResponse,
    handler: ({ scope, body }) => events.append(scope.collectionId, body),
  }),
  defineRoute({
    method: 'PATCH',
    url: `${ADMIN_BASE}/events/:eventId`,
    operationId: 'interactions_updateEvent',
    tags,
    summary: 'Change the latest version of an event, or mark all its versions deleted / restored',
    guard: guard.admin,
    params: S.EventParams,
    body: S.UpdateEventBody,
    response: S.InteractionEventRow,
    handler: ({ scope, body }) => events.updateEvent(scope.collectionId, scope.eventId, body),
  }),
  defineRoute({
    method: 'POST',
    url: `${ADMIN_BASE}/events/update`,
    operationId: 'interactions_updateEventByBody',
    tags,
    summary: 'Update an event named in the body (eventId, its interactionId and userId or contactId)',
    description:
      'The same update as `PATCH …/events/{eventId}`, with the event named in the body: eventId, and the interactionId, appId, userId and contactId it must have (userId or contactId required; an event that differs is 404 and nothing changes). outcome, scope, broadcastId, journeyId, metadata, orgId, productId, proofId, variantId, batchId, source and eventType change the latest version (null clears); `status: deleted` marks every version deleted, `active` restores them. timestamp and further fields are refused (400 naming the field). Answers `{success: true}`.',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.UpdateInteractionBody,
    response: S.UpdateInteractionResponse,
    handler: ({ scope, body }) => events.updateEventByBody(scope.collectionId, body),
  }),
];
