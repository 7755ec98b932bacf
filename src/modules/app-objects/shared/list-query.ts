/**
 * List query strings → typed conditions. Every column comes from a whitelist of the kind;
 * values stay values (bound as parameters by the repository). Operators:
 * - `status=open` (exact) or `status=in:open,pending`
 * - dates: `createdAt=gte:2024-01-01T00:00:00Z`, `lte:`, `gt:`, `lt:`, combinable with a comma
 *   (`gte:A,lte:B`), each an ISO 8601 date or date-time; `null` / `notnull` for nullable dates
 * - numbers: `priority=3` (equal), `gte:3`, `lte:`, `gt:`, `lt:`, combinable with a comma
 * - `sort=field:asc|desc` over the kind's sortable fields (default `createdAt:desc`)
 */
import { badRequest } from '../../../platform/errors.ts';
import { isDateOnly, parseInstant } from '../../../platform/instants.ts';
import { type ObjectKind, sortColumnOf } from './kinds.ts';

export type Condition =
  | { col: string; op: 'eq' | 'prefix' | 'tag' | 'ne'; value: string }
  | { col: string; op: 'num'; value: number }
  /** A bound on a number column (`priority=gte:3`). */
  | { col: string; op: 'numGte' | 'numLte' | 'numGt' | 'numLt'; value: number }
  | { col: string; op: 'in'; value: string[] }
  | { col: string; op: 'gte' | 'lte' | 'gt' | 'lt'; value: Date }
  | { col: string; op: 'null' | 'notnull' }
  /** `col IS NULL OR col <= value` / `col IS NULL OR col > value`: open-ended windows (startsAt, expiresAt). */
  | { col: string; op: 'lteOrNull' | 'gtOrNull'; value: Date }
  | { cols: string[]; op: 'search'; value: string };

export interface Order {
  col: string;
  dir: 'ASC' | 'DESC';
  nullable: boolean;
}

export interface ListSpec {
  conditions: Condition[];
  order: Order;
  limit: number;
  offset: number;
  includeDeleted: boolean;
}

const NOT_NULL_COLUMNS = new Set(['created_at', 'updated_at', 'status', 'reply_count', 'specificity', 'visibility']);
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;

type DateOp = 'gte' | 'lte' | 'gt' | 'lt';

/**
 * One bound on a date column. A date alone names a whole day (platform/instants.ts), so
 * `lte:2026-02-28` includes all of the 28th (it becomes `lt` the 1st of March) and
 * `gt:2026-02-28` starts after it (`gte` the 1st of March); `gte:` and `lt:` take the day's start.
 */
export function dateCondition(param: string, col: string, op: DateOp, text: string): Condition {
  const wholeDayEnd = isDateOnly(text) && (op === 'lte' || op === 'gt');
  const value = parseInstant(text, wholeDayEnd ? 'end' : 'start');
  if (!value) throw badRequest(`${param}: "${text}" is not an ISO 8601 date or date-time`, { param });
  if (!wholeDayEnd) return { col, op, value };
  return { col, op: op === 'lte' ? 'lt' : 'gte', value };
}

export function dateConditions(param: string, col: string, raw: string, nullable: boolean): Condition[] {
  const out: Condition[] = [];
  for (const part of raw.split(',')) {
    const p = part.trim();
    if ((p === 'null' || p === 'notnull') && nullable) {
      out.push({ col, op: p });
      continue;
    }
    const m = /^(gte|lte|gt|lt):(.+)$/.exec(p);
    if (!m) {
      throw badRequest(`${param} must be gte:<date>, lte:<date>, gt:<date> or lt:<date>, comma-separated`, { param });
    }
    out.push(dateCondition(param, col, m[1] as DateOp, m[2]));
  }
  return out;
}

/** A decimal number as a query string writes it: `3`, `-1`, `2.5`, `1e3`; not `0x10`, `Infinity` or an empty string. */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const NUMBER_OPS = { gte: 'numGte', lte: 'numLte', gt: 'numGt', lt: 'numLt' } as const;

/**
 * Conditions on a number column: `N` (equal), or bounds `gte:N`, `lte:N`, `gt:N`, `lt:N`,
 * combinable with a comma as the date filters are (`gte:2,lt:5`). A part that is not one of
 * these, or whose number is not a finite decimal, is a 400 naming the parameter.
 */
function numberConditions(param: string, col: string, raw: string): Condition[] {
  const out: Condition[] = [];
  for (const part of raw.split(',')) {
    const m = /^(?:(gte|lte|gt|lt):)?(.*)$/.exec(part.trim()) as RegExpExecArray;
    const text = m[2].trim();
    const value = Number(text);
    if (!DECIMAL.test(text) || !Number.isFinite(value)) {
      throw badRequest(`${param} must be a number, or gte:<n>, lte:<n>, gt:<n>, lt:<n>, comma-separated`, { param });
    }
    const op = m[1] as keyof typeof NUMBER_OPS | undefined;
    out.push(op ? { col, op: NUMBER_OPS[op], value } : { col, op: 'num', value });
  }
  return out;
}

export function statusCondition(col: string, raw: string): Condition {
  if (raw.startsWith('in:')) {
    const values = raw
      .slice(3)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (values.length === 0 || values.length > 50)
      throw badRequest('status=in: needs 1 to 50 values', { param: 'status' });
    return { col, op: 'in', value: values };
  }
  return { col, op: 'eq', value: raw };
}

export function parseSort(kind: ObjectKind, raw: string | undefined): Order {
  const [field, dirText = 'desc'] = (raw ?? 'createdAt:desc').split(':');
  const col = sortColumnOf(kind, field);
  const dir = dirText.toLowerCase();
  if (!col || (dir !== 'asc' && dir !== 'desc')) {
    throw badRequest(`sort must be <field>:asc|desc with field one of ${Object.keys(kind.sortable).join(', ')}`, {
      param: 'sort',
    });
  }
  return { col, dir: dir === 'asc' ? 'ASC' : 'DESC', nullable: !NOT_NULL_COLUMNS.has(col) };
}

/** Reads the kind's filters from an (already schema-validated) query object. */
export function parseList(kind: ObjectKind, query: Record<string, unknown>, canIncludeDeleted: boolean): ListSpec {
  const conditions: Condition[] = [];
  for (const [param, def] of kind.filters) {
    const v = query[param];
    if (v === undefined || v === '') continue;
    const text = String(v);
    switch (def.op) {
      case 'eq':
      case 'prefix':
      case 'tag':
        conditions.push({ col: def.col, op: def.op, value: text });
        break;
      case 'status':
        conditions.push(statusCondition(def.col, text));
        break;
      case 'num':
        conditions.push(...numberConditions(param, def.col, text));
        break;
      case 'date':
        conditions.push(...dateConditions(param, def.col, text, !NOT_NULL_COLUMNS.has(def.col)));
        break;
      case 'search':
        conditions.push({ cols: def.cols ?? [def.col], op: 'search', value: text });
        break;
    }
  }
  return {
    conditions,
    order: parseSort(kind, query.sort as string | undefined),
    limit: (query.limit as number | undefined) ?? DEFAULT_LIMIT,
    offset: (query.offset as number | undefined) ?? 0,
    includeDeleted: canIncludeDeleted && query.includeDeleted === true,
  };
}
