/**
 * Request validation with two Ajv instances: bodies are strict (no type coercion, unknown
 * fields rejected where a schema is closed), while query strings, params and headers are
 * coerced as usual because everything in a URL arrives as text.
 *
 * Bodies are validated up to their first error. With `allErrors`, Ajv keeps going after a
 * failed `maxItems` and checks every item (and `uniqueItems` pairwise): a 0.5 MB array took
 * seconds of CPU and produced a 17 MB list of errors. A URL is small (Node caps the request
 * line and headers at 16 KB), so query strings and params still list every failing field.
 *
 * Compiled validators and serializers are kept for the life of the process, keyed by the
 * shared schemas and by each schema's JSON. One service builds its app once, so this changes
 * nothing there; a process that builds many apps (every in-process test file builds one) would
 * otherwise compile the same ~150 schemas for each, about 2 s of CPU per app. A validator or a
 * serializer is a pure function of its schema, its shared schemas and the options, which is
 * exactly the key.
 */

import { isDeepStrictEqual } from 'node:util';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { Ajv, type Options, type SchemaValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { INSTANT_KEYWORD, type InstantEdge, parseInstant } from './instants.ts';

// ajv-formats ships CommonJS; under NodeNext its default export is the module namespace.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

function makeAjv(externalSchemas: Record<string, unknown>, options: Options): Ajv {
  const ajv = new Ajv({ removeAdditional: false, useDefaults: true, strict: false, ...options });
  addFormats(ajv);
  addInstantKeyword(ajv);
  replaceUniqueItems(ajv);
  for (const schema of Object.values(externalSchemas)) ajv.addSchema(schema as object);
  return ajv;
}

/**
 * `uniqueItems` checked with a Set (deep equality for objects and arrays). Ajv's own check of
 * string items keeps seen values as keys of a plain object, where `"__proto__"` is the
 * prototype, not a key: `["__proto__", "__proto__"]` passed, and the response serializer, which
 * checks otherwise, then failed on the stored value (a 500 found by the fuzz test).
 */
function replaceUniqueItems(ajv: Ajv): void {
  const validate: SchemaValidateFunction = (unique, data) => {
    if (unique !== true || !Array.isArray(data)) return true;
    const seen = new Set<unknown>();
    const objects: unknown[] = [];
    for (let i = 0; i < data.length; i++) {
      const item = data[i];
      const isObject = item !== null && typeof item === 'object';
      if (isObject ? objects.some((o) => isDeepStrictEqual(o, item)) : seen.has(item)) {
        validate.errors = [{ keyword: 'uniqueItems', message: 'must NOT have duplicate items', params: { i } }];
        return false;
      }
      if (isObject) objects.push(item);
      else seen.add(item);
    }
    return true;
  };
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: true, validate });
}

/**
 * `x-instant: 'start' | 'end' | 'last'` (set by `Instant()`, platform/schemas.ts): the string must be
 * an ISO 8601 date or date-time of a real day, and is replaced by its RFC 3339 instant in UTC,
 * so what reaches a handler is always a full instant whatever form the client wrote.
 */
function addInstantKeyword(ajv: Ajv): void {
  const validate: SchemaValidateFunction = (edge, data, _parentSchema, cxt) => {
    const instant = typeof data === 'string' ? parseInstant(data, edge as InstantEdge) : undefined;
    if (!instant) {
      validate.errors = [
        {
          keyword: INSTANT_KEYWORD,
          message: 'must be an ISO 8601 date or date-time (2026-11-21, 2026-11-21T10:00Z, 2026-11-21T10:00:00+01:00)',
          params: {},
        },
      ];
      return false;
    }
    if (cxt) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = instant.toISOString();
    return true;
  };
  ajv.addKeyword({
    keyword: INSTANT_KEYWORD,
    type: 'string',
    schemaType: 'string',
    modifying: true,
    errors: true,
    validate,
  });
}

/** One value per key for the life of the process, made on first use. */
function memo<T>(make: (key: string) => T): (key: string) => T {
  const kept = new Map<string, T>();
  return (key) => {
    let value = kept.get(key);
    if (value === undefined) {
      value = make(key);
      kept.set(key, value);
    }
    return value;
  };
}

type Validate = ReturnType<FastifySchemaCompiler<unknown>>;

/**
 * The key of a set of shared schemas: their ids. A named schema's content never changes within a
 * process (one schema per `$id`, platform/schemas.ts `ref`), so the ids name the set; stringifying
 * the whole set instead cost ~3 ms for every route of every app once all of a service's ~150
 * named schemas share one context.
 */
const externalsKey = (externals: Record<string, unknown>) => Object.keys(externals).sort().join('\n');

/** The shared schemas of a key, kept with it (the memo's factories receive only the key). */
const externalsOfKey = new Map<string, Record<string, unknown>>();

function keyOf(externals: Record<string, unknown> = {}): string {
  const key = externalsKey(externals);
  if (!externalsOfKey.has(key)) externalsOfKey.set(key, externals);
  return key;
}

const validatorsFor = memo((key: string) => {
  const externals = externalsOfKey.get(key) as Record<string, unknown>;
  const strict = makeAjv(externals, { coerceTypes: false, allErrors: false });
  const coercing = makeAjv(externals, { coerceTypes: 'array', allErrors: true });
  // Keyed by which Ajv compiles it, then the schema's JSON.
  return memo((key): Validate => {
    const ajv = key[0] === 'b' ? strict : coercing;
    return ajv.compile(JSON.parse(key.slice(1)) as object) as Validate;
  });
});

export function buildValidatorCompiler(externalSchemas: Record<string, unknown>): FastifySchemaCompiler<unknown> {
  const compile = validatorsFor(keyOf(externalSchemas));
  return ({ schema, httpPart }) => compile(`${httpPart === 'body' ? 'b' : 'q'}${JSON.stringify(schema)}`);
}

type SerializerFactory = SerializerSelector.SerializerFactory;
const fastJsonStringify = SerializerSelector();

const serializersFor = memo((key: string) => {
  const [externalsId, optionsJson] = key.split('\0');
  const options = JSON.parse(optionsJson) as SerializerSelector.Options;
  const compiler = fastJsonStringify(externalsOfKey.get(externalsId), options);
  // The route (method, url, status) is not part of what fast-json-stringify compiles.
  return memo((schemaJson) => compiler({ method: '', url: '', httpStatus: '', schema: JSON.parse(schemaJson) }));
});

/** Fastify's own serializer (fast-json-stringify), compiled once per schema in a process. */
export const buildSerializerCompiler: SerializerFactory = (externals, options) => {
  const compile = serializersFor(
    `${keyOf(externals as Record<string, unknown> | undefined)}\0${JSON.stringify(options ?? {})}`,
  );
  return ({ schema }) => compile(JSON.stringify(schema));
};

/** preValidation for POST routes whose body is all optional: no body is validated as `{}`. */
export async function emptyBodyIsObject(req: FastifyRequest): Promise<void> {
  if (req.body === undefined || req.body === null) req.body = {};
}
