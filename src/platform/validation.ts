/**
 * Request validation with two Ajv instances: bodies are strict (no type coercion, unknown
 * fields rejected where a schema is closed), while query strings, params and headers are
 * coerced as usual because everything in a URL arrives as text.
 *
 * Bodies are validated up to their first error. With `allErrors`, Ajv keeps going after a
 * failed `maxItems` and checks every item (and `uniqueItems` pairwise): a 0.5 MB array took
 * seconds of CPU and produced a 17 MB list of errors. A URL is small (Node caps the request
 * line and headers at 16 KB), so query strings and params still list every failing field.
 */
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';

// ajv-formats ships CommonJS; under NodeNext its default export is the module namespace.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

function makeAjv(externalSchemas: Record<string, unknown>, options: Options): Ajv {
  const ajv = new Ajv({ removeAdditional: false, useDefaults: true, strict: false, ...options });
  addFormats(ajv);
  for (const schema of Object.values(externalSchemas)) ajv.addSchema(schema as object);
  return ajv;
}

export function buildValidatorCompiler(externalSchemas: Record<string, unknown>): FastifySchemaCompiler<unknown> {
  const strict = makeAjv(externalSchemas, { coerceTypes: false, allErrors: false });
  const coercing = makeAjv(externalSchemas, { coerceTypes: 'array', allErrors: true });
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}

/** preValidation for POST routes whose body is all optional: no body is validated as `{}`. */
export async function emptyBodyIsObject(req: FastifyRequest): Promise<void> {
  if (req.body === undefined || req.body === null) req.body = {};
}
