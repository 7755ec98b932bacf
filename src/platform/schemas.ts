/**
 * Shared TypeBox shapes. Route schemas are the single source for validation,
 * serialisation, TypeScript types and the OpenAPI document.
 */
import { type TProperties, type TSchema, Type } from 'typebox';
import { SLUG_MAX_LENGTH, SLUG_PATTERN } from './ids.ts';
import { INSTANT_KEYWORD, INSTANT_MAX_LENGTH, type InstantEdge } from './instants.ts';

/** A closed object: unknown fields are a 400, not silently dropped. */
export const Closed = <P extends TProperties>(properties: P, options: Record<string, unknown> = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options });

/**
 * Keys of one open object at its top level. Open sections take what a client stores, so the
 * bound is generous; what is nested inside is bounded by the body limit (1 MiB) and the JSON
 * depth limit (JSON_MAX_DEPTH, see platform/json-body.ts).
 */
export const OPEN_OBJECT_MAX_PROPERTIES = 1000;

/** An open JSON object (the `data`, `owner`, `admin`, `metadata`, `payload` sections). */
export const OpenObject = (options: Record<string, unknown> = {}) =>
  Type.Record(Type.String(), Type.Unknown(), { maxProperties: OPEN_OBJECT_MAX_PROPERTIES, ...options });

/**
 * A point in time in a request: an ISO 8601 date or date-time, with or without seconds or an
 * offset (platform/instants.ts has the rules). Validation rewrites it to full RFC 3339 in UTC,
 * so a handler reads `2026-11-21T00:00:00.000Z` where the client wrote `2026-11-21`. `edge`
 * says which end of a window the field is: a date alone as an `end` (exclusive) or a `last`
 * (inclusive end) includes that whole day.
 */
export const Instant = (description?: string, edge: InstantEdge = 'start') =>
  Type.String({
    maxLength: INSTANT_MAX_LENGTH,
    [INSTANT_KEYWORD]: edge,
    description: [
      description,
      edge === 'start'
        ? "ISO 8601 date or date-time (UTC when no offset); a date alone is that day's start"
        : 'ISO 8601 date or date-time (UTC when no offset); a date alone includes that whole day',
    ]
      .filter(Boolean)
      .join('. '),
  });

/** Whether a stored JSON value is an object (what `OpenObject` holds): not an array, not null. */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A client-chosen identifier (collection id, app id). */
export const Slug = (description?: string) =>
  Type.String({ pattern: SLUG_PATTERN, maxLength: SLUG_MAX_LENGTH, description });

export const CollectionIdParam = Slug('The collection (tenant) id');

/**
 * The paging fields of a list's query: `limit` from 1 to `max` (`byDefault` when not given)
 * and `offset` from 0 (to `maxOffset` when given). Spread into the query's fields where the
 * list places them.
 */
export const pageQuery = (max: number, byDefault: number, maxOffset?: number) => ({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: max, default: byDefault })),
  offset: Type.Optional(
    Type.Integer(maxOffset === undefined ? { minimum: 0, default: 0 } : { minimum: 0, maximum: maxOffset, default: 0 }),
  ),
});

/**
 * A list query's limit and offset, with the defaults its `pageQuery` declares: HTTP's
 * validation fills them in, a service called from code gets them here.
 */
export const paging = (q: { limit?: number; offset?: number }, byDefault: number) => ({
  limit: q.limit ?? byDefault,
  offset: q.offset ?? 0,
});

/** A page with its total, as a service answers it for `Page(item, { total: true })`. */
export interface PageWithTotal<T> {
  items: T[];
  limit: number;
  offset: number;
  total: number;
}

const pageFields = <T extends TSchema>(item: T) => ({
  items: Type.Array(ref(item)),
  limit: Type.Integer(),
  offset: Type.Integer(),
});
type PageFields<T extends TSchema, Total> = ReturnType<typeof pageFields<T>> &
  (Total extends true ? { total: ReturnType<typeof Type.Integer> } : unknown);

/**
 * A page of a list: its items (each a reference to the named item schema), the limit and
 * offset that chose them, and with `total: true` how many there are in all. `$id` names it.
 */
export const Page = <T extends TSchema, Total extends boolean = false>(
  item: T,
  options: { $id?: string; total?: Total } = {},
) => {
  const fields = options.total ? { ...pageFields(item), total: Type.Integer() } : pageFields(item);
  return Closed(fields as PageFields<T, Total>, options.$id === undefined ? {} : { $id: options.$id });
};

export const ErrorBody = Type.Object(
  {
    code: Type.Integer(),
    errorCode: Type.String(),
    message: Type.String(),
    details: Type.Optional(OpenObject()),
    requestId: Type.String(),
    error: Type.Optional(
      Type.String({
        description: 'Only on a refusal clients branch on (e.g. a refused interaction submit): its kind, `FORBIDDEN`',
      }),
    ),
    reason: Type.Optional(
      Type.String({
        description:
          'Only with `error`: why the call was refused (e.g. `duplicate`, `after_end`); the same as `details.reason`',
      }),
    ),
  },
  { $id: 'ErrorBody', description: 'The one error body of the service' },
);

const errorRef = (description: string) => ({ ...Type.Ref('ErrorBody'), description });

/** The error responses every route documents: 400, 401, 404, and 429 for rate limits. */
export const errorResponses = {
  400: errorRef('Bad request: validation failed or a malformed body'),
  401: errorRef('Missing, invalid, or insufficient credential'),
  404: errorRef('Not found (also for resources of another collection)'),
  429: errorRef('Rate limited; see Retry-After'),
};

export const SuccessBody = Closed({ success: Type.Boolean() });

/**
 * The schemas `ref()` has referenced, by `$id`: the route vocabulary (platform/routes.ts)
 * registers what a route's `$ref`s name from here, so no module keeps a list of its schemas.
 */
const named = new Map<string, TSchema>();

/**
 * A reference to a named schema (added with `app.addSchema`) that keeps the schema's static
 * type: the route then types `req.body` (or a response) from it, and the OpenAPI document
 * still shows one named component instead of a copy per route.
 */
export const ref = <T extends TSchema>(schema: T, options: Record<string, unknown> = {}): T => {
  // `$id` is given in the options of `Closed`/`Type.Object`, which their static type does not
  // carry; a schema without one could not be referenced, so that is refused at start-up.
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref(): the schema has no $id; give it one');
  const known = named.get(id);
  if (known && known !== schema) throw new Error(`ref(): two different schemas are named ${id}`);
  named.set(id, schema);
  return Type.Ref(id, options) as unknown as T;
};

/** The schema a `ref()` named, if one did. */
export const namedSchema = (id: string): TSchema | undefined => named.get(id);
