import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errorResponses } from '../../../platform/schemas.ts';
import { emptyBodyIsObject } from '../../../platform/validation.ts';
import type { AggregateRequest as AggregateBody } from '../shared/aggregate.ts';
import { actorOf, adminOnly, signedIn } from '../shared/guards.ts';
import { AppParams, listOf, objectParams, SuccessResponse } from '../shared/schema.ts';
import * as S from './cases.schema.ts';
import type { CasesService } from './cases.service.ts';

const base = '/:zone/collection/:collectionId/app/:appId/cases';

export const casesRoutes: FastifyPluginAsyncTypebox<{ service: CasesService }> = async (app, { service }) => {
  const tags = ['cases'];
  const one = { 200: Type.Ref('AppCase'), ...errorResponses };
  const CaseParams = objectParams('caseId');

  app.post(
    base,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'cases_create',
        summary: 'Create a case. On the public zone the owner (contactId) is the user token’s contact.',
        params: AppParams,
        body: Type.Ref('CreateCaseInput'),
        response: one,
      },
    },
    async (req) =>
      service.create(req.params.collectionId, req.params.appId, actorOf(req), req.body as S.CreateCaseInput),
  );

  app.get(
    base,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'cases_list',
        summary: 'List cases the caller can see, with filters, sorting and pagination',
        params: AppParams,
        querystring: S.CaseListQuery,
        response: { 200: listOf('AppCase'), ...errorResponses },
      },
    },
    async (req) => service.list(req.params.collectionId, req.params.appId, actorOf(req), req.query),
  );

  app.post(
    `${base}/aggregate`,
    {
      onRequest: signedIn,
      preValidation: emptyBodyIsObject,
      schema: {
        tags,
        operationId: 'cases_aggregate',
        summary: 'Aggregate cases: count and close-time metrics, grouped and as a time series',
        params: AppParams,
        body: Type.Ref('AggregateRequest'),
        response: { 200: Type.Ref('AggregateResponse'), ...errorResponses },
      },
    },
    async (req) =>
      service.aggregate(req.params.collectionId, req.params.appId, actorOf(req), req.body as AggregateBody),
  );

  app.post(
    `${base}/summary`,
    {
      onRequest: adminOnly,
      preValidation: emptyBodyIsObject,
      schema: {
        tags,
        operationId: 'cases_summary',
        summary: 'Summary of the app’s cases over a period (admin only): total, by status, by priority, daily trend',
        params: AppParams,
        body: Type.Ref('CaseSummaryRequest'),
        response: { 200: Type.Ref('CaseSummaryResponse'), ...errorResponses },
      },
    },
    async (req) =>
      service.summary(req.params.collectionId, req.params.appId, (req.body as { period?: object } | undefined)?.period),
  );

  app.get(
    `${base}/:caseId`,
    {
      onRequest: signedIn,
      schema: { tags, operationId: 'cases_get', summary: 'Get a case', params: CaseParams, response: one },
    },
    async (req) => service.get(req.params.collectionId, req.params.appId, req.params.caseId, actorOf(req)),
  );

  app.patch(
    `${base}/:caseId`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'cases_update',
        summary:
          'Update a case. Admins may change any field; the owner only `data` and `owner` (other fields: 400). Sections merge by top-level key.',
        params: CaseParams,
        body: Type.Ref('UpdateCaseInput'),
        response: one,
      },
    },
    async (req) =>
      service.patch(
        req.params.collectionId,
        req.params.appId,
        req.params.caseId,
        actorOf(req),
        req.body as S.UpdateCaseInput,
      ),
  );

  app.delete(
    `${base}/:caseId`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'cases_delete',
        summary: 'Soft-delete a case (owner or admin)',
        params: CaseParams,
        response: { 200: SuccessResponse, ...errorResponses },
      },
    },
    async (req) => service.delete(req.params.collectionId, req.params.appId, req.params.caseId, actorOf(req)),
  );

  app.get(
    `${base}/:caseId/summary`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'cases_caseSummary',
        summary: 'A case with counts of its related threads and records, its age, time to close and last activity',
        params: CaseParams,
        response: { 200: Type.Ref('CaseOneSummary'), ...errorResponses },
      },
    },
    async (req) => service.caseSummary(req.params.collectionId, req.params.appId, req.params.caseId, actorOf(req)),
  );

  app.post(
    `${base}/:caseId/history`,
    {
      onRequest: adminOnly,
      schema: {
        tags,
        operationId: 'cases_appendHistory',
        summary:
          'Append an entry to the case’s owner or admin history (admin only), optionally changing status, priority and assignee in the same step',
        params: CaseParams,
        body: Type.Ref('AppendHistoryInput'),
        response: one,
      },
    },
    async (req) =>
      service.appendHistory(
        req.params.collectionId,
        req.params.appId,
        req.params.caseId,
        actorOf(req),
        req.body as S.AppendHistoryInput,
      ),
  );

  app.get(
    `${base}/:caseId/history`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'cases_history',
        summary:
          'The case’s audit trail, oldest first: every create, update, delete and appended entry with actor, time and changed fields',
        params: CaseParams,
        response: { 200: S.CaseHistory, ...errorResponses },
      },
    },
    async (req) => service.history(req.params.collectionId, req.params.appId, req.params.caseId, actorOf(req)),
  );

  app.get(
    `${base}/:caseId/related`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'cases_related',
        summary: 'Threads and records whose parent is this case (parentType "case", parentId the case id)',
        params: CaseParams,
        response: { 200: S.RelatedResponse, ...errorResponses },
      },
    },
    async (req) => service.related(req.params.collectionId, req.params.appId, req.params.caseId, actorOf(req)),
  );
};
