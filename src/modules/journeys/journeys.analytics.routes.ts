import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import * as S from './journeys.schema.ts';
import type { JourneysService } from './journeys.service.ts';

const tags = ['journeysAnalytics'];
const base = '/admin/collection/:collectionId/journeys.analytics/:journeyId';

/** A journey's funnel, stats and step recipients; each answer says which data gave it. */
export const journeyAnalyticsRoutes = (service: JourneysService) => [
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
    handler: ({ scope, body }) => service.funnelReport(scope.collectionId, scope.journeyId, body),
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
    handler: ({ scope, body }) => service.stats(scope.collectionId, scope.journeyId, body),
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
    handler: ({ scope, body }) => service.recipients(scope.collectionId, scope.journeyId, scope.stepId, body),
  }),
];
