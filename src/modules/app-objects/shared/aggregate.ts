/**
 * Aggregate requests → a typed spec. Group names, metric names, the time-series field and
 * the interval are looked up in per-kind whitelists; anything else is a 400 naming it.
 * The original's names are snake_case (`record_type`, `avg_close_time_seconds`); camelCase
 * aliases of fields are accepted too.
 */
import { badRequest } from '../../../platform/errors.ts';
import type { KindName } from './kinds.ts';
import { type Condition, dateConditions, parseDate, statusCondition } from './list-query.ts';

export const INTERVALS = ['hour', 'day', 'week', 'month', 'quarter', 'year'] as const;
export type Interval = (typeof INTERVALS)[number];

export type MetricName =
  | 'count'
  | 'avg_close_time_seconds'
  | 'p50_close_time_seconds'
  | 'p95_close_time_seconds'
  | 'total_replies'
  | 'avg_replies';

export interface AggregateSpec {
  conditions: Condition[];
  groupBy: { name: string; col: string }[];
  metrics: MetricName[];
  timeSeries?: { col: string; interval: Interval };
}

export interface AggregateRequest {
  filters?: Record<string, unknown>;
  groupBy?: string[];
  metrics?: string[];
  timeSeriesField?: string;
  timeSeriesInterval?: string;
  [filter: string]: unknown;
}

/**
 * The whitelists as Maps: the names looked up in them are the caller's, and a plain object
 * would answer `constructor`, `toString` or `__proto__` with something inherited from Object.
 */
type Table<T> = ReadonlyMap<string, T>;
const table = <T>(entries: Record<string, T>): Table<T> => new Map(Object.entries(entries));
const listed = (t: Table<unknown>) => [...t.keys()].join(', ');

const GROUPS: Record<KindName, Table<string>> = {
  case: table({
    status: 'status',
    priority: 'priority',
    category: 'category',
    assigned_to: 'assigned_to',
    product_id: 'product_id',
    proof_id: 'proof_id',
    contact_id: 'contact_id',
    visibility: 'visibility',
  }),
  thread: table({
    status: 'status',
    author_type: 'author_type',
    author_id: 'author_id',
    parent_type: 'parent_type',
    product_id: 'product_id',
    contact_id: 'contact_id',
    visibility: 'visibility',
  }),
  record: table({
    status: 'status',
    record_type: 'record_type',
    product_id: 'product_id',
    variant_id: 'variant_id',
    batch_id: 'batch_id',
    proof_id: 'proof_id',
    source_system: 'source_system',
    scope_type: 'scope_type',
    author_type: 'author_type',
    contact_id: 'contact_id',
    visibility: 'visibility',
  }),
};

const METRICS: Record<KindName, Table<MetricName[]>> = {
  case: table({
    count: ['count'],
    avg_close_time: ['avg_close_time_seconds'],
    avg_close_time_seconds: ['avg_close_time_seconds'],
    p50_close_time: ['p50_close_time_seconds'],
    p50_close_time_seconds: ['p50_close_time_seconds'],
    p95_close_time: ['p95_close_time_seconds'],
    p95_close_time_seconds: ['p95_close_time_seconds'],
  }),
  thread: table({
    count: ['count'],
    reply_count: ['total_replies', 'avg_replies'],
    total_replies: ['total_replies'],
    avg_replies: ['avg_replies'],
  }),
  record: table({ count: ['count'] }),
};

const TIME_FIELDS: Record<KindName, Table<string>> = {
  case: table({ created_at: 'created_at', updated_at: 'updated_at', closed_at: 'closed_at' }),
  thread: table({ created_at: 'created_at', updated_at: 'updated_at', last_reply_at: 'last_reply_at' }),
  record: table({
    created_at: 'created_at',
    updated_at: 'updated_at',
    starts_at: 'starts_at',
    expires_at: 'expires_at',
  }),
};

/** Filters an aggregate accepts, by kind: name → column and value form. */
const FILTERS: Record<KindName, Table<{ col: string; form: 'text' | 'status' | 'range' | 'num' }>> = {
  case: table({
    status: { col: 'status', form: 'status' },
    category: { col: 'category', form: 'text' },
    priority: { col: 'priority', form: 'num' },
    assigned_to: { col: 'assigned_to', form: 'text' },
    product_id: { col: 'product_id', form: 'text' },
    proof_id: { col: 'proof_id', form: 'text' },
    contact_id: { col: 'contact_id', form: 'text' },
    created_at: { col: 'created_at', form: 'range' },
    updated_at: { col: 'updated_at', form: 'range' },
    closed_at: { col: 'closed_at', form: 'range' },
  }),
  thread: table({
    status: { col: 'status', form: 'status' },
    author_type: { col: 'author_type', form: 'text' },
    author_id: { col: 'author_id', form: 'text' },
    parent_type: { col: 'parent_type', form: 'text' },
    parent_id: { col: 'parent_id', form: 'text' },
    product_id: { col: 'product_id', form: 'text' },
    contact_id: { col: 'contact_id', form: 'text' },
    created_at: { col: 'created_at', form: 'range' },
    updated_at: { col: 'updated_at', form: 'range' },
    last_reply_at: { col: 'last_reply_at', form: 'range' },
  }),
  record: table({
    status: { col: 'status', form: 'status' },
    record_type: { col: 'record_type', form: 'text' },
    product_id: { col: 'product_id', form: 'text' },
    variant_id: { col: 'variant_id', form: 'text' },
    batch_id: { col: 'batch_id', form: 'text' },
    proof_id: { col: 'proof_id', form: 'text' },
    source_system: { col: 'source_system', form: 'text' },
    contact_id: { col: 'contact_id', form: 'text' },
    created_at: { col: 'created_at', form: 'range' },
    updated_at: { col: 'updated_at', form: 'range' },
    starts_at: { col: 'starts_at', form: 'range' },
    expires_at: { col: 'expires_at', form: 'range' },
  }),
};

/** `recordType` → `record_type`, so both spellings name the same field. */
export const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function filterConditions(kind: KindName, filters: Record<string, unknown>): Condition[] {
  const out: Condition[] = [];
  for (const [rawName, value] of Object.entries(filters)) {
    if (value === undefined || value === null) continue;
    const name = snake(rawName);
    const def = FILTERS[kind].get(name);
    if (!def) {
      throw badRequest(`Unknown aggregate filter "${rawName}"; allowed: ${listed(FILTERS[kind])}`, {
        filter: rawName,
      });
    }
    const param = `filters.${rawName}`;
    if (def.form === 'range') {
      if (value === '__notnull__' || value === '__null__') {
        out.push({ col: def.col, op: value === '__notnull__' ? 'notnull' : 'null' });
      } else if (typeof value === 'string') {
        out.push(...dateConditions(param, def.col, value, true));
      } else if (typeof value === 'object' && !Array.isArray(value)) {
        for (const [op, v] of Object.entries(value as Record<string, unknown>)) {
          if (!['gte', 'lte', 'gt', 'lt'].includes(op) || typeof v !== 'string') {
            throw badRequest(`${param} takes {gte?, lte?, gt?, lt?} with ISO dates`, { filter: rawName });
          }
          out.push({ col: def.col, op: op as 'gte', value: parseDate(`${param}.${op}`, v) });
        }
      } else {
        throw badRequest(`${param} takes {gte?, lte?} with ISO dates or "__notnull__"`, { filter: rawName });
      }
    } else if (def.form === 'num') {
      if (typeof value !== 'number' || !Number.isFinite(value)) throw badRequest(`${param} must be a number`);
      out.push({ col: def.col, op: 'num', value });
    } else if (Array.isArray(value)) {
      if (value.length === 0 || value.length > 50 || !value.every((v) => typeof v === 'string')) {
        throw badRequest(`${param} takes a string or 1 to 50 strings`, { filter: rawName });
      }
      out.push({ col: def.col, op: 'in', value: value as string[] });
    } else if (typeof value === 'string') {
      out.push(def.form === 'status' ? statusCondition(def.col, value) : { col: def.col, op: 'eq', value });
    } else {
      throw badRequest(`${param} must be a string`, { filter: rawName });
    }
  }
  return out;
}

export function parseAggregate(kind: KindName, body: AggregateRequest): AggregateSpec {
  const { filters = {}, groupBy = [], metrics = ['count'], timeSeriesField, timeSeriesInterval, ...topLevel } = body;
  const conditions = [...filterConditions(kind, filters), ...filterConditions(kind, topLevel)];
  const groups = groupBy.map((g) => {
    const col = GROUPS[kind].get(snake(g));
    if (!col) throw badRequest(`Unknown groupBy "${g}"; allowed: ${listed(GROUPS[kind])}`, { groupBy: g });
    return { name: g, col };
  });
  const names = new Set<MetricName>(['count']);
  for (const m of metrics) {
    const expanded = METRICS[kind].get(snake(m));
    if (!expanded) throw badRequest(`Unknown metric "${m}"; allowed: ${listed(METRICS[kind])}`, { metric: m });
    for (const e of expanded) names.add(e);
  }
  let timeSeries: AggregateSpec['timeSeries'];
  if (timeSeriesField !== undefined || timeSeriesInterval !== undefined) {
    const col = TIME_FIELDS[kind].get(snake(timeSeriesField ?? 'created_at'));
    if (!col) {
      throw badRequest(`Unknown timeSeriesField "${timeSeriesField}"; allowed: ${listed(TIME_FIELDS[kind])}`);
    }
    const interval = (timeSeriesInterval ?? 'day') as Interval;
    if (!INTERVALS.includes(interval)) throw badRequest(`timeSeriesInterval must be one of ${INTERVALS.join(', ')}`);
    timeSeries = { col, interval };
  }
  return { conditions, groupBy: groups, metrics: [...names], timeSeries };
}
