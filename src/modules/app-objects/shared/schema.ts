/** TypeBox pieces shared by the three kinds: params, list envelope, aggregate shapes, response builder. */
import { type TSchema, Type } from 'typebox';
import { Closed, CollectionIdParam, Instant, OpenObject, ref, Slug } from '../../../platform/schemas.ts';
import { INTERVALS } from './aggregate.ts';
import type { ObjectKind } from './kinds.ts';
import { MAX_LIMIT } from './list-query.ts';

export const Zone = Type.Union([Type.Literal('admin'), Type.Literal('public')], {
  description: '`admin` (admin credential of the collection) or `public` (user token; admins too)',
});
export const AppIdParam = Slug('The app id');
export const ObjectIdParam = Type.String({ minLength: 1, maxLength: 100 });

export const AppParams = Type.Object({ zone: Zone, collectionId: CollectionIdParam, appId: AppIdParam });
/** The params of a route on one object: the app's, then the object id under `name`. */
export const objectParams = <N extends string>(name: N) =>
  Type.Object({
    zone: Zone,
    collectionId: CollectionIdParam,
    appId: AppIdParam,
    ...(Object.fromEntries([[name, ObjectIdParam]]) as Record<N, typeof ObjectIdParam>),
  });

export const Visibility = Type.Union([Type.Literal('public'), Type.Literal('owner'), Type.Literal('admin')], {
  description: '`public`: every user of the collection; `owner`: its owner; `admin`: admins only. Default `owner`.',
});

export const text = (maxLength = 200, description?: string) => Type.String({ maxLength, description });
/** When a record starts to apply, and when it stops (a date alone as an expiry includes that day). */
export const StartsAt = Instant('From this time on the record applies');
export const ExpiresAt = Instant('From this time on the record no longer applies', 'end');

/** How a user's create or reply may name its owner and author (the rule: `userIdentity`). */
export const CONTACT_ID =
  'The owner. On the public zone: the user token’s contact, which may be sent (another value: 401)';
export const AUTHOR_ID =
  'On the public zone: the user token’s user (the default) or contact; another value is a 401. Admins: anyone.';
export const AUTHOR_TYPE =
  'Default `user` on the public zone, `admin` for admins. Users may describe themselves (`customer`) but not as staff: `admin`, `agent`, `staff`, `system` (any case) are a 401, and look-alikes of them (fullwidth letters, invisible characters; compared after NFKC) a 400.';

/** The sections a create may carry. */
export const createSections = {
  data: Type.Optional(OpenObject()),
  owner: Type.Optional(OpenObject()),
  admin: Type.Optional(OpenObject({ description: 'Ignored unless the caller is an admin' })),
};

const MERGED = 'Merged by top-level key; null removes a key';
/** The sections a PATCH may carry, merged into the stored ones. */
export const updateSections = {
  data: Type.Optional(OpenObject({ description: MERGED })),
  owner: Type.Optional(OpenObject({ description: MERGED })),
  admin: Type.Optional(OpenObject({ description: 'Admins only (ignored for others); merged by key' })),
};

/** The part of every list's query string that is the same for all kinds. */
export const commonListQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: 50 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
  sort: Type.Optional(text(50, '`field:asc|desc`, default `createdAt:desc`')),
  status: Type.Optional(text(1000, 'Exact status, or `in:a,b,c`')),
  createdAt: Type.Optional(text(200, '`gte:<date>`, `lte:<date>`, `gt:`, `lt:`; comma-combinable')),
  updatedAt: Type.Optional(text(200, 'As createdAt')),
  contactId: Type.Optional(text()),
  productId: Type.Optional(text()),
  proofId: Type.Optional(text()),
  visibility: Type.Optional(Visibility),
  includeDeleted: Type.Optional(Type.Boolean({ description: 'Admins only: include soft-deleted objects' })),
};

export const listOf = <T extends TSchema>(schema: T) =>
  Type.Object({
    data: Type.Array(ref(schema)),
    pagination: Type.Object({
      total: Type.Integer(),
      limit: Type.Integer(),
      offset: Type.Integer(),
      hasMore: Type.Boolean(),
    }),
  });

export const AggregateRequest = Type.Object(
  {
    filters: Type.Optional(OpenObject({ description: 'Field filters, e.g. {status: "open", created_at: {gte}}' })),
    groupBy: Type.Optional(Type.Array(text(50), { maxItems: 5 })),
    metrics: Type.Optional(Type.Array(text(50), { maxItems: 10 })),
    timeSeriesField: Type.Optional(text(50)),
    timeSeriesInterval: Type.Optional(Type.Union(INTERVALS.map((i) => Type.Literal(i)))),
  },
  {
    $id: 'AggregateRequest',
    additionalProperties: true,
    // The five named fields and top-level filters (a kind has at most a dozen).
    maxProperties: 50,
    description: 'Filters may also be given at the top level (status, category, record_type, created_at, …)',
  },
);

export const AggregateResponse = Type.Object(
  {
    groups: Type.Optional(Type.Array(OpenObject())),
    timeSeries: Type.Optional(
      Type.Array(
        Type.Object(
          {
            bucket: Type.String({
              description:
                'The bucket: `2026-02-10T14:00:00Z` (hour), `2026-02-10` (day), `2026-W07` (ISO week), `2026-02` (month), `2026-Q1` (quarter), `2026` (year); UTC',
            }),
            start: Type.String({ description: 'The bucket’s first instant (RFC 3339, UTC)' }),
            count: Type.Number(),
          },
          { additionalProperties: true, description: 'Also the requested metrics that have a value' },
        ),
      ),
    ),
    count: Type.Number(),
    avg_close_time_seconds: Type.Optional(Type.Number()),
    p50_close_time_seconds: Type.Optional(Type.Number()),
    p95_close_time_seconds: Type.Optional(Type.Number()),
    total_replies: Type.Optional(Type.Number()),
    avg_replies: Type.Optional(Type.Number()),
  },
  {
    $id: 'AggregateResponse',
    description: 'A requested metric without a value (no closed case to time, no thread) is left out',
  },
);

export const FacetRule = Closed(
  {
    all: Type.Array(Closed({ facetKey: text(100), anyOf: Type.Array(text(200), { maxItems: 100 }) }), { maxItems: 50 }),
  },
  { $id: 'FacetRule' },
);

/** A reply always names its author: a user's is the user, an admin's the credential unless named. */
export const ReplyEntry = Type.Object(
  { at: Type.String(), authorId: Type.String(), authorType: Type.String() },
  { $id: 'ReplyEntry', additionalProperties: true },
);

/**
 * Nullable response fields as JSON Schema type arrays rather than anyOf: the serializer picks
 * a branch of an anyOf by running a validator on every value, a type array by `typeof`.
 */
const nullableOf = <T>(type: 'string' | 'number' | 'object', extra: Record<string, unknown> = {}) =>
  Type.Unsafe<T | null>({ type: [type, 'null'], ...extra });
const NullableText = () => nullableOf<string>('string');
const NullableNumber = () => nullableOf<number>('number');
const NullableJson = () => nullableOf<Record<string, unknown>>('object', { additionalProperties: true });

/** An object's response schema, generated from its kind so that it lists every field. */
export function objectSchema(id: string, kind: ObjectKind, special: Record<string, TSchema> = {}) {
  const props: Record<string, TSchema> = {
    id: Type.String(),
    orgId: Type.String(),
    collectionId: Type.String(),
    appId: Type.String(),
  };
  for (const [name, def] of Object.entries(kind.fields)) {
    props[name] =
      special[name] ??
      (def.kind === 'num' || def.kind === 'int'
        ? NullableNumber()
        : def.kind === 'json'
          ? NullableJson()
          : NullableText());
  }
  props.visibility = Visibility;
  props.status = Type.String();
  props.createdAt = Type.String();
  props.updatedAt = Type.String();
  props.deletedAt = NullableText();
  props.data = OpenObject({ description: 'Seen by everyone who can see the object' });
  props.owner = Type.Optional(OpenObject({ description: 'Seen by the owner and admins only' }));
  props.admin = Type.Optional(OpenObject({ description: 'Seen by admins only' }));
  return Type.Object(props, { $id: id });
}

export const SuccessResponse = Type.Object({ success: Type.Boolean() });
