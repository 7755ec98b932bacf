/**
 * Answers match the service's own OpenAPI document, checked before serialisation.
 *
 * Fastify writes a response through fast-json-stringify, which coerces a value that does not fit
 * its schema instead of refusing it: a `null` in a field typed `string` goes out as `""`, in an
 * `integer` as `0`, in an object as `{}`, in a boolean as `false`. A field the document calls
 * non-null would then quietly carry a made-up value. In the test app every success payload is
 * validated against its route's response schema first (Ajv, no coercion), so a `null` or a
 * missing required field that the document does not allow fails the test that saw it.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifyReply } from 'fastify';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

export interface ResponseViolation {
  route: string;
  status: number;
  errors: { path: string; message: string }[];
}

/** Adds the check to an app that is not ready yet; violations are pushed to the list returned. */
export function checkResponsesAgainstSchemas(app: FastifyInstance): ResponseViolation[] {
  const violations: ResponseViolation[] = [];
  const ajv = new Ajv({ strict: false, allErrors: true, coerceTypes: false });
  addFormats(ajv);
  const compiled = new WeakMap<object, ValidateFunction>();
  // Shared schemas are added by each module's routes in its own context: take them from the
  // route's context (`req.server`) as routes are seen.
  const validatorFor = (schema: object, shared: Record<string, unknown>) => {
    for (const [id, s] of Object.entries(shared)) if (!ajv.getSchema(id)) ajv.addSchema(s as object, id);
    let v = compiled.get(schema);
    if (!v) {
      v = ajv.compile(schema);
      compiled.set(schema, v);
    }
    return v;
  };
  app.addHook('preSerialization', async (req, reply: FastifyReply, payload) => {
    if (reply.statusCode >= 300 || payload === null || typeof payload !== 'object' || Buffer.isBuffer(payload))
      return payload;
    if (typeof (payload as { pipe?: unknown }).pipe === 'function') return payload;
    const responses = (reply.routeOptions.schema?.response ?? {}) as Record<string, object>;
    const schema = responses[reply.statusCode] ?? responses[`${String(reply.statusCode)[0]}xx`];
    if (!schema) return payload;
    // Validate the JSON the payload stands for (dates as text, undefined fields gone), as a
    // copy: the check must not change what is sent.
    const validate = validatorFor(schema, req.server.getSchemas());
    if (!validate(JSON.parse(JSON.stringify(payload)))) {
      violations.push({
        route: `${req.method} ${reply.routeOptions.url}`,
        status: reply.statusCode,
        errors: (validate.errors ?? []).slice(0, 10).map((e) => ({ path: e.instancePath, message: e.message ?? '' })),
      });
    }
    return payload;
  });
  return violations;
}
