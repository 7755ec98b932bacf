/**
 * Request validation with two Ajv instances: bodies are strict (no type coercion, unknown
 * fields rejected where a schema is closed), while query strings, params and headers are
 * coerced as usual because everything in a URL arrives as text.
 */
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';

// ajv-formats ships CommonJS; under NodeNext its default export is the module namespace.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

function makeAjv(externalSchemas: Record<string, unknown>, options: Options): Ajv {
  const ajv = new Ajv({ removeAdditional: false, useDefaults: true, allErrors: true, strict: false, ...options });
  addFormats(ajv);
  for (const schema of Object.values(externalSchemas)) ajv.addSchema(schema as object);
  return ajv;
}

export function buildValidatorCompiler(externalSchemas: Record<string, unknown>): FastifySchemaCompiler<unknown> {
  const strict = makeAjv(externalSchemas, { coerceTypes: false });
  const coercing = makeAjv(externalSchemas, { coerceTypes: 'array' });
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}

/** preValidation for POST routes whose body is all optional: no body is validated as `{}`. */
export async function emptyBodyIsObject(req: FastifyRequest): Promise<void> {
  if (req.body === undefined || req.body === null) req.body = {};
}
