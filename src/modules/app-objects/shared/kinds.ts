/**
 * The three object kinds described as data: their table, their top-level fields (camelCase
 * name → column, and how the value is stored), and which fields each caller may write.
 * Every column name that reaches SQL comes from these tables, never from a request.
 */
export type FieldKind = 'text' | 'num' | 'int' | 'ts' | 'json';
export interface FieldDef {
  col: string;
  kind: FieldKind;
}
export type KindName = 'case' | 'thread' | 'record';

/** The JSON sections every object carries, in order of how widely they are shown. */
export const SECTIONS = ['data', 'owner', 'admin'] as const;
export type Section = (typeof SECTIONS)[number];

export interface ObjectKind {
  name: KindName;
  /** Plural, used in messages and paths. */
  plural: string;
  table: 'app_cases' | 'app_threads' | 'app_records';
  idPrefix: string;
  fields: Record<string, FieldDef>;
  /** Fields a public caller who owns the object may change with PATCH (sections included). */
  ownerUpdatable: readonly string[];
  /** Whether a `metadata` section exists (records). It is shown like `data`. */
  sortable: Record<string, string>;
}

const f = (col: string, kind: FieldKind = 'text'): FieldDef => ({ col, kind });

/**
 * The kind's field of this name, if it has one. Names come from requests, so only the table's
 * own properties count: `kind.fields.constructor` is Object's, not a column.
 */
export const fieldOf = (kind: ObjectKind, name: string): FieldDef | undefined =>
  Object.hasOwn(kind.fields, name) ? kind.fields[name] : undefined;

/** The column a sort field names, if the kind sorts by it (own properties only, as fieldOf). */
export const sortColumnOf = (kind: ObjectKind, name: string): string | undefined =>
  Object.hasOwn(kind.sortable, name) ? kind.sortable[name] : undefined;

const common = {
  visibility: f('visibility'),
  status: f('status'),
  productId: f('product_id'),
  proofId: f('proof_id'),
  contactId: f('contact_id'),
};

export const CASE: ObjectKind = {
  name: 'case',
  plural: 'cases',
  table: 'app_cases',
  idPrefix: 'case',
  fields: {
    ...common,
    ref: f('ref'),
    priority: f('priority', 'num'),
    category: f('category'),
    assignedTo: f('assigned_to'),
    closedAt: f('closed_at', 'ts'),
  },
  ownerUpdatable: ['data', 'owner'],
  sortable: {
    createdAt: 'created_at',
    updatedAt: 'updated_at',
    closedAt: 'closed_at',
    status: 'status',
    priority: 'priority',
    category: 'category',
    ref: 'ref',
  },
};

export const THREAD: ObjectKind = {
  name: 'thread',
  plural: 'threads',
  table: 'app_threads',
  idPrefix: 'thr',
  fields: {
    ...common,
    slug: f('slug'),
    title: f('title'),
    authorId: f('author_id'),
    authorType: f('author_type'),
    parentType: f('parent_type'),
    parentId: f('parent_id'),
    replyCount: f('reply_count', 'int'),
    lastReplyAt: f('last_reply_at', 'ts'),
    body: f('body', 'json'),
    replies: f('replies', 'json'),
    tags: f('tags', 'json'),
  },
  ownerUpdatable: ['body', 'tags', 'data', 'owner'],
  sortable: {
    createdAt: 'created_at',
    updatedAt: 'updated_at',
    lastReplyAt: 'last_reply_at',
    replyCount: 'reply_count',
    status: 'status',
    title: 'title',
    slug: 'slug',
  },
};

export const RECORD: ObjectKind = {
  name: 'record',
  plural: 'records',
  table: 'app_records',
  idPrefix: 'rec',
  fields: {
    ...common,
    recordType: f('record_type'),
    ref: f('ref'),
    scopeType: f('scope_type'),
    scopeId: f('scope_id'),
    customId: f('custom_id'),
    customIdNormalized: f('custom_id_normalized'),
    sourceSystem: f('source_system'),
    variantId: f('variant_id'),
    batchId: f('batch_id'),
    authorId: f('author_id'),
    authorType: f('author_type'),
    parentType: f('parent_type'),
    parentId: f('parent_id'),
    startsAt: f('starts_at', 'ts'),
    expiresAt: f('expires_at', 'ts'),
    specificity: f('specificity', 'int'),
    facetRule: f('facet_rule', 'json'),
    singletonKey: f('singleton_key'),
    metadata: f('metadata', 'json'),
  },
  ownerUpdatable: ['data', 'owner'],
  sortable: {
    createdAt: 'created_at',
    updatedAt: 'updated_at',
    status: 'status',
    recordType: 'record_type',
    ref: 'ref',
    startsAt: 'starts_at',
    expiresAt: 'expires_at',
    specificity: 'specificity',
  },
};
