import { type TSchema, Type } from 'typebox';
import { Closed, Instant, Nullable, OpenObject, ref } from '../../../platform/schemas.ts';
import { RECORD } from '../shared/kinds.ts';
import {
  AUTHOR_ID,
  AUTHOR_TYPE,
  CONTACT_ID,
  commonListQuery,
  createSections,
  ExpiresAt,
  FacetRule,
  objectSchema,
  StartsAt,
  text,
  updateSections,
  Visibility,
} from '../shared/schema.ts';

export const BULK_MAX = 500;

export const AppRecord = objectSchema('AppRecord', RECORD, {
  authorType: Type.String({ description: 'Default `user` for a user’s record, `admin` for an admin’s' }),
  specificity: Type.Integer(),
  facetRule: Type.Unsafe<Record<string, unknown> | null>({
    type: ['object', 'null'],
    additionalProperties: true,
    description: 'A FacetRule {all: [{facetKey, anyOf}]}, or null',
  }),
  metadata: OpenObject(),
});

/**
 * What a singleton is unique per: a field of the record, or the whole collection. The original's
 * SDK names them without the `Id` (`product`, `variant`, `batch`, `proof`); both spellings are
 * accepted and mean the same field (docs/compatibility.md).
 */
export const SINGLETON_PER = [
  'contactId',
  'productId',
  'proofId',
  'variantId',
  'batchId',
  'collection',
  'product',
  'proof',
  'variant',
  'batch',
] as const;
export type SingletonPer = (typeof SINGLETON_PER)[number];
/** The field each spelling names (`collection`: none, the collection itself). */
export const SINGLETON_FIELD: ReadonlyMap<SingletonPer, string> = new Map<SingletonPer, string>([
  ['contactId', 'contactId'],
  ['productId', 'productId'],
  ['proofId', 'proofId'],
  ['variantId', 'variantId'],
  ['batchId', 'batchId'],
  ['product', 'productId'],
  ['proof', 'proofId'],
  ['variant', 'variantId'],
  ['batch', 'batchId'],
]);

/** What null means in a create or an upsert (the original's SDK types these fields `T | null`). */
const NULL_IS_DEFAULT =
  'null: the default, the same as left out on a create; on an upsert that updates, null sets the field back to its default (left out: unchanged)';
const orNull = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));
const SECTION = 'Merged by top-level key into a stored record’s (a key sent as null removed); null: `{}`';

/**
 * Fields an upsert (and each bulk-upsert item) may carry (`UpsertRecordInput`, docs/app-objects.md).
 * Each but `ref` and `recordType` may be null (`NULL_IS_DEFAULT`).
 */
const upsertFields = {
  ref: text(),
  recordType: Type.Optional(text(100)),
  productId: orNull(text()),
  variantId: orNull(text()),
  batchId: orNull(text()),
  proofId: orNull(text()),
  customId: orNull(text()),
  sourceSystem: orNull(text(100)),
  startsAt: orNull(StartsAt),
  expiresAt: orNull(ExpiresAt),
  status: orNull(text(50, 'Default `active`')),
  data: orNull(OpenObject({ description: SECTION })),
  metadata: orNull(OpenObject({ description: SECTION })),
  facetRule: orNull(ref(FacetRule)),
};

export const CreateRecordInput = Closed(
  {
    ...upsertFields,
    ref: Type.Optional(text(200, 'Unique within the app (deleted records included)')),
    visibility: Type.Optional(Visibility),
    contactId: Type.Optional(text(200, CONTACT_ID)),
    authorId: Type.Optional(text(200, AUTHOR_ID)),
    authorType: Type.Optional(text(50, AUTHOR_TYPE)),
    parentType: Type.Optional(text(50)),
    parentId: Type.Optional(text()),
    scopeType: orNull(
      text(50, 'Default (also for null): derived (proof, batch, variant, product, facet or collection)'),
    ),
    scopeId: orNull(text()),
    singletonPer: Type.Optional(
      Type.Union(
        SINGLETON_PER.map((s) => Type.Literal(s)),
        {
          description:
            'Find or update: at most one live record of this recordType per value of this field (and per contact, when the record has one). A record already holding the key is updated in place (fields set, sections merged by top-level key; an admin’s deleted one revived) and its id answered; a user’s create finds only their own record and changes only data and owner',
        },
      ),
    ),
    ...createSections,
    data: orNull(OpenObject({ description: 'null: `{}`' })),
    metadata: orNull(OpenObject({ description: 'null: `{}`' })),
  },
  { $id: 'CreateRecordInput', description: 'A field sent as null is left at its default, as if left out' },
);
export type CreateRecordInput = Type.Static<typeof CreateRecordInput>;

export const UpdateRecordInput = Closed(
  {
    ...updateSections,
    metadata: Type.Optional(OpenObject({ description: 'Merged by top-level key; null removes a key' })),
    status: Type.Optional(text(50)),
    visibility: Type.Optional(Visibility),
    ref: Type.Optional(Nullable(text())),
    recordType: Type.Optional(Nullable(text(100))),
    productId: Type.Optional(Nullable(text())),
    variantId: Type.Optional(Nullable(text())),
    batchId: Type.Optional(Nullable(text())),
    proofId: Type.Optional(Nullable(text())),
    startsAt: Type.Optional(Nullable(StartsAt)),
    expiresAt: Type.Optional(Nullable(ExpiresAt)),
    scopeType: Type.Optional(Nullable(text(50))),
    scopeId: Type.Optional(Nullable(text())),
    customId: Type.Optional(Nullable(text())),
    sourceSystem: Type.Optional(Nullable(text(100))),
    facetRule: Type.Optional(Nullable(ref(FacetRule))),
  },
  { $id: 'UpdateRecordInput' },
);
export type UpdateRecordInput = Type.Static<typeof UpdateRecordInput>;

export const UpsertRecordInput = Closed(upsertFields, { $id: 'UpsertRecordInput', description: NULL_IS_DEFAULT });
export type UpsertRecordInput = Type.Static<typeof UpsertRecordInput>;

const BulkUpsertItems = Type.Array(ref(UpsertRecordInput), { minItems: 1, maxItems: BULK_MAX });

/**
 * The items as a bare array, or wrapped as `{records: [...]}` (the form the original's SDK
 * sends); the same items either way. The array comes first: a bad item of a bare array is
 * then the first error listed.
 */
export const BulkUpsertInput = Type.Union([BulkUpsertItems, Closed({ records: BulkUpsertItems })], {
  description: `1..${BULK_MAX} upsert items, as an array or as \`{records: [...]}\``,
});
export type BulkUpsertInput = Type.Static<typeof BulkUpsertInput>;

export const BulkUpsertResult = Type.Object({
  saved: Type.Integer({ description: 'Items written: all of them (all or nothing)' }),
  failed: Type.Integer({ description: 'Always 0: a bad item fails the whole call with a 400 naming it' }),
  results: Type.Array(
    Type.Object({
      index: Type.Integer({ description: 'The item’s position in the request' }),
      status: Type.Union([Type.Literal('created'), Type.Literal('updated')]),
      id: Type.String(),
      ref: Type.String(),
      created: Type.Boolean({ description: '`status` is `created`' }),
    }),
    { description: 'One per item, in the request’s order' },
  ),
});

export const BulkDeleteInput = Closed(
  {
    ids: Type.Optional(Type.Array(text(100), { maxItems: BULK_MAX })),
    refs: Type.Optional(Type.Array(text(), { maxItems: BULK_MAX })),
    scope: Type.Optional(
      Closed(
        {
          productId: Type.Optional(text()),
          variantId: Type.Optional(text()),
          batchId: Type.Optional(text()),
          proofId: Type.Optional(text()),
        },
        {
          description:
            'Scope mode: every live record whose anchors equal each field given (at least one); not with ids or refs',
        },
      ),
    ),
    recordType: Type.Optional(text(100, 'Only records of this type')),
  },
  {
    $id: 'BulkDeleteInput',
    description: `Records to soft-delete: by id and/or by ref (at most ${BULK_MAX} of each), or every record in a scope; optionally only those of one recordType`,
  },
);
export type BulkDeleteInput = Type.Static<typeof BulkDeleteInput>;

export const RecordListQuery = Closed({
  ...commonListQuery,
  recordType: Type.Optional(text(100)),
  ref: Type.Optional(text()),
  refPrefix: Type.Optional(text()),
  customId: Type.Optional(text(200, 'Matched case- and space-insensitively')),
  sourceSystem: Type.Optional(text(100)),
  variantId: Type.Optional(text()),
  batchId: Type.Optional(text()),
  q: Type.Optional(
    text(200, 'Case-insensitive substring of `data.label`, `ref`, `customId` or `recordType` (any of them)'),
  ),
  authorId: Type.Optional(text()),
  parentType: Type.Optional(text(50)),
  parentId: Type.Optional(text()),
  startsAt: Type.Optional(text(200, '`gte:<date>`/`lte:<date>`, or `null` / `notnull`')),
  expiresAt: Type.Optional(text(200, '`gte:<date>`/`lte:<date>`, or `null` / `notnull`')),
  at: Type.Optional(Instant('Point in time of the schedule window')),
  includeScheduled: Type.Optional(Type.Boolean({ description: 'Include records whose startsAt is after `at`' })),
  includeExpired: Type.Optional(Type.Boolean({ description: 'Include records whose expiresAt is at or before `at`' })),
});
export type RecordListQuery = Type.Static<typeof RecordListQuery>;
