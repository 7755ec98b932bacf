import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ref } from '../../../platform/schemas.ts';
import { actorOf } from '../shared/guards.ts';
import { kindPaths, registerKindRoutes } from '../shared/kind-routes.ts';
import { CASE } from '../shared/kinds.ts';
import * as S from './cases.schema.ts';
import type { CasesService } from './cases.service.ts';

export const casesRoutes: FastifyPluginAsyncTypebox<{ service: CasesService }> = async (app, { service }) => {
  registerKindRoutes(app, CASES, service);
  const { base, one, appRoute, objectRoute, idOf } = kindPaths(CASE, CASES.param);
  const on = (req: { params: { collectionId: string; appId: string } }) =>
    [req.params.collectionId, req.params.appId] as const;

  app.post(
    `${base}/summary`,
    appRoute({
      op: 'summary',
      admin: true,
      emptyBody: true,
      summary: 'Summary of the app’s cases over a period (admin only): total, by status, by priority, weekly trend',
      body: ref(S.CaseSummaryRequest),
      response: ref(S.CaseSummaryResponse),
    }),
    async (req) => service.summary(...on(req), req.body.period),
  );
  app.get(
    `${one}/summary`,
    objectRoute({
      op: 'caseSummary',
      summary: 'A case with counts of its related threads and records, its age, time to close and last activity',
      response: ref(S.CaseOneSummary),
    }),
    async (req) => service.caseSummary(...on(req), idOf(req), actorOf(req)),
  );
  app.post(
    `${one}/history`,
    objectRoute({
      op: 'appendHistory',
      admin: true,
      summary:
        'Append an entry to the case’s owner or admin history (admin only), optionally changing status, priority and assignee in the same step',
      body: ref(S.AppendHistoryInput),
      response: ref(S.AppCase),
    }),
    async (req) => service.appendHistory(...on(req), idOf(req), actorOf(req), req.body),
  );
  app.get(
    `${one}/history`,
    objectRoute({
      op: 'history',
      summary:
        'The case’s audit trail, oldest first: every create, update, delete and appended entry with actor, time and changed fields',
      response: S.CaseHistory,
    }),
    async (req) => service.history(...on(req), idOf(req), actorOf(req)),
  );
  app.get(
    `${one}/related`,
    objectRoute({
      op: 'related',
      summary: 'Threads and records whose parent is this case (parentType "case", parentId the case id)',
      response: S.RelatedResponse,
    }),
    async (req) => service.related(...on(req), idOf(req), actorOf(req)),
  );
};

const CASES = {
  kind: CASE,
  param: 'caseId',
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
