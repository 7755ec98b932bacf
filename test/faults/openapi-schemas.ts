/**
 * Helpers for the fault tests that read the generated OpenAPI document: the operations with
 * their request schemas ($refs resolved), and a walk that finds request fields without limits.
 */
import type { TestApp } from '../helpers/app.ts';

export type Schema = Record<string, unknown>;

export interface Operation {
  method: string;
  path: string;
  op: Schema;
  /** The JSON body schema, when the operation takes one. */
  body?: Schema;
  params: { name: string; in: string; required: boolean; schema: Schema }[];
}

export async function readOperations(t: TestApp): Promise<{ spec: Schema; operations: Operation[] }> {
  const res = await t.inject({ method: 'GET', url: `${t.config.basePath}/openapi.json` });
  const spec = res.json() as Schema;
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const content = (op.requestBody as { content?: Record<string, { schema: Schema }> } | undefined)?.content;
      operations.push({
        method: method.toUpperCase(),
        path,
        op,
        body: content?.['application/json']?.schema,
        params: (op.parameters ?? []) as Operation['params'],
      });
    }
  }
  return { spec, operations };
}

/** Resolves `#/components/schemas/X` references (one level; call again on the result's parts). */
export function resolver(spec: Schema) {
  const components = ((spec.components as Schema | undefined)?.schemas ?? {}) as Record<string, Schema>;
  return (s: Schema): Schema => {
    let cur = s;
    for (let i = 0; i < 10 && typeof cur.$ref === 'string'; i++) {
      const name = (cur.$ref as string).replace('#/components/schemas/', '');
      cur = components[name];
      if (!cur) throw new Error(`unresolved ${s.$ref}`);
    }
    return cur;
  };
}

const typesOf = (s: Schema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type as string] : []);

/** Request-side places where a string, array or open object has no upper bound. */
export function unboundedFields(spec: Schema, root: Schema, where: string): string[] {
  const resolve = resolver(spec);
  const out: string[] = [];
  const seen = new Set<Schema>();
  const walk = (raw: Schema, at: string) => {
    const s = resolve(raw);
    if (seen.has(s)) return;
    seen.add(s);
    for (const k of ['anyOf', 'oneOf', 'allOf'] as const) {
      for (const sub of (s[k] as Schema[] | undefined) ?? []) walk(sub, at);
    }
    const types = typesOf(s);
    if (types.includes('string') && s.const === undefined && s.enum === undefined && s.maxLength === undefined) {
      out.push(`${where} ${at}: string without maxLength`);
    }
    if (types.includes('array')) {
      if (s.maxItems === undefined) out.push(`${where} ${at}: array without maxItems`);
      if (s.items) walk(s.items as Schema, `${at}[]`);
    }
    if (types.includes('object')) {
      for (const [name, sub] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) {
        walk(sub, `${at}.${name}`);
      }
      const open =
        s.additionalProperties === true ||
        (typeof s.additionalProperties === 'object' && s.additionalProperties !== null) ||
        s.patternProperties !== undefined ||
        (s.additionalProperties === undefined && s.properties === undefined);
      if (open && s.maxProperties === undefined) out.push(`${where} ${at}: open object without maxProperties`);
      for (const sub of Object.values((s.patternProperties ?? {}) as Record<string, Schema>)) walk(sub, `${at}.*`);
      if (typeof s.additionalProperties === 'object' && s.additionalProperties !== null) {
        walk(s.additionalProperties as Schema, `${at}.*`);
      }
    }
  };
  walk(root, '');
  return out;
}
