/**
 * The fields of the original's app-object types (`AppCase`, `AppThread`, `AppRecord` in
 * src/types/appObjects.ts of its SDK) and which of them it types non-null: the rest it types
 * `T | null`. test/compat/app-objects.test.ts checks answers against these lists, and
 * test/compat/original.ts derives from them which nulls the published document wrongly refuses.
 */
const BASE_FIELDS = [
  'id',
  'orgId',
  'collectionId',
  'appId',
  'visibility',
  'createdAt',
  'updatedAt',
  'deletedAt',
  'data',
];
export const SHAPES = {
  case: {
    fields: [
      ...BASE_FIELDS,
      'ref',
      'status',
      'priority',
      'category',
      'assignedTo',
      'productId',
      'proofId',
      'contactId',
      'closedAt',
    ],
    nonNull: ['status'],
  },
  thread: {
    fields: [
      ...BASE_FIELDS,
      'slug',
      'title',
      'status',
      'authorId',
      'authorType',
      'productId',
      'proofId',
      'contactId',
      'parentType',
      'parentId',
      'replyCount',
      'lastReplyAt',
      'body',
      'replies',
      'tags',
    ],
    nonNull: ['status', 'authorType', 'replyCount', 'body', 'replies', 'tags'],
  },
  record: {
    fields: [
      ...BASE_FIELDS,
      'recordType',
      'ref',
      'scopeType',
      'scopeId',
      'customId',
      'customIdNormalized',
      'sourceSystem',
      'status',
      'productId',
      'variantId',
      'batchId',
      'proofId',
      'contactId',
      'authorId',
      'authorType',
      'parentType',
      'parentId',
      'startsAt',
      'expiresAt',
      'specificity',
      'facetRule',
      'singletonKey',
      'metadata',
    ],
    nonNull: ['authorType', 'specificity'],
  },
} as const;
export const ALWAYS_NON_NULL = ['id', 'orgId', 'collectionId', 'appId', 'visibility', 'createdAt', 'updatedAt', 'data'];

/** The fields the SDK types `T | null` for one kind. */
export const nullableFields = (kind: keyof typeof SHAPES): string[] => {
  const { fields, nonNull } = SHAPES[kind];
  const never = new Set<string>([...ALWAYS_NON_NULL, ...nonNull]);
  return fields.filter((f) => !never.has(f));
};
