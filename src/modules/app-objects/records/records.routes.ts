import { Type } from 'typebox';
import type { Route } from '../../../platform/routes.ts';
import { ref } from '../../../platform/schemas.ts';
import { kindRoutes } from '../shared/kind-routes.ts';
import { RECORD } from '../shared/kinds.ts';
import * as S from './records.schema.ts';
import type { RecordsService } from './records.service.ts';

/** What a 409 of a record write means: a unique rule of records would be broken. */
const UNIQUE = 'Conflict: another record holds this ref, or this singletonPer value';
/** A create's 409s: a ref, or a singleton the caller may not change. */
const CREATE_CONFLICT =
  'Conflict: another record holds this ref, or a record the caller may not change (admin-only) holds this singletonPer value';

const RECORDS = {
  kind: RECORD,
  param: 'recordId' as const,
  schemas: {
    object: S.AppRecord,
    create: S.CreateRecordInput,
    update: S.UpdateRecordInput,
    listQuery: S.RecordListQuery,
  },
  summaries: {
    create:
      'Create a record (status `active` by default). On the public zone the author and owner are the token’s. With `singletonPer`, the record already holding its key is updated in place and answered (its id) instead.',
    list: 'List records with filters, sorting and pagination. Public callers receive only active records inside their schedule window.',
    aggregate: 'Aggregate records: count, grouped and as a time series',
    get: 'Get a record',
    update: 'Update a record. Admins may change any field; the owner only data and owner (other fields: 400).',
    delete: 'Soft-delete a record (owner or admin)',
  },
  conflicts: { create: CREATE_CONFLICT, update: UNIQUE },
};

/** `admin,` in a route below: only admins may call it (401 for users). */
const admin = true;

export const recordsRoutes = (service: RecordsService): Route[] =>
  kindRoutes(RECORDS, service, ({ onApp, onObject }) => [
    onApp({
      method: 'POST',
      path: '/upsert',
      op: 'upsert',
      admin,
      summary:
        'Upsert a record by ref (admin): creates it, or updates the record with that ref (reviving a deleted one)',
      body: S.UpsertRecordInput,
      response: Type.Intersect([ref(S.AppRecord), Type.Object({ created: Type.Boolean() })]),
      conflict: UNIQUE,
      handler: ({ scope, actor, body }) => service.upsert(scope.collectionId, scope.appId, actor, body),
    }),
    onApp({
      method: 'POST',
      path: '/bulk-upsert',
      op: 'bulkUpsert',
      admin,
      summary: `Upsert up to ${S.BULK_MAX} records by ref in one transaction (admin): all or nothing; a bad item is named. The items come as an array or as \`{records: [...]}\``,
      body: S.BulkUpsertInput,
      response: S.BulkUpsertResult,
      conflict: UNIQUE,
      handler: ({ scope, actor, body }) =>
        service.bulkUpsert(scope.collectionId, scope.appId, actor, Array.isArray(body) ? body : body.records),
    }),
    onApp({
      method: 'POST',
      path: '/bulk-delete',
      op: 'bulkDelete',
      admin,
      summary:
        'Soft-delete records (admin) by ids and/or refs, or every record in a scope (`{scope: {productId?, variantId?, batchId?, proofId?}}`), optionally only of one recordType; answers how many',
      body: S.BulkDeleteInput,
      response: Type.Object({ deleted: Type.Integer() }),
      handler: ({ scope, actor, body }) => service.bulkDelete(scope.collectionId, scope.appId, actor, body),
    }),
    onObject({
      method: 'POST',
      path: '/restore',
      op: 'restore',
      admin,
      summary: 'Restore a soft-deleted record (admin)',
      response: S.AppRecord,
      conflict: 'Conflict: a live record holds its singletonPer value',
      handler: ({ scope, actor, id }) => service.restore(scope.collectionId, scope.appId, id, actor),
    }),
  ]);
