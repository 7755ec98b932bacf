/**
 * The JSON Schemas apps give their tasks' payloads (`payloadSchema` of POST .../tasks): checked
 * when declared, compiled once per process, and used on every enqueue.
 *
 * A tenant's schema becomes code that runs on every enqueue of that task, so only what is cheap
 * to run whatever the payload is accepted: draft-07 keywords from a list, without `pattern` and
 * `patternProperties` (a regular expression of the tenant's could backtrack for minutes on a
 * 1 MiB payload, and Node has no linear-time engine), without `$ref` (a schema that refers to
 * itself would recurse until the stack runs out), and `uniqueItems` only with a `maxItems` of at
 * most 1000 beside it (items are compared pairwise). The whole schema is bounded in size and
 * depth. What is refused is named, with where it is, so the fix is plain.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { badRequest } from '../../platform/errors.ts';

// ajv-formats ships CommonJS; under NodeNext its default export is the module namespace.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
  options?: { mode?: 'fast' | 'full' },
) => Ajv;

export const PAYLOAD_SCHEMA_LIMITS = {
  /** Its JSON, in bytes. */
  bytes: 16_384,
  /** JSON nesting (`{}` is 1). */
  depth: 16,
  /** `uniqueItems` needs a `maxItems` of at most this beside it. */
  uniqueItems: 1000,
};

/** Keywords whose value is a schema. */
const SCHEMA_VALUED = new Set([
  'additionalProperties',
  'additionalItems',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf']);
/** Keywords whose value is a map of schemas. */
const SCHEMA_MAPS = new Set(['properties']);
/** Keywords that constrain or annotate without holding schemas. */
const PLAIN = new Set([
  '$schema',
  '$comment',
  'title',
  'description',
  'default',
  'examples',
  'readOnly',
  'writeOnly',
  'deprecated',
  'type',
  'enum',
  'const',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'format',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxProperties',
  'minProperties',
  'required',
]);
/** Why a keyword is refused, when there is more to say than "not supported". */
const REFUSED: Record<string, string> = {
  pattern: 'a tenant’s regular expression could block the service on a long string; check such rules in your worker',
  patternProperties:
    'a tenant’s regular expression could block the service on a long string; check such rules in your worker',
  $ref: 'a schema that refers to itself would recurse without end; write the definition inline',
  $defs: 'there is no $ref to use it; write the definition inline',
  definitions: 'there is no $ref to use it; write the definition inline',
};

/** The JSON nesting of a value (`{}` and `[]` are 1, a scalar 0). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let deepest = 0;
  for (const v of Object.values(value)) deepest = Math.max(deepest, depthOf(v));
  return deepest + 1;
}

/** Refuses a keyword outside the list, anywhere in the schema, naming it and where it is. */
function checkKeywords(schema: unknown, at: string): void {
  if (typeof schema === 'boolean') return;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema))
    throw badRequest(`payloadSchema${at} must be a JSON Schema (an object or a boolean)`, {
      field: `payloadSchema${at}`,
    });
  const node = schema as Record<string, unknown>;
  for (const [key, value] of Object.entries(node)) {
    const where = `${at}/${key}`;
    if (Object.hasOwn(REFUSED, key))
      throw badRequest(`payloadSchema${where}: "${key}" is not accepted: ${REFUSED[key]}`, {
        field: `payloadSchema${where}`,
      });
    if (SCHEMA_VALUED.has(key)) checkKeywords(value, where);
    else if (SCHEMA_LISTS.has(key)) {
      if (!Array.isArray(value))
        throw badRequest(`payloadSchema${where} must be a list of schemas`, { field: `payloadSchema${where}` });
      for (const [i, s] of value.entries()) checkKeywords(s, `${where}/${i}`);
    } else if (SCHEMA_MAPS.has(key)) {
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        throw badRequest(`payloadSchema${where} must be an object of schemas`, { field: `payloadSchema${where}` });
      for (const [name, s] of Object.entries(value)) checkKeywords(s, `${where}/${name}`);
    } else if (key === 'items') {
      if (Array.isArray(value)) for (const [i, s] of value.entries()) checkKeywords(s, `${where}/${i}`);
      else checkKeywords(value, where);
    } else if (!PLAIN.has(key))
      throw badRequest(
        `payloadSchema${where}: keyword "${key}" is not supported; the accepted keywords are listed in docs/workers.md ("Payload schemas")`,
        { field: `payloadSchema${where}` },
      );
  }
  if (node.uniqueItems === true) {
    const max = node.maxItems;
    if (typeof max !== 'number' || max > PAYLOAD_SCHEMA_LIMITS.uniqueItems)
      throw badRequest(
        `payloadSchema${at}: "uniqueItems" needs "maxItems" of at most ${PAYLOAD_SCHEMA_LIMITS.uniqueItems} beside it (items are compared pairwise)`,
        { field: `payloadSchema${at}/uniqueItems` },
      );
  }
}

/** The most compiled schemas a process keeps (the least recently used goes first). */
const KEPT = 500;

export class PayloadSchemas {
  // Strict about the schema itself (an unknown format is refused, not ignored), not about its
  // style (a keyword without its `type` beside it is fine); nothing is logged.
  private readonly ajv = new Ajv({
    allErrors: false,
    strictSchema: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    coerceTypes: false,
    useDefaults: false,
    logger: false,
  });
  /** Compiled validators by the schema's JSON. */
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor() {
    addFormats(this.ajv, { mode: 'fast' });
  }

  /**
   * Checks a schema an app gives (bounds, keywords, that it compiles); throws a 400 naming the
   * problem. Answers its validator.
   */
  check(schema: unknown): ValidateFunction {
    const text = JSON.stringify(schema);
    if (Buffer.byteLength(text) > PAYLOAD_SCHEMA_LIMITS.bytes)
      throw badRequest(`payloadSchema is over ${PAYLOAD_SCHEMA_LIMITS.bytes} bytes of JSON; keep it smaller`, {
        field: 'payloadSchema',
        limit: PAYLOAD_SCHEMA_LIMITS.bytes,
      });
    if (depthOf(schema) > PAYLOAD_SCHEMA_LIMITS.depth)
      throw badRequest(`payloadSchema nests deeper than ${PAYLOAD_SCHEMA_LIMITS.depth} levels; flatten it`, {
        field: 'payloadSchema',
        limit: PAYLOAD_SCHEMA_LIMITS.depth,
      });
    checkKeywords(schema, '');
    return this.validator(schema, text);
  }

  /**
   * The validator of a stored schema (checked when it was declared), compiled once per process.
   * Throws a 400 naming why it does not compile.
   */
  validator(schema: unknown, text = JSON.stringify(schema)): ValidateFunction {
    const kept = this.compiled.get(text);
    if (kept) {
      // Most recently used last: the first in the map is the one to drop.
      this.compiled.delete(text);
      this.compiled.set(text, kept);
      return kept;
    }
    // `$schema` is not compiled: every schema is read as draft-07, whatever it names.
    const { $schema: _ignored, ...body } = (typeof schema === 'object' && schema !== null ? schema : {}) as Record<
      string,
      unknown
    >;
    const target = typeof schema === 'boolean' ? schema : body;
    let validate: ValidateFunction;
    try {
      validate = this.ajv.compile(target as object);
    } catch (err) {
      throw badRequest(`payloadSchema does not compile: ${(err as Error).message}`, { field: 'payloadSchema' });
    }
    // The Ajv keeps what it compiled by the schema object; this map decides what stays.
    this.compiled.set(text, validate);
    if (this.compiled.size > KEPT) {
      const [oldest] = this.compiled.keys();
      const dropped = this.compiled.get(oldest);
      this.compiled.delete(oldest);
      if (dropped && typeof dropped.schema === 'object') this.ajv.removeSchema(dropped.schema);
    }
    return validate;
  }
}

/** The first problem a validator found, as "<path> <message>" ("/" for the payload itself). */
export function firstProblem(validate: ValidateFunction): string {
  const e = validate.errors?.[0];
  if (!e) return '/ does not match the schema';
  return `${e.instancePath || '/'} ${e.message ?? 'does not match the schema'}`;
}
