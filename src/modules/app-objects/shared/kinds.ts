/**
 * The three object kinds described as data: their table, their top-level fields (camelCase
 * name → column, and how the value is stored), which fields each caller may write, the
 * columns a list sorts by, the list filters and the aggregate whitelists. Every column name
 * that reaches SQL comes from these tables, never from a request. The routes, schemas and
 * wording of each kind are in `<kind>/<kind>.routes.ts`, built on this description.
 *
 * Lookups by a caller's name go through own properties (`Object.hasOwn`) or Maps: a plain
 * object would answer `constructor`, `toString` or `__proto__` with something inherited.
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
  /** Sort field → column. */
  sortable: Record<string, string>;
  /** List query parameters → column and how the value is read. */
  filters: FilterDefs;
  /** What an aggregate may name: groups, metrics, the time-series field and filters. */
  aggregate: AggregateWhitelists;
  /** Statuses that close an object: entering one sets `closed_at` (once), leaving one clears it. */
  closedStatuses?: readonly string[];
  /**
   * Its JSON columns, each measured against the section bound and together against the object
   * bound (`bounds.ts`) by every write that changes one.
   */
  sized: readonly string[];
}

export type FilterOp = 'eq' | 'status' | 'num' | 'prefix' | 'tag' | 'date' | 'search';
export interface FilterDef {
  col: string;
  op: FilterOp;
  /** The columns a `search` filter looks in. */
  cols?: string[];
}
/** Query parameter → column and how its value is read. */
export type FilterDefs = ReadonlyMap<string, FilterDef>;

/** The aggregate metrics a kind may offer (the names clients send). */
export type MetricName =
  | 'count'
  | 'avg_close_time_seconds'
  | 'p50_close_time_seconds'
  | 'p95_close_time_seconds'
  | 'total_replies'
  | 'avg_replies';
export type AggregateFilterForm = 'text' | 'status' | 'range' | 'num';
export interface AggregateWhitelists {
  /** groupBy name → column. */
  groups: ReadonlyMap<string, string>;
  /** Metric name → the metrics it answers. */
  metrics: ReadonlyMap<string, MetricName[]>;
  /** timeSeriesField name → column. */
  timeFields: ReadonlyMap<string, string>;
  /** Filter name → column and value form. */
  filters: ReadonlyMap<string, { col: string; form: AggregateFilterForm }>;
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

/**
 * The kind's columns that hold one plain value (text, number, time), not JSON: what a webhook
 * event carries of every object, and what a bulk delete reads back of each object it deleted.
 * A thread's `replies` is JSON and no column (see THREAD).
 */
export const scalarColumns = (kind: ObjectKind): string[] =>
  Object.values(kind.fields)
    .filter((d) => d.kind !== 'json')
    .map((d) => d.col);

/** Filters every kind's list accepts. */
const COMMON_FILTERS: Record<string, FilterDef> = {
  status: { col: 'status', op: 'status' },
  createdAt: { col: 'created_at', op: 'date' },
  updatedAt: { col: 'updated_at', op: 'date' },
  contactId: { col: 'contact_id', op: 'eq' },
  productId: { col: 'product_id', op: 'eq' },
  proofId: { col: 'proof_id', op: 'eq' },
  visibility: { col: 'visibility', op: 'eq' },
};
const filters = (own: Record<string, FilterDef>): FilterDefs => new Map(Object.entries({ ...COMMON_FILTERS, ...own }));
const eq = (col: string): FilterDef => ({ col, op: 'eq' });

/** Aggregate names are the snake_case column names, so a whitelist is a list of columns. */
const columns = (...cols: string[]): ReadonlyMap<string, string> => new Map(cols.map((c) => [c, c]));
/**
 * Aggregate filters, in the order an error lists them. A column's value form: `status` for
 * status, `range` for a timestamp (`*_at`), `text` otherwise, unless given as [column, form].
 */
const aggregateFilters = (...entries: (string | [string, AggregateFilterForm])[]): AggregateWhitelists['filters'] =>
  new Map(
    entries.map((e) => {
      const [col, form]: [string, AggregateFilterForm] =
        typeof e !== 'string' ? e : [e, e === 'status' ? 'status' : e.endsWith('_at') ? 'range' : 'text'];
      return [col, { col, form }];
    }),
  );
const CREATED_UPDATED = ['created_at', 'updated_at'];

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
  filters: filters({
    category: eq('category'),
    priority: { col: 'priority', op: 'num' },
    ref: eq('ref'),
    assignedTo: eq('assigned_to'),
    closedAt: { col: 'closed_at', op: 'date' },
  }),
  aggregate: {
    groups: columns(
      'status',
      'priority',
      'category',
      'assigned_to',
      'product_id',
      'proof_id',
      'contact_id',
      'visibility',
    ),
    metrics: new Map<string, MetricName[]>([
      ['count', ['count']],
      // Each close-time metric by its name and by its answer's name (`*_seconds`).
      ...(['avg', 'p50', 'p95'] as const).flatMap((m) => {
        const answer: MetricName = `${m}_close_time_seconds`;
        return [`${m}_close_time`, answer].map((name): [string, MetricName[]] => [name, [answer]]);
      }),
    ]),
    timeFields: columns(...CREATED_UPDATED, 'closed_at'),
    filters: aggregateFilters(
      'status',
      'category',
      ['priority', 'num'],
      'assigned_to',
      'product_id',
      'proof_id',
      'contact_id',
      ...CREATED_UPDATED,
      'closed_at',
    ),
  },
  closedStatuses: ['closed', 'resolved'],
  sized: ['data', 'owner', 'admin'],
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
    // Not a column since migration 0104: replies are rows of app_thread_replies, and the
    // thread service puts the latest of them on the row it presents (`withDetails`).
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
  filters: filters({
    slug: eq('slug'),
    authorId: eq('author_id'),
    parentType: eq('parent_type'),
    parentId: eq('parent_id'),
    tag: { col: 'tags', op: 'tag' },
  }),
  aggregate: {
    groups: columns('status', 'author_type', 'author_id', 'parent_type', 'product_id', 'contact_id', 'visibility'),
    metrics: new Map<string, MetricName[]>([
      ['count', ['count']],
      ['reply_count', ['total_replies', 'avg_replies']],
      ['total_replies', ['total_replies']],
      ['avg_replies', ['avg_replies']],
    ]),
    timeFields: columns(...CREATED_UPDATED, 'last_reply_at'),
    filters: aggregateFilters(
      'status',
      'author_type',
      'author_id',
      'parent_type',
      'parent_id',
      'product_id',
      'contact_id',
      ...CREATED_UPDATED,
      'last_reply_at',
    ),
  },
  sized: ['data', 'owner', 'admin', 'body', 'tags'],
};

/** What a record is and where it comes from: the columns its aggregates both group and filter by. */
const RECORD_KEYS = [
  'status',
  'record_type',
  'product_id',
  'variant_id',
  'batch_id',
  'proof_id',
  'source_system',
] as const;

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
  filters: filters({
    recordType: eq('record_type'),
    ref: eq('ref'),
    refPrefix: { col: 'ref', op: 'prefix' },
    sourceSystem: eq('source_system'),
    variantId: eq('variant_id'),
    batchId: eq('batch_id'),
    authorId: eq('author_id'),
    parentType: eq('parent_type'),
    parentId: eq('parent_id'),
    startsAt: { col: 'starts_at', op: 'date' },
    expiresAt: { col: 'expires_at', op: 'date' },
    // `data.label` is where the original's clients look (its guide: a case-insensitive
    // substring of `data->>'label'`); ref, customId and recordType are ours, kept.
    q: { col: 'ref', op: 'search', cols: ["data->>'label'", 'ref', 'custom_id', 'record_type'] },
  }),
  aggregate: {
    groups: columns(...RECORD_KEYS, 'scope_type', 'author_type', 'contact_id', 'visibility'),
    metrics: new Map<string, MetricName[]>([['count', ['count']]]),
    timeFields: columns(...CREATED_UPDATED, 'starts_at', 'expires_at'),
    filters: aggregateFilters(...RECORD_KEYS, 'contact_id', ...CREATED_UPDATED, 'starts_at', 'expires_at'),
  },
  sized: ['data', 'owner', 'admin', 'metadata', 'facet_rule'],
};
