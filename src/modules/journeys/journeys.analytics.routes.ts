import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import type { JourneyReports } from './journeys.reports.ts';
import * as S from './journeys.schema.ts';

const tags = ['journeysAnalytics'];
/** The funnel options' answers always read the events (X-Analytics-Source: events). */
const fromEvents = <T>(answer: T) => ({ answer, source: 'events' as const });
const base = '/admin/collection/:collectionId/journeys.analytics/:journeyId';

/**
 * A journey's funnel, stats and step recipients; each answer says which data gave it. Then the
 * funnel options' routes (issue 29): a journey's trends and people, and ad-hoc funnels.
 */
export const journeyAnalyticsRoutes = (service: JourneyReports) => [
  defineRoute({
    method: 'POST',
    url: `${base}/funnel-report`,
    operationId: 'journeysAnalytics_funnelReport',
    tags,
    summary: 'Per step: entered, completed, conversion rate and average time to complete, in a period',
    guard: guard.admin,
    params: S.AnalyticsParams,
    body: S.JourneyFunnelReportRequest,
    response: S.JourneyFunnelReportResponse,
    analytics: true,
    handler: ({ scope, body, signal }) => service.funnelReport(scope.collectionId, scope.journeyId, body, signal),
  }),
  defineRoute({
    method: 'POST',
    url: `${base}/stats`,
    operationId: 'journeysAnalytics_stats',
    tags,
    summary: 'Journey stats over a time window; outcome defaults to success',
    guard: guard.admin,
    params: S.AnalyticsParams,
    body: S.JourneyStatsRequest,
    response: S.JourneyStatsResponse,
    analytics: true,
    handler: ({ scope, body, signal }) => service.stats(scope.collectionId, scope.journeyId, body, signal),
  }),
  defineRoute({
    method: 'POST',
    url: `${base}/steps/:stepId/recipients`,
    operationId: 'journeysAnalytics_recipients',
    tags,
    summary: 'Recipient ids of one step: entered, completed or pending',
    guard: guard.admin,
    params: S.StepParams,
    body: S.JourneyStepRecipientsRequest,
    response: S.JourneyStepRecipientsResponse,
    analytics: true,
    handler: ({ scope, body, signal }) =>
      service.recipients(scope.collectionId, scope.journeyId, scope.stepId, body, signal),
  }),
  defineRoute({
    method: 'POST',
    url: `${base}/trends`,
    operationId: 'journeysAnalytics_trends',
    tags,
    summary: 'Conversion by entry day or week over a period (at most 366 days), and the previous period beside it',
    guard: guard.admin,
    params: S.AnalyticsParams,
    body: S.JourneyTrendsRequest,
    response: S.FunnelTrendsResponse,
    analytics: true,
    handler: ({ scope, body, signal }) => service.journeyTrends(scope.collectionId, scope.journeyId, body, signal),
  }),
  defineRoute({
    method: 'POST',
    url: `${base}/people`,
    operationId: 'journeysAnalytics_people',
    tags,
    summary: 'Entered, completed or dropped-off recipients of a step under the funnel options, paged',
    guard: guard.admin,
    params: S.AnalyticsParams,
    body: S.JourneyPeopleRequest,
    response: S.FunnelPeopleResponse,
    analytics: true,
    handler: async ({ scope, body, signal }) =>
      fromEvents(await service.journeyPeople(scope.collectionId, scope.journeyId, body, signal)),
  }),
  ...funnelRoutes(service),
];

const funnels = '/admin/collection/:collectionId/funnels';
const funnelTags = ['funnels'];

/** Ad-hoc funnels: the steps in the request, no stored journey (docs/journeys.md, Funnel options). */
const funnelRoutes = (service: JourneyReports) => [
  defineRoute({
    method: 'POST',
    url: `${funnels}/query`,
    operationId: 'funnels_query',
    tags: funnelTags,
    summary: 'A funnel over steps given in the request, with windows, ordering, exclusions and breakdowns',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.FunnelQueryRequest,
    response: S.FunnelQueryResponse,
    analytics: true,
    handler: async ({ scope, body, signal }) => fromEvents(await service.adHocQuery(scope.collectionId, body, signal)),
  }),
  defineRoute({
    method: 'POST',
    url: `${funnels}/trends`,
    operationId: 'funnels_trends',
    tags: funnelTags,
    summary: 'An ad-hoc funnel’s conversion by entry day or week, and the previous period beside it',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.FunnelTrendsRequest,
    response: S.FunnelTrendsResponse,
    analytics: true,
    handler: ({ scope, body, signal }) => service.adHocTrends(scope.collectionId, body, signal),
  }),
  defineRoute({
    method: 'POST',
    url: `${funnels}/people`,
    operationId: 'funnels_people',
    tags: funnelTags,
    summary: 'Entered, completed or dropped-off recipients of an ad-hoc funnel’s step, paged',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.FunnelPeopleRequest,
    response: S.FunnelPeopleResponse,
    analytics: true,
    handler: async ({ scope, body, signal }) => fromEvents(await service.adHocPeople(scope.collectionId, body, signal)),
  }),
  defineRoute({
    method: 'GET',
    url: `${funnels}/exports/:jobId/download`,
    operationId: 'funnels_downloadPeopleExport',
    tags: funnelTags,
    summary: 'Download the CSV of a finished journeys.peopleExport job',
    guard: guard.admin,
    params: S.ExportParams,
    response: Type.String({ description: 'The file: text/csv' }),
    // The file is streamed as stored: its length and name are the export's.
    handler: async ({ scope, reply }) => {
      const file = await service.openPeopleExport(scope.collectionId, scope.jobId);
      reply
        .type('text/csv; charset=utf-8')
        .header('content-length', file.byteCount)
        .header('content-disposition', `attachment; filename="${file.fileName}"`);
      return reply.send(file.stream);
    },
  }),
];
