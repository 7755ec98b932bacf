/**
 * Background tasks of app objects, run by the job engine:
 * - `records.import`: upsert many records by ref; bad items are reported in the result
 *   (`errors[]` with index, ref and message) and the others are saved, in batches, each with
 *   its `record.created`/`record.updated` events in its transaction (actor `job:<id>`). Safe to
 *   retry: an upsert by ref done twice leaves the same record (and publishes nothing the
 *   second time, as nothing changed).
 * - `cases.bulkStatus`: set the status of every live case matching a filter; each change is
 *   recorded in that case's audit trail (action `status`, actor `job:<id>`) and published as
 *   `case.updated`.
 * Both report progress. Payloads are validated when enqueued through the API (400 if bad).
 */
import { Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { badRequest } from '../../platform/errors.ts';
import { normaliseInstants } from '../../platform/instants.ts';
import { Closed, OpenObject, Slug } from '../../platform/schemas.ts';
import { defineTask, type TaskDefinition } from '../../platform/tasks.ts';
import type { CasesService } from './cases/cases.service.ts';
import { UpsertRecordInput } from './records/records.schema.ts';
import type { RecordsService } from './records/records.service.ts';
import { CASE } from './shared/kinds.ts';
import { parseList } from './shared/list-query.ts';
import { FacetRule } from './shared/schema.ts';
import type { Actor } from './shared/sections.ts';

/** Items one `records.import` job may carry (the HTTP bulk-upsert takes 500 at a time). */
export const IMPORT_MAX_ITEMS = 10_000;

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
/** Each imported item is checked on its own: a bad item is reported, the others are saved. */
const checkItem = Compile({ FacetRule }, UpsertRecordInput);

/** An item ready to save (its times in full RFC 3339, as a request's would be), or why not. */
function checkImportItem(
  index: number,
  item: unknown,
): { index: number; item: UpsertRecordInput } | { index: number; error: string } {
  if (!checkItem.Check(item)) return { index, error: itemError(index, item) };
  const badTime = normaliseInstants(UpsertRecordInput, item);
  if (badTime !== undefined) return { index, error: `Item ${index}: ${badTime} must be an ISO 8601 date or date-time` };
  return { index, item: item as UpsertRecordInput };
}

function itemError(index: number, item: unknown): string {
  // The first error only, as for request bodies (platform/validation.ts).
  const [first] = checkItem.Errors(item);
  return `Item ${index}: ${first ? `${first.instancePath || '/'} ${first.message}` : 'is invalid'}`;
}

function caseFilterConditions(filter: Record<string, string | number> = {}) {
  // The filters are a Map: `constructor` or `toString` is not a filter.
  const unknown = Object.keys(filter).filter((k) => !CASE.filters.has(k));
  if (unknown.length) throw badRequest(`Unknown case filter: ${unknown.join(', ')}`, { fields: unknown });
  return parseList(CASE, filter, false).conditions;
}

/** A task's changes are the job's: the audit trail and the events name `job:<id>`. */
const jobActor = (jobId: number | string): Actor => ({ role: 'admin', actorId: `job:${jobId}` });

export function appObjectTasks(services: { cases: CasesService; records: RecordsService }): TaskDefinition[] {
  return [
    defineTask({
      name: 'records.import',
      payload: ImportPayload,
      visible: true,
      description:
        'Creates or updates many records of an app by `ref` (up to 10,000 items; each item is a record body as POST .../records/upsert takes it). Bad items are listed in the result’s `errors`; the others are saved.',
      example: { appId: 'desk', items: [{ ref: 'r1', data: { label: 'First' } }] },
      async handler({ appId, items }, ctx) {
        const checked = items.map((item, index) => checkImportItem(index, item));
        const result = await services.records.importItems(
          ctx.job.collectionId,
          appId,
          jobActor(ctx.job.id),
          checked,
          (done) => ctx.progress({ done, total: items.length }),
          ctx.signal,
        );
        return { total: items.length, ...result };
      },
    }),
    defineTask({
      name: 'cases.bulkStatus',
      payload: BulkStatusPayload,
      visible: true,
      description:
        'Sets the status of every live case of an app that matches `filter` (the case list’s filters); each change is in the case’s history and sent as `case.updated`.',
      example: { appId: 'desk', status: 'closed', filter: { status: 'resolved' } },
      prepare(payload) {
        caseFilterConditions(payload.filter);
        return payload;
      },
      async handler({ appId, status, filter }, ctx) {
        const result = await services.cases.bulkSetStatus(
          ctx.job.collectionId,
          appId,
          caseFilterConditions(filter),
          status,
          jobActor(ctx.job.id),
          (done, total) => ctx.progress({ done, total }),
        );
        return { status, ...result };
      },
    }),
  ];
}
