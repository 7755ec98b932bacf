import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ANALYTICS_SOURCE_HEADER } from '../../platform/analytics.ts';
import { guard } from '../../platform/auth.ts';
import { errorResponses, ref } from '../../platform/schemas.ts';
import * as S from './journeys.schema.ts';
import type { JourneysService } from './journeys.service.ts';

export const journeysRoutes: FastifyPluginAsyncTypebox<{ service: JourneysService }> = async (app, { service }) => {
  for (const schema of [
    S.JourneyRecord,
    S.JourneyList,
    S.CreateJourneyBody,
    S.UpdateJourneyBody,
    S.JourneyFunnelReportRequest,
    S.JourneyFunnelReportResponse,
    S.JourneyStatsRequest,
    S.JourneyStatsResponse,
    S.JourneyStepRecipientsRequest,
    S.JourneyStepRecipientsResponse,
  ]) {
    app.addSchema(schema);
  }
  const tags = ['journeys'];
  const analyticsTags = ['journeysAnalytics'];
  const journeyReply = { 200: ref(S.JourneyRecord), ...errorResponses };
  const base = '/admin/collection/:collectionId/journeys';
  const analytics = '/admin/collection/:collectionId/journeys.analytics/:journeyId';

  app.post(
    base,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'journeys_create',
        summary: 'Create a journey',
        params: S.CollectionParams,
        body: ref(S.CreateJourneyBody),
        response: journeyReply,
      },
    },
    async (req) => service.create(req.params.collectionId, req.body),
  );

  app.get(
    base,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'journeys_list',
        summary: 'List journeys',
        params: S.CollectionParams,
        querystring: S.ListJourneysQuery,
        response: { 200: ref(S.JourneyList), ...errorResponses },
      },
    },
    async (req) => service.list(req.params.collectionId, req.query),
  );

  app.get(
    `${base}/:id`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'journeys_get',
        summary: 'Get a journey',
        params: S.JourneyParams,
        response: journeyReply,
      },
    },
    async (req) => service.get(req.params.collectionId, req.params.id),
  );

  app.patch(
    `${base}/:id`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'journeys_update',
        summary: 'Update a journey (data is replaced whole)',
        params: S.JourneyParams,
        body: ref(S.UpdateJourneyBody),
        response: journeyReply,
      },
    },
    async (req) => service.update(req.params.collectionId, req.params.id, req.body),
  );

  app.delete(
    `${base}/:id`,
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'journeys_remove',
        summary: 'Remove a journey (interaction events are kept)',
        params: S.JourneyParams,
        response: { 200: Type.Object({ success: Type.Boolean(), id: Type.String() }), ...errorResponses },
      },
    },
    async (req) => service.remove(req.params.collectionId, req.params.id),
  );

  app.post(
    `${analytics}/funnel-report`,
    {
      onRequest: guard.admin,
      schema: {
        tags: analyticsTags,
        operationId: 'journeysAnalytics_funnelReport',
        summary: 'Per step: entered, completed, conversion rate and average time to complete, in a period',
        params: S.AnalyticsParams,
        body: ref(S.JourneyFunnelReportRequest),
        response: { 200: ref(S.JourneyFunnelReportResponse), ...errorResponses },
      },
    },
    async (req, reply) => {
      const { answer, source } = await service.funnelReport(req.params.collectionId, req.params.journeyId, req.body);
      reply.header(ANALYTICS_SOURCE_HEADER, source);
      return answer;
    },
  );

  app.post(
    `${analytics}/stats`,
    {
      onRequest: guard.admin,
      schema: {
        tags: analyticsTags,
        operationId: 'journeysAnalytics_stats',
        summary: 'Journey stats over a time window; outcome defaults to success',
        params: S.AnalyticsParams,
        body: ref(S.JourneyStatsRequest),
        response: { 200: ref(S.JourneyStatsResponse), ...errorResponses },
      },
    },
    async (req, reply) => {
      const { answer, source } = await service.stats(req.params.collectionId, req.params.journeyId, req.body);
      reply.header(ANALYTICS_SOURCE_HEADER, source);
      return answer;
    },
  );

  app.post(
    `${analytics}/steps/:stepId/recipients`,
    {
      onRequest: guard.admin,
      schema: {
        tags: analyticsTags,
        operationId: 'journeysAnalytics_recipients',
        summary: 'Recipient ids of one step: entered, completed or pending',
        params: S.StepParams,
        body: ref(S.JourneyStepRecipientsRequest),
        response: { 200: ref(S.JourneyStepRecipientsResponse), ...errorResponses },
      },
    },
    async (req, reply) => {
      const { answer, source } = await service.recipients(
        req.params.collectionId,
        req.params.journeyId,
        req.params.stepId,
        req.body,
      );
      reply.header(ANALYTICS_SOURCE_HEADER, source);
      return answer;
    },
  );
};
