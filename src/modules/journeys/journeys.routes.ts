import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { journeyAnalyticsRoutes } from './journeys.analytics.routes.ts';
import * as S from './journeys.schema.ts';
import type { JourneysService } from './journeys.service.ts';

const tags = ['journeys'];
const base = '/admin/collection/:collectionId/journeys';

/** The journeys themselves, then their analytics (journeys.analytics.routes.ts). */
export const journeysRoutes = (service: JourneysService) => [
  defineRoute({
    method: 'POST',
    url: base,
    operationId: 'journeys_create',
    tags,
    summary: 'Create a journey',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.CreateJourneyBody,
    response: S.JourneyRecord,
    handler: ({ scope, body }) => service.create(scope.collectionId, body),
  }),
  defineRoute({
    method: 'GET',
    url: base,
    operationId: 'journeys_list',
    tags,
    summary: 'List journeys',
    guard: guard.admin,
    params: S.CollectionParams,
    query: S.ListJourneysQuery,
    response: S.JourneyList,
    handler: ({ scope, query }) => service.list(scope.collectionId, query),
  }),
  defineRoute({
    method: 'GET',
    url: `${base}/:id`,
    operationId: 'journeys_get',
    tags,
    summary: 'Get a journey',
    guard: guard.admin,
    params: S.JourneyParams,
    response: S.JourneyRecord,
    handler: ({ scope }) => service.get(scope.collectionId, scope.id),
  }),
  defineRoute({
    method: 'PATCH',
    url: `${base}/:id`,
    operationId: 'journeys_update',
    tags,
    summary: 'Update a journey (data is replaced whole)',
    guard: guard.admin,
    params: S.JourneyParams,
    body: S.UpdateJourneyBody,
    response: S.JourneyRecord,
    handler: ({ scope, body }) => service.update(scope.collectionId, scope.id, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: `${base}/:id`,
    operationId: 'journeys_remove',
    tags,
    summary: 'Remove a journey (interaction events are kept)',
    guard: guard.admin,
    params: S.JourneyParams,
    response: Type.Object({ success: Type.Boolean(), id: Type.String() }),
    handler: ({ scope }) => service.remove(scope.collectionId, scope.id),
  }),
  ...journeyAnalyticsRoutes(service.reports),
];
