import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errorResponses } from '../../../platform/schemas.ts';
import { emptyBodyIsObject } from '../../../platform/validation.ts';
import type { AggregateRequest as AggregateBody } from '../shared/aggregate.ts';
import { actorOf, adminOnly, signedIn } from '../shared/guards.ts';
import { AppParams, listOf, objectParams, SuccessResponse } from '../shared/schema.ts';
import * as S from './records.schema.ts';
import type { RecordsService } from './records.service.ts';

const base = '/:zone/collection/:collectionId/app/:appId/records';

export const recordsRoutes: FastifyPluginAsyncTypebox<{ service: RecordsService }> = async (app, { service }) => {
  const tags = ['records'];
  const one = { 200: Type.Ref('AppRecord'), ...errorResponses };
  const RecordParams = objectParams('recordId');
  const conflictResponse = { 409: errorResponses[400] };

  app.post(
    base,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'records_create',
        summary:
          'Create a record (status `active` by default). On the public zone the author and owner are the token’s.',
        params: AppParams,
        body: Type.Ref('CreateRecordInput'),
        response: { ...one, ...conflictResponse },
      },
    },
    async (req) =>
      service.create(req.params.collectionId, req.params.appId, actorOf(req), req.body as S.CreateRecordInput),
  );

  app.get(
    base,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'records_list',
        summary:
          'List records with filters, sorting and pagination. Public callers receive only active records inside their schedule window.',
        params: AppParams,
        querystring: S.RecordListQuery,
        response: { 200: listOf('AppRecord'), ...errorResponses },
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
        operationId: 'records_aggregate',
        summary: 'Aggregate records: count, grouped and as a time series',
        params: AppParams,
        body: Type.Ref('AggregateRequest'),
        response: { 200: Type.Ref('AggregateResponse'), ...errorResponses },
      },
    },
    async (req) =>
      service.aggregate(req.params.collectionId, req.params.appId, actorOf(req), req.body as AggregateBody),
  );

  app.post(
    `${base}/upsert`,
    {
      onRequest: adminOnly,
      schema: {
        tags,
        operationId: 'records_upsert',
        summary:
          'Upsert a record by ref (admin): creates it, or updates the record with that ref (reviving a deleted one)',
        params: AppParams,
        body: Type.Ref('UpsertRecordInput'),
        response: {
          200: Type.Intersect([Type.Ref('AppRecord'), Type.Object({ created: Type.Boolean() })]),
          ...errorResponses,
          ...conflictResponse,
        },
      },
    },
    async (req) =>
      service.upsert(req.params.collectionId, req.params.appId, actorOf(req), req.body as S.UpsertRecordInput),
  );

  app.post(
    `${base}/bulk-upsert`,
    {
      onRequest: adminOnly,
      schema: {
        tags,
        operationId: 'records_bulkUpsert',
        summary: `Upsert up to ${S.BULK_MAX} records by ref in one transaction (admin): all or nothing; a bad item is named`,
        params: AppParams,
        body: S.BulkUpsertInput,
        response: { 200: S.BulkUpsertResult, ...errorResponses, ...conflictResponse },
      },
    },
    async (req) => service.bulkUpsert(req.params.collectionId, req.params.appId, req.body as S.UpsertRecordInput[]),
  );

  app.post(
    `${base}/bulk-delete`,
    {
      onRequest: adminOnly,
      schema: {
        tags,
        operationId: 'records_bulkDelete',
        summary: 'Soft-delete records by ids and/or refs (admin), in one transaction',
        params: AppParams,
        body: Type.Ref('BulkDeleteInput'),
        response: { 200: Type.Object({ deleted: Type.Integer() }), ...errorResponses },
      },
    },
    async (req) => service.bulkDelete(req.params.collectionId, req.params.appId, req.body as S.BulkDeleteInput),
  );

  app.get(
    `${base}/:recordId`,
    {
      onRequest: signedIn,
      schema: { tags, operationId: 'records_get', summary: 'Get a record', params: RecordParams, response: one },
    },
    async (req) => service.get(req.params.collectionId, req.params.appId, req.params.recordId, actorOf(req)),
  );

  app.patch(
    `${base}/:recordId`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'records_update',
        summary: 'Update a record. Admins may change any field; the owner only data and owner (other fields: 400).',
        params: RecordParams,
        body: Type.Ref('UpdateRecordInput'),
        response: { ...one, ...conflictResponse },
      },
    },
    async (req) =>
      service.patch(
        req.params.collectionId,
        req.params.appId,
        req.params.recordId,
        actorOf(req),
        req.body as S.UpdateRecordInput,
      ),
  );

  app.delete(
    `${base}/:recordId`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'records_delete',
        summary: 'Soft-delete a record (owner or admin)',
        params: RecordParams,
        response: { 200: SuccessResponse, ...errorResponses },
      },
    },
    async (req) => service.delete(req.params.collectionId, req.params.appId, req.params.recordId, actorOf(req)),
  );

  app.post(
    `${base}/:recordId/restore`,
    {
      onRequest: adminOnly,
      schema: {
        tags,
        operationId: 'records_restore',
        summary: 'Restore a soft-deleted record (admin)',
        params: RecordParams,
        response: { ...one, ...conflictResponse },
      },
    },
    async (req) => service.restore(req.params.collectionId, req.params.appId, req.params.recordId, actorOf(req)),
  );
};
