/**
 * The original service's published OpenAPI document (`../shared/reference/`), read as a
 * contract: a response this service gives for an operation both documents have must validate
 * against the original's response schema, apart from the deviations listed below (each one is
 * also a row of docs/compatibility.md, which a test checks).
 *
 * The document is OpenAPI 3.0: `nullable: true` and `#/components/schemas/X` references, which
 * Ajv reads once the whole document is added as a schema. Only success responses carry
 * schemas there, so only those are checked.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { nullableFields } from './sdk-types.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

/**
 * The published document sits in the workplace's shared folder beside the project
 * (`../shared/reference/`). A clone made elsewhere (a CI scratch directory) finds it through
 * SHARED_DIR, or at the workplace's own /work/shared; without it the contract tests fail, as
 * they must, rather than check nothing.
 */
const REFERENCE_FILE = 'reference/smartlinks-openapi-subset.yaml';
export const REFERENCE_PATH =
  [process.env.SHARED_DIR, fileURLToPath(new URL('../../../shared/', import.meta.url)), '/work/shared']
    .filter((dir): dir is string => Boolean(dir))
    .map((dir) => join(dir, REFERENCE_FILE))
    .find((file) => existsSync(file)) ?? fileURLToPath(new URL(`../../../shared/${REFERENCE_FILE}`, import.meta.url));

type Schema = Record<string, unknown>;

/**
 * What we answer differently on purpose. `operation` is `METHOD /template` as the original
 * writes it; `path` is the instance path of the error (a `*` segment matches any one segment:
 * an index or a key); `keyword` the Ajv keyword it fails; `why` the reason, which
 * docs/compatibility.md gives too.
 */
export interface Deviation {
  /** The operations it applies to. */
  operations: string[];
  /** Instance paths (`*` for one segment) of the errors it explains. */
  paths: string[];
  keyword?: string;
  /** Quoted in docs/compatibility.md's list of deliberate differences (a test checks). */
  field: string;
  why: string;
}

const JOB_READS = [
  'GET /admin/collection/{collectionId}/async/jobs/{jobId}',
  'GET /admin/collection/{collectionId}/jobs/{jobId}',
];
const LOCATION_READS = [
  'POST /platform/location',
  'POST /admin/collection/{collectionId}/location',
  'GET /public/location/{locationId}',
  'GET /public/collection/{collectionId}/location/{locationId}',
  'GET /admin/collection/{collectionId}/location/search',
];

const OBJECT_ROUTES = (kind: string, id: string) => {
  const base = `/{zone}/collection/{collectionId}/app/{appId}/${kind}`;
  return [`POST ${base}`, `GET ${base}`, `GET ${base}/{${id}}`, `PATCH ${base}/{${id}}`];
};
const CASE_ROUTES = [
  ...OBJECT_ROUTES('cases', 'caseId'),
  'POST /{zone}/collection/{collectionId}/app/{appId}/cases/{caseId}/history',
];
const THREAD_ROUTES = [
  ...OBJECT_ROUTES('threads', 'threadId'),
  'POST /{zone}/collection/{collectionId}/app/{appId}/threads/{threadId}/reply',
];
const RECORD_ROUTES = [
  ...OBJECT_ROUTES('records', 'recordId'),
  'POST /{zone}/collection/{collectionId}/app/{appId}/records/upsert',
  'POST /{zone}/collection/{collectionId}/app/{appId}/records/{recordId}/restore',
];
const RELATED = 'GET /{zone}/collection/{collectionId}/app/{appId}/cases/{caseId}/related';
/** An object's field at the top of an answer, in a list of them, or in a case's related lists. */
const anywhere = (fields: string[]) =>
  fields.flatMap((f) => [`/${f}`, `/items/*/${f}`, `/data/*/${f}`, `/threads/*/${f}`, `/records/*/${f}`]);
const SDK_NULLS = "null when unset, as the original's SDK types it (`T | null`); its published document drops the null";

export const DEVIATIONS: Deviation[] = [
  ...(
    [
      ['AppCase', 'case', CASE_ROUTES],
      ['AppThread', 'thread', [...THREAD_ROUTES, RELATED]],
      ['AppRecord', 'record', [...RECORD_ROUTES, RELATED]],
    ] as const
  ).map(([type, kind, operations]) => ({
    operations: [...operations],
    paths: anywhere(nullableFields(kind)),
    keyword: 'type',
    field: `${type}: ${nullableFields(kind).join(', ')}`,
    why: SDK_NULLS,
  })),
  {
    operations: [...CASE_ROUTES, ...THREAD_ROUTES, ...RECORD_ROUTES, RELATED],
    paths: anywhere(['owner', 'admin']),
    keyword: 'required',
    field: 'owner and admin sections',
    why: "left out for a caller who may not see them (the original's guides describe the same stripping); its published document marks them required",
  },
  {
    operations: [
      'POST /admin/collection/{collectionId}/interactions/counts-by-outcome',
      'POST /public/collection/{collectionId}/interactions/counts-by-outcome',
    ],
    paths: ['/*/outcome'],
    keyword: 'type',
    field: 'OutcomeCount.outcome',
    why: "a string, or null for events without one, as the original's SDK types it (`string | null`); its published document says `object`",
  },
  {
    operations: ['POST /admin/collection/{collectionId}/interactions/aggregate'],
    paths: ['/rows/*/groupValue'],
    keyword: 'type',
    field: 'AdminInteractionsAggregateRow.groupValue',
    why: "null for the group of events without the grouped field, as the original's SDK types it (`string | null`); its published document says `string`",
  },
  {
    operations: ['POST /public/collection/{collectionId}/interactions/submit'],
    paths: ['', '/success', '/error', '/reason'],
    field: 'SubmitInteractionResponse.success',
    why: "`true`, as the original's SDK types it; its published document says `object`. A refusal is an error status here (401, 409 for a duplicate), not a 200 with `{error, reason}`",
  },
  {
    operations: [...JOB_READS, 'GET /admin/collection/{collectionId}/jobs'],
    paths: ['lastError', 'lockedAt', 'key', 'queueName'].flatMap((f) => [`/${f}`, `/items/*/${f}`]),
    keyword: 'type',
    field: 'Job.lastError, lockedAt, key, queueName',
    why: "null when unset, as the original's SDK types them (`string | null`); its published document drops the null",
  },
  {
    operations: LOCATION_READS,
    paths: ['/collectionId', '/items/*/collectionId'],
    keyword: 'type',
    field: 'Location.collectionId',
    why: "null for a global location, as the original's SDK types it (`string | null`); its published document drops the null",
  },
  {
    operations: ['POST /admin/collection/{collectionId}/journeys.analytics/{journeyId}/funnel-report'],
    paths: [
      '/stepId',
      '/enteredCount',
      '/completedCount',
      '/conversionRate',
      '/avgTimeToComplete',
      '/steps',
      '/periodStart',
      '/periodEnd',
    ],
    field: 'JourneyFunnelReportResponse',
    why: "the original's SDK types `steps` as an array of per-step counts and the period as `string | null`; its published document lists one step's fields at the top and `steps` as an object",
  },
  {
    operations: ['POST /{zone}/collection/{collectionId}/app/{appId}/records/bulk-upsert'],
    paths: ['/results'],
    keyword: 'type',
    field: 'BulkUpsertResult.results',
    why: "an array with one `{index, status, id, ref, created}` per item, as the original's SDK types it (`BulkUpsertResult.results: Array<…>`) and its clients read it; its published document says `object`",
  },
];

/** Operations of the original this service does not serve: they are not in the interface it implements. */
export const NOT_SERVED = [
  'POST /{zone}/collection/{collectionId}/app/{appId}/records/match',
  'POST /{zone}/collection/{collectionId}/app/{appId}/records/preview-rule',
  'POST /{zone}/collection/{collectionId}/app/{appId}/records/resolve-all',
];

interface Route {
  method: string;
  template: string;
  pattern: RegExp;
  /** Literal segments: the more, the more specific (`/interactions/query` over `/interactions/{id}`). */
  literals: number;
  responses: Map<number, string>;
}

let loaded: { ajv: Ajv; routes: Route[]; validators: Map<string, ValidateFunction> } | undefined;

function load() {
  if (loaded) return loaded;
  const doc = parse(readFileSync(REFERENCE_PATH, 'utf8')) as Schema;
  // The subset names a few components it does not define (JobStatus, Visibility, …): what it
  // does not say is not checked, so each stands for any value.
  const components = (doc.components as { schemas: Record<string, Schema> }).schemas;
  for (const name of JSON.stringify(doc).matchAll(/#\/components\/schemas\/([A-Za-z0-9_]+)/g)) {
    components[name[1]] ??= {};
  }
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'original');
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    const segments = template.split('/').filter(Boolean);
    const pattern = new RegExp(
      `^/${segments.map((s) => (s.startsWith('{') ? '[^/]+' : s.replace(/[.]/g, '\\.'))).join('/')}/?$`,
    );
    for (const [method, op] of Object.entries(item)) {
      const responses = new Map<number, string>();
      for (const [status, r] of Object.entries((op.responses ?? {}) as Record<string, Schema>)) {
        const schema = (r.content as Record<string, { schema?: Schema }> | undefined)?.['application/json']?.schema;
        if (!schema) continue;
        // A pointer into the document, so `$ref`s inside resolve against it.
        const pointer = `original#/paths/${pointerSegment(template)}/${method}/responses/${status}/content/application~1json/schema`;
        responses.set(Number(status), pointer);
      }
      routes.push({
        method: method.toUpperCase(),
        template,
        pattern,
        literals: segments.filter((s) => !s.startsWith('{')).length,
        responses,
      });
    }
  }
  loaded = { ajv, routes, validators: new Map() };
  return loaded;
}

const pointerSegment = (template: string) => template.replace(/~/g, '~0').replace(/\//g, '~1');

/** The original's operation for a request to this service (path without BASE_PATH or query). */
export function originalOperation(method: string, path: string): Route | undefined {
  const bare = path.split('?')[0];
  const matches = load().routes.filter((r) => r.method === method.toUpperCase() && r.pattern.test(bare));
  return matches.sort((x, y) => y.literals - x.literals)[0];
}

export interface Mismatch {
  operation: string;
  path: string;
  keyword: string;
  message: string;
}

const pathPattern = (path: string) => new RegExp(`^${path.replace(/[.]/g, '\\.').replace(/\*/g, '[^/]+')}$`);

const deviates = (operation: string, e: ErrorObject) =>
  DEVIATIONS.some(
    (d) =>
      d.operations.includes(operation) &&
      (d.keyword === undefined || d.keyword === e.keyword) &&
      d.paths.some((p) => pathPattern(p).test(errorPath(e))),
  );

/** The field an error is about: for a missing required field, the field itself. */
const errorPath = (e: ErrorObject) =>
  e.keyword === 'required'
    ? `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`
    : e.instancePath;

/**
 * What in a response differs from the original's schema for it, deviations left out; an empty
 * list when it matches, or when the original documents no schema for this operation and status.
 */
export function mismatches(method: string, path: string, status: number, body: unknown): Mismatch[] {
  const route = originalOperation(method, path);
  const pointer = route?.responses.get(status);
  if (!route || !pointer) return [];
  const { ajv, validators } = load();
  let validate = validators.get(pointer);
  if (!validate) {
    validate = ajv.getSchema(pointer);
    if (!validate) throw new Error(`the reference has no schema at ${pointer}`);
    validators.set(pointer, validate);
  }
  if (validate(body)) return [];
  const operation = `${route.method} ${route.template}`;
  return (validate.errors ?? [])
    .filter((e) => !deviates(operation, e))
    .map((e) => ({ operation, path: errorPath(e), keyword: e.keyword, message: e.message ?? '' }));
}

/** Every operation of the reference, as `METHOD /template`. */
export const originalOperations = (): string[] => load().routes.map((r) => `${r.method} ${r.template}`);
