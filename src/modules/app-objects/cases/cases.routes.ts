import type { Static } from 'typebox';
import { guard } from '../../../platform/auth.ts';
import { CollectionParams, defineRoute, type Route } from '../../../platform/routes.ts';
import { kindRoutes } from '../shared/kind-routes.ts';
import { CASE } from '../shared/kinds.ts';
import * as S from './cases.schema.ts';
import type { CasesService } from './cases.service.ts';

const CASES = {
  kind: CASE,
  param: 'caseId' as const,
  schemas: { object: S.AppCase, create: S.CreateCaseInput, update: S.UpdateCaseInput, listQuery: S.CaseListQuery },
  summaries: {
    create:
      'Create a case. On the public zone the owner (contactId) is the user token’s contact: a contactId sent must be it (else 401 FORBIDDEN); status may be given, assignedTo may not.',
    list: 'List cases the caller can see, with filters, sorting and pagination',
    aggregate: 'Aggregate cases: count and close-time metrics, grouped and as a time series',
    get: 'Get a case',
    update:
      'Update a case. Admins may change any field; the owner only `data` and `owner` (other fields: 400). Sections merge by top-level key.',
    delete: 'Soft-delete a case (owner or admin)',
  },
};

export const casesRoutes = (service: CasesService): Route[] => [
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/case-apps',
    operationId: 'cases_listApps',
    tags: ['cases'],
    summary:
      'The apps of the collection that hold live cases, by id (at most 200): what the app id of the case routes can be',
    guard: guard.admin,
    params: CollectionParams,
    response: S.CaseApps,
    handler: ({ scope }) => service.apps(scope.collectionId),
  }),
  ...kindRoutes(CASES, service, ({ onApp, onObject }) => [
    onApp({
      method: 'POST',
      path: '/summary',
      op: 'summary',
      admin: true,
      emptyBody: true,
      summary: 'Summary of the app’s cases over a period (admin only): total, by status, by priority, weekly trend',
      body: S.CaseSummaryRequest,
      response: S.CaseSummaryResponse,
      handler: ({ scope, body }) => service.summary(scope.collectionId, scope.appId, body.period),
    }),
    onObject({
      method: 'GET',
      path: '/summary',
      op: 'caseSummary',
      summary: 'A case with counts of its related threads and records, its age, time to close and last activity',
      response: S.CaseOneSummary,
      handler: ({ scope, actor, id }) => service.caseSummary(scope.collectionId, scope.appId, id, actor),
    }),
    onObject({
      method: 'POST',
      path: '/history',
      op: 'appendHistory',
      admin: true,
      summary:
        'Append an entry to the case’s owner or admin history (admin only), optionally changing status, priority and assignee in the same step',
      body: S.AppendHistoryInput,
      response: S.AppCase,
      handler: ({ scope, actor, id, body }) => service.appendHistory(scope.collectionId, scope.appId, id, actor, body),
    }),
    onObject({
      method: 'GET',
      path: '/history',
      op: 'history',
      summary:
        'The case’s audit trail, oldest first: every create, update, delete and appended entry with actor, time and changed fields',
      response: S.CaseHistory,
      // The service builds each entry as an open record (fields left out when empty).
      handler: ({ scope, actor, id }) =>
        service.history(scope.collectionId, scope.appId, id, actor) as Promise<Static<typeof S.CaseHistory>>,
    }),
    onObject({
      method: 'GET',
      path: '/related',
      op: 'related',
      summary: 'Threads and records whose parent is this case (parentType "case", parentId the case id)',
      response: S.RelatedResponse,
      handler: ({ scope, actor, id }) => service.related(scope.collectionId, scope.appId, id, actor),
    }),
  ]),
];
