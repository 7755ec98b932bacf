/**
 * The admin routes of a collection's links: create, read, change, delete, and their clicks.
 * The public redirect is in redirect.routes.ts.
 */
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { SuccessBody } from '../../platform/schemas.ts';
import { analyticsRoutes } from './analytics.routes.ts';
import * as S from './links.schema.ts';
import type { LinksService } from './links.service.ts';

const tags = ['links'];
const CODE_TAKEN = 'Conflict: the code is already taken';

export const linksRoutes = (service: LinksService) => [
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/links',
    operationId: 'links_create',
    tags,
    summary: 'Create a short link (custom or generated code)',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.CreateLinkBody,
    response: S.Link,
    conflict: CODE_TAKEN,
    handler: ({ scope, body, caller }) => service.create(scope.collectionId, caller.actorId ?? 'unknown', body),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links',
    operationId: 'links_list',
    tags,
    summary: 'List the collection’s links, newest first',
    guard: guard.admin,
    params: S.CollectionParams,
    query: S.LinkListQuery,
    response: S.LinkPage,
    handler: ({ scope, query }) => service.list(scope.collectionId, query),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/:linkId',
    operationId: 'links_get',
    tags,
    summary: 'Fetch one link with its click count',
    guard: guard.admin,
    params: S.LinkParams,
    response: S.Link,
    handler: ({ scope }) => service.get(scope.collectionId, scope.linkId),
  }),
  defineRoute({
    method: 'PATCH',
    url: '/admin/collection/:collectionId/links/:linkId',
    operationId: 'links_update',
    tags,
    summary: 'Change a link’s destination, code, title, tags or expiry',
    guard: guard.admin,
    params: S.LinkParams,
    body: S.UpdateLinkBody,
    response: S.Link,
    conflict: CODE_TAKEN,
    handler: ({ scope, body }) => service.update(scope.collectionId, scope.linkId, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/admin/collection/:collectionId/links/:linkId',
    operationId: 'links_delete',
    tags,
    summary: 'Delete a link: its address answers 404 from now on; its code is never reused',
    guard: guard.admin,
    params: S.LinkParams,
    response: SuccessBody,
    handler: ({ scope }) => service.remove(scope.collectionId, scope.linkId),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/:linkId/clicks',
    operationId: 'links_listClicks',
    tags,
    summary: 'List a link’s recorded clicks, newest first',
    guard: guard.admin,
    params: S.LinkParams,
    query: S.ClickListQuery,
    response: S.ClickPage,
    handler: ({ scope, query }) => service.clickReads.clicks(scope.collectionId, scope.linkId, query),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/:linkId/clicks/stats',
    operationId: 'links_clickStats',
    tags,
    summary: 'A link’s clicks over a window: per hour or day, and by country, device type and referer',
    description:
      'Every bucket of the window is answered, empty ones with 0. The window is at most 1000 buckets ' +
      '(hour: about 41 days; day: about 2.7 years); the first and last bucket may be partial. ' +
      'Breakdowns give the `top` values with the most clicks and the rest as `other`.',
    guard: guard.admin,
    params: S.LinkParams,
    query: S.ClickStatsQuery,
    response: S.ClickStats,
    handler: ({ scope, query }) => service.clickReads.clickStats(scope.collectionId, scope.linkId, query),
  }),
  ...analyticsRoutes(service.analytics),
];
