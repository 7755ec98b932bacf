/** The routes of link attribution: conversions (attribution.ts). */
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { CollectionConversions, ConversionsQuery, LinkConversions, LinkConversionsQuery } from './attribution.ts';
import { CollectionParams, LinkParams } from './links.schema.ts';
import type { LinksService } from './links.service.ts';

const tags = ['links'];

export const attributionRoutes = (service: LinksService) => [
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/conversions',
    operationId: 'links_collectionConversions',
    tags,
    summary:
      'Conversions of every link of the collection: events carrying their click ids, by link, interaction and outcome',
    guard: guard.admin,
    params: CollectionParams,
    query: ConversionsQuery,
    response: CollectionConversions,
    handler: ({ scope, query }) => service.clickReads.collectionConversions(scope.collectionId, query),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/:linkId/conversions',
    operationId: 'links_conversions',
    tags,
    summary: 'A link’s conversions: interaction events carrying its click ids (pl_cid), by interaction and outcome',
    description:
      'Counts the events in the window (their time) whose `clickId` is the id of one of the link’s clicks; deleted events do not count. ' +
      'Click ids are given only while the link has trackConversions on. `groupBy=route` splits them by the way of the link each click was sent (an A/B split’s conversions).',
    guard: guard.admin,
    params: LinkParams,
    query: LinkConversionsQuery,
    response: LinkConversions,
    handler: ({ scope, query }) => service.clickReads.conversions(scope.collectionId, scope.linkId, query),
  }),
];
