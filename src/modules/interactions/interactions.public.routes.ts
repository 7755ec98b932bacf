/**
 * Public routes: enabled types, submits under a type's permissions, a user's own events and
 * published summaries. Every refusal names its reason (the service's `refusal`).
 */
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute, errorResponse } from '../../platform/routes.ts';
import { ref } from '../../platform/schemas.ts';
import { PUBLIC_BASE, tags } from './interactions.paths.ts';
import * as S from './interactions.schema.ts';
import type { InteractionsService } from './interactions.service.ts';

/** Callable without a credential: the document's default security does not apply. */
const noCredential: Record<string, string[]>[] = [];

export const publicRoutes = (service: InteractionsService) => [
  defineRoute({
    method: 'GET',
    url: PUBLIC_BASE,
    operationId: 'interactions_publicList',
    tags,
    summary: 'List enabled interaction types (public)',
    security: noCredential,
    guard: guard.public,
    params: S.CollectionParams,
    query: S.ListTypesQuery,
    response: S.InteractionTypeList,
    handler: ({ scope, query }) => service.types.listTypes(scope.collectionId, query, true),
  }),
  defineRoute({
    method: 'GET',
    url: `${PUBLIC_BASE}/:id`,
    operationId: 'interactions_publicGet',
    tags,
    summary: 'Get an enabled interaction type (public)',
    security: noCredential,
    guard: guard.public,
    params: S.TypeParams,
    response: S.InteractionTypeRecord,
    handler: ({ scope }) => service.types.getType(scope.collectionId, scope.id, true),
  }),
  defineRoute({
    method: 'POST',
    url: `${PUBLIC_BASE}/submit`,
    operationId: 'interactions_submitPublicEvent',
    tags,
    summary: 'Submit an interaction event under the type’s permissions (refusals carry details.reason)',
    security: noCredential,
    guard: guard.public,
    params: S.CollectionParams,
    body: S.SubmitInteractionBody,
    response: S.SubmitInteractionResponse,
    responses: {
      401: errorResponse(
        'Refused by the type’s permissions: `error: FORBIDDEN` and `reason` (disabled, not_public, auth_required, origin_forbidden, before_start, after_end, identity_mismatch), also in details',
      ),
      409: errorResponse(
        'A duplicate: `error: FORBIDDEN`, `reason` duplicate (uniquePerUser) or duplicate_anon (uniquePerAnonId)',
      ),
    },
    handler: ({ scope, caller, body, req }) =>
      service.events.submit(scope.collectionId, caller, body, req.headers.origin),
  }),
  defineRoute({
    method: 'POST',
    url: `${PUBLIC_BASE}/by-user`,
    operationId: 'interactions_publicMyInteractions',
    tags,
    summary: 'The calling user’s own events, of types with allowOwnRead',
    guard: guard.user,
    params: S.CollectionParams,
    body: S.PublicInteractionsByUserRequest,
    response: Type.Array(ref(S.InteractionEventRow)),
    handler: ({ scope, caller, body }) => service.reads.byUser(scope.collectionId, caller, body),
  }),
  defineRoute({
    method: 'POST',
    url: `${PUBLIC_BASE}/counts-by-outcome`,
    operationId: 'interactions_publicCountsByOutcome',
    tags,
    summary: 'Counts by outcome of a type with allowPublicSummary (or allowAuthenticatedSummary and a token)',
    security: noCredential,
    guard: guard.public,
    params: S.CollectionParams,
    body: S.PublicInteractionsCountsByOutcomeRequest,
    response: Type.Array(ref(S.OutcomeCount)),
    handler: ({ scope, caller, body }) => service.reads.publicCounts(scope.collectionId, caller, body),
  }),
];
