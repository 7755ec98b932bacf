/**
 * Background tasks of app objects, run by the job engine:
 * - `records.import`: upsert many records by ref, each on its own; bad items are reported
 *   in the result (`errors[]` with index, ref and message) and the others are saved. Safe to
 *   retry: an upsert by ref done twice leaves the same record.
 * - `cases.bulkStatus`: set the status of every live case matching a filter; each change is
 *   recorded in that case's audit trail (action `status`, actor `job:<id>`).
 * Both report progress. Payloads are validated when enqueued through the API (400 if bad).
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { Type } from 'typebox';
import { badRequest } from '../../platform/errors.ts';
import { Closed, OpenObject, Slug } from '../../platform/schemas.ts';
import type { JobEngine, TaskDefinition } from '../jobs/index.ts';
import { CASE_FILTERS } from './cases/cases.service.ts';
import type { AppObjectsService } from './index.ts';
import { UpsertRecordInput } from './records/records.schema.ts';
import { CASE } from './shared/kinds.ts';
import { parseList } from './shared/list-query.ts';
import { FacetRule } from './shared/schema.ts';
import type { Caller } from './shared/sections.ts';

/** Items one `records.import` job may carry (the HTTP bulk-upsert takes 500 at a time). */
export const IMPORT_MAX_ITEMS = 10_000;

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;
// First error only, as for request bodies (platform/validation.ts): the cost of checking a
// 10,000-item payload, and the message naming what is wrong, stay bounded.
const ajv = new Ajv({ strict: false });
addFormats(ajv);
ajv.addSchema(FacetRule as object);

const ImportPayload = Closed({
  appId: Slug(),
  items: Type.Array(OpenObject(), { minItems: 1, maxItems: IMPORT_MAX_ITEMS }),
});
const BulkStatusPayload = Closed({
  appId: Slug(),
  status: Type.String({ minLength: 1, maxLength: 50 }),
  filter: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String({ maxLength: 1000 }), Type.Number()]), {
      maxProperties: 50,
      description: 'The list filters of cases (status, category, priority, assignedTo, createdAt, …)',
    }),
  ),
});
const checkImport = ajv.compile(ImportPayload as object);
const checkBulkStatus = ajv.compile(BulkStatusPayload as object);
const checkItem = ajv.compile(UpsertRecordInput as object);

type ImportPayload = { appId: string; items: Record<string, unknown>[] };
type BulkStatusPayload = { appId: string; status: string; filter?: Record<string, string | number> };

const describe = (errors: typeof checkItem.errors) =>
  (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`).join('; ');

function caseFilterConditions(filter: Record<string, string | number> = {}) {
  // Own names only: `constructor` or `toString` is not a filter, even though `in` says so.
  const unknown = Object.keys(filter).filter((k) => !Object.hasOwn(CASE_FILTERS, k));
  if (unknown.length) throw badRequest(`Unknown case filter: ${unknown.join(', ')}`, { fields: unknown });
  return parseList(CASE, CASE_FILTERS, filter, false).conditions;
}

export function appObjectTasks(service: AppObjectsService): TaskDefinition[] {
  return [
    {
      name: 'records.import',
      visible: true,
      parsePayload(payload) {
        if (!checkImport(payload)) throw badRequest(`Invalid records.import payload: ${describe(checkImport.errors)}`);
        return payload;
      },
      async handler(ctx) {
        const { appId, items } = ctx.job.payload as ImportPayload;
        const checked = items.map((item, index) =>
          checkItem(item)
            ? { index, item: item as UpsertRecordInput }
            : { index, error: `Item ${index}: ${describe(checkItem.errors)}` },
        );
        const result = await service.records.importItems(
          ctx.job.collectionId,
          appId,
          checked,
          (done) => ctx.progress({ done, total: items.length }),
          ctx.signal,
        );
        return { total: items.length, ...result };
      },
    },
    {
      name: 'cases.bulkStatus',
      visible: true,
      parsePayload(payload) {
        if (!checkBulkStatus(payload)) {
          throw badRequest(`Invalid cases.bulkStatus payload: ${describe(checkBulkStatus.errors)}`);
        }
        caseFilterConditions((payload as BulkStatusPayload).filter);
        return payload;
      },
      async handler(ctx) {
        const { appId, status, filter } = ctx.job.payload as BulkStatusPayload;
        const caller: Caller = { role: 'admin', actorId: `job:${ctx.job.id}` };
        const result = await service.cases.bulkSetStatus(
          ctx.job.collectionId,
          appId,
          caseFilterConditions(filter),
          status,
          caller,
          (done, total) => ctx.progress({ done, total }),
        );
        return { status, ...result };
      },
    },
  ];
}

export function registerAppObjectTasks(engine: JobEngine, service: AppObjectsService): void {
  for (const task of appObjectTasks(service)) engine.registerTask(task);
}
