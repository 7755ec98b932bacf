/**
 * Click analytics of a link and of the whole collection, and the CSV export of clicks
 * (analytics.service.ts; docs/links.md "Click analytics").
 */
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import * as S from './analytics.schema.ts';
import type { LinkAnalytics } from './analytics.service.ts';
import { CollectionParams, LinkParams } from './links.schema.ts';

const tags = ['links'];
const WINDOW =
  'The window is at most 732 days and 1000 buckets of `interval`; every bucket is answered, empty ones with 0. ' +
  'Bots are left out unless `includeBots=true`. A unique is a visitor (a salted daily hash of address and user agent) ' +
  'counted once per UTC day, in the bucket and values of their first click that day.';

const csvReply = (reply: import('fastify').FastifyReply, name: string) =>
  reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${name}"`);

export const analyticsRoutes = (analytics: LinkAnalytics) => [
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/analytics',
    operationId: 'links_collectionAnalytics',
    tags,
    summary: 'Click analytics of the whole collection: totals, a series, and a breakdown (any dimension, or by link)',
    description: `${WINDOW} Answered from hourly counts: the window is widened to whole UTC hours (the answer's from and to say so).`,
    guard: guard.admin,
    params: CollectionParams,
    query: S.CollectionAnalyticsQuery,
    response: S.ClickAnalytics,
    handler: ({ scope, query, signal }) => analytics.forCollection(scope.collectionId, query, signal),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/clicks.csv',
    operationId: 'links_exportCollectionClicks',
    tags,
    summary: 'Every click of the collection as CSV, streamed (link after link, each in time order)',
    guard: guard.admin,
    params: CollectionParams,
    query: S.ClickExportQuery,
    response: Type.String({ description: 'text/csv: a header line, then one line per click' }),
    handler: async ({ scope, query, reply }) => {
      const stream = await analytics.exportCollection(scope.collectionId, query);
      return csvReply(reply, `clicks-${scope.collectionId}.csv`).send(stream);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/:linkId/analytics',
    operationId: 'links_analytics',
    tags,
    summary: 'Click analytics of a link: totals, a series, and a breakdown by one dimension',
    description: `${WINDOW} Read from the link's clicks: exact over any window.`,
    guard: guard.admin,
    params: LinkParams,
    query: S.LinkAnalyticsQuery,
    response: S.ClickAnalytics,
    handler: ({ scope, query, signal }) => analytics.forLink(scope.collectionId, scope.linkId, query, signal),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/:linkId/clicks.csv',
    operationId: 'links_exportClicks',
    tags,
    summary: 'A link’s clicks as CSV, streamed in time order',
    guard: guard.admin,
    params: LinkParams,
    query: S.ClickExportQuery,
    response: Type.String({ description: 'text/csv: a header line, then one line per click' }),
    handler: async ({ scope, query, reply }) => {
      const stream = await analytics.exportLink(scope.collectionId, scope.linkId, query);
      return csvReply(reply, `clicks-${scope.linkId}.csv`).send(stream);
    },
  }),
];
