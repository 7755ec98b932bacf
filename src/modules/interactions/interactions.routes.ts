import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ANALYTICS_SOURCE_HEADER } from '../../platform/analytics.ts';
import { guard } from '../../platform/auth.ts';
import { errorResponses, ref } from '../../platform/schemas.ts';
import * as S from './interactions.schema.ts';
import type { InteractionsService } from './interactions.service.ts';

export const interactionsRoutes: FastifyPluginAsyncTypebox<{ service: InteractionsService }> = async (
  app,
  { service },
) => {
  for (const schema of [
    S.InteractionTypeRecord,
    S.InteractionTypeList,
    S.CreateInteractionTypeBody,
    S.UpdateInteractionTypeBody,
    S.AppendInteractionBody,
    S.SubmitInteractionBody,
    S.SubmitInteractionResponse,
    S.UpdateEventBody,
    S.UpdateInteractionBody,
    S.UpdateInteractionResponse,
    S.InteractionEventRow,
    S.AdminInteractionsQueryRequest,
    S.AdminInteractionsCountsByOutcomeRequest,
    S.OutcomeCount,
    S.AdminInteractionsAggregateRequest,
    S.AdminInteractionsAggregateRow,
    S.AdminInteractionsAggregateResponse,
    S.PublicInteractionsByUserRequest,
    S.PublicInteractionsCountsByOutcomeRequest,
  ]) {
    app.addSchema(schema);
  }
  const tags = ['interactions'];
  const typeReply = { 200: ref(S.InteractionTypeRecord), ...errorResponses };
  const listReply = { 200: ref(S.InteractionTypeList), ...errorResponses };
  const eventsReply = { 200: Type.Array(ref(S.InteractionEventRow)), ...errorResponses };
  const countsReply = { 200: Type.Array(ref(S.OutcomeCount)), ...errorResponses };
  const submitReply = {
    200: ref(S.SubmitInteractionResponse),
    ...errorResponses,
    401: {
      ...Type.Ref('ErrorBody'),
      description:
        'Refused by the type’s permissions: `error: FORBIDDEN` and `reason` (disabled, not_public, auth_required, origin_forbidden, before_start, after_end, identity_mismatch), also in details',
    },
    409: {
      ...Type.Ref('ErrorBody'),
      description:
        'A duplicate: `error: FORBIDDEN`, `reason` duplicate (uniquePerUser) or duplicate_anon (uniquePerAnonId)',
    },
  };
  const base = '/admin/collection/:collectionId/interactions';
  const pub = '/public/collection/:collectionId/interactions';

  // ---------------------------------------------------------------- admin: types
  app.post(
    base,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_create',
        summary: 'Create an interaction type',
        params: S.CollectionParams,
        body: ref(S.CreateInteractionTypeBody),
        response: { ...typeReply, 409: { ...Type.Ref('ErrorBody'), description: 'The id is taken' } },
      },
    },
    async (req) => service.createType(req.params.collectionId, req.body),
  );

  app.get(
    base,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_list',
        summary: 'List interaction types',
        params: S.CollectionParams,
        querystring: S.ListTypesQuery,
        response: listReply,
      },
    },
    async (req) => service.listTypes(req.params.collectionId, req.query, false),
  );

  app.get(
    `${base}/:id`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_get',
        summary: 'Get an interaction type',
        params: S.TypeParams,
        response: typeReply,
      },
    },
    async (req) => service.getType(req.params.collectionId, req.params.id, false),
  );

  app.patch(
    `${base}/:id`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_update',
        summary: 'Update an interaction type (permissions and data merge key by key)',
        description:
          'Each key of `permissions` replaces that key of the stored permissions; `null` removes the key, so it takes its default again; keys not sent are kept. `{permissions: {endAt}}` changes only endAt. `data` merges the same way at its top level: `{data: {display}}` replaces data.display and keeps data.effects, data.scopes and every other key; `null` removes a key. `appId` replaces the stored one. The update is atomic: concurrent updates of different keys all land, and startAt must not be after endAt in the merged permissions (else 400, nothing changed).',
        params: S.TypeParams,
        body: ref(S.UpdateInteractionTypeBody),
        response: typeReply,
      },
    },
    async (req) => service.updateType(req.params.collectionId, req.params.id, req.body),
  );

  app.delete(
    `${base}/:id`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_remove',
        summary: 'Remove an interaction type (its events are kept)',
        params: S.TypeParams,
        response: { 200: Type.Object({ success: Type.Boolean(), id: Type.String() }), ...errorResponses },
      },
    },
    async (req) => service.removeType(req.params.collectionId, req.params.id),
  );

  // ---------------------------------------------------------------- admin: events
  app.post(
    `${base}/append`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_append',
        summary: 'Append an interaction event (admin; no permission checks; userId or contactId required)',
        params: S.CollectionParams,
        body: ref(S.AppendInteractionBody),
        response: { 200: ref(S.SubmitInteractionResponse), ...errorResponses },
      },
    },
    async (req) => service.append(req.params.collectionId, req.body),
  );

  app.patch(
    `${base}/events/:eventId`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_updateEvent',
        summary: 'Change the latest version of an event, or mark all its versions deleted / restored',
        params: S.EventParams,
        body: ref(S.UpdateEventBody),
        response: { 200: ref(S.InteractionEventRow), ...errorResponses },
      },
    },
    async (req) => service.updateEvent(req.params.collectionId, req.params.eventId, req.body),
  );

  app.post(
    `${base}/events/update`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_updateEventByBody',
        summary: 'Update an event named in the body (eventId, its interactionId and userId or contactId)',
        description:
          'The same update as `PATCH …/events/{eventId}`, with the event named in the body: eventId, and the interactionId, appId, userId and contactId it must have (userId or contactId required; an event that differs is 404 and nothing changes). outcome, scope, broadcastId, journeyId, metadata, orgId, productId, proofId, variantId, batchId, source and eventType change the latest version (null clears); `status: deleted` marks every version deleted, `active` restores them. timestamp and further fields are refused (400 naming the field). Answers `{success: true}`.',
        params: S.CollectionParams,
        body: ref(S.UpdateInteractionBody),
        response: { 200: ref(S.UpdateInteractionResponse), ...errorResponses },
      },
    },
    async (req) => service.updateEventByBody(req.params.collectionId, req.body),
  );

  app.post(
    `${base}/query`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_query',
        summary: 'Query interaction events with filters and optional includes',
        params: S.CollectionParams,
        body: ref(S.AdminInteractionsQueryRequest),
        response: eventsReply,
      },
    },
    async (req) => service.query(req.params.collectionId, req.body),
  );

  app.post(
    `${base}/counts-by-outcome`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_countsByOutcome',
        summary: 'Count events by outcome (optionally each identity’s latest event only)',
        params: S.CollectionParams,
        body: ref(S.AdminInteractionsCountsByOutcomeRequest),
        response: countsReply,
      },
    },
    async (req, reply) => {
      const { answer, source } = await service.countsByOutcome(req.params.collectionId, req.body);
      reply.header(ANALYTICS_SOURCE_HEADER, source);
      return answer;
    },
  );

  app.post(
    `${base}/aggregate`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_aggregate',
        summary: 'Grouped numeric aggregates (count, sum, avg, min, max) of a metadata field',
        params: S.CollectionParams,
        body: ref(S.AdminInteractionsAggregateRequest),
        response: { 200: ref(S.AdminInteractionsAggregateResponse), ...errorResponses },
      },
    },
    async (req) => service.aggregate(req.params.collectionId, req.body),
  );

  app.get(
    `${base}/exports/:jobId/download`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'interactions_downloadExport',
        summary: 'Download the file of a finished interactions.export job (NDJSON or CSV)',
        params: S.ExportParams,
        response: {
          200: Type.String({ description: 'The file: application/x-ndjson or text/csv' }),
          ...errorResponses,
        },
      },
    },
    async (req, reply) => {
      const file = await service.openExport(req.params.collectionId, req.params.jobId);
      reply
        .type(file.contentType)
        .header('content-length', file.byteCount)
        .header('content-disposition', `attachment; filename="${file.fileName}"`);
      return reply.send(file.stream);
    },
  );

  // ---------------------------------------------------------------- public
  app.get(
    pub,
    {
      onRequest: guard.public,
      schema: {
        tags,
        operationId: 'interactions_publicList',
        summary: 'List enabled interaction types (public)',
        security: [],
        params: S.CollectionParams,
        querystring: S.ListTypesQuery,
        response: listReply,
      },
    },
    async (req) => service.listTypes(req.params.collectionId, req.query, true),
  );

  app.get(
    `${pub}/:id`,
    {
      onRequest: guard.public,
      schema: {
        tags,
        operationId: 'interactions_publicGet',
        summary: 'Get an enabled interaction type (public)',
        security: [],
        params: S.TypeParams,
        response: typeReply,
      },
    },
    async (req) => service.getType(req.params.collectionId, req.params.id, true),
  );

  app.post(
    `${pub}/submit`,
    {
      onRequest: guard.public,
      schema: {
        tags,
        operationId: 'interactions_submitPublicEvent',
        summary: 'Submit an interaction event under the type’s permissions (refusals carry details.reason)',
        security: [],
        params: S.CollectionParams,
        body: ref(S.SubmitInteractionBody),
        response: submitReply,
      },
    },
    async (req) => service.submit(req.params.collectionId, req.caller, req.body, req.headers.origin),
  );

  app.post(
    `${pub}/by-user`,
    {
      onRequest: guard.user,
      schema: {
        tags,
        operationId: 'interactions_publicMyInteractions',
        summary: 'The calling user’s own events, of types with allowOwnRead',
        params: S.CollectionParams,
        body: ref(S.PublicInteractionsByUserRequest),
        response: eventsReply,
      },
    },
    async (req) => service.byUser(req.params.collectionId, req.caller, req.body),
  );

  app.post(
    `${pub}/counts-by-outcome`,
    {
      onRequest: guard.public,
      schema: {
        tags,
        operationId: 'interactions_publicCountsByOutcome',
        summary: 'Counts by outcome of a type with allowPublicSummary (or allowAuthenticatedSummary and a token)',
        security: [],
        params: S.CollectionParams,
        body: ref(S.PublicInteractionsCountsByOutcomeRequest),
        response: countsReply,
      },
    },
    async (req) => service.publicCounts(req.params.collectionId, req.caller, req.body),
  );
};
