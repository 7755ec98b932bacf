/**
 * Aggregate requests → a typed spec. Group names, metric names, the time-series field and
 * the interval are looked up in per-kind whitelists; anything else is a 400 naming it.
 * Names are snake_case (`record_type`, `avg_close_time_seconds`), as docs/app-objects.md
 * (Aggregates) lists them; camelCase aliases of fields are accepted too.
 */
import { badRequest } from '../../../platform/errors.ts';
import type { AggregateWhitelists, MetricName, ObjectKind } from './kinds.ts';

export type { MetricName };

import { type Condition, dateCondition, dateConditions, statusCondition } from './list-query.ts';

export const INTERVALS = ['hour', 'day', 'week', 'month', 'quarter', 'year'] as const;
export type Interval = (typeof INTERVALS)[number];

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

/** The names a whitelist allows, for the 400 that refuses another. */
const listed = (t: ReadonlyMap<string, unknown>) => [...t.keys()].join(', ');

/** `recordType` → `record_type`, so both spellings name the same field. */
export const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function filterConditions(allowed: AggregateWhitelists['filters'], filters: Record<string, unknown>): Condition[] {
  const out: Condition[] = [];
  for (const [rawName, value] of Object.entries(filters)) {
    if (value === undefined || value === null) continue;
    const name = snake(rawName);
    const def = allowed.get(name);
    if (!def) {
      throw badRequest(`Unknown aggregate filter "${rawName}"; allowed: ${listed(allowed)}`, {
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
          out.push(dateCondition(`${param}.${op}`, def.col, op as 'gte', v));
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

const DAY_MS = 86_400_000;
const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * The ISO 8601 week of an instant (UTC), `YYYY-Www`: weeks start on Monday, and a week belongs
 * to the year of its Thursday, so 2027-01-01 (a Friday) is in 2026-W53 and 2024-12-30 (a
 * Monday) in 2025-W01. The year is the ISO week-numbering year, not the calendar year.
 */
export function isoWeek(at: Date): string {
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  const mondayBased = (at.getUTCDay() + 6) % 7;
  const thursday = new Date(day + (3 - mondayBased) * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * DAY_MS)) + 1;
  return `${pad(year, 4)}-W${pad(week)}`;
}

/**
 * The label of the time bucket starting at `start` (UTC), as clients of the original read
 * them: `2026-02-10T14:00:00Z` (hour), `2026-02-10` (day), `2026-W07` (ISO week),
 * `2026-02` (month), `2026-Q1` (quarter), `2026` (year).
 */
export function bucketLabel(interval: Interval, start: Date): string {
  const y = pad(start.getUTCFullYear(), 4);
  const m = start.getUTCMonth();
  const date = `${y}-${pad(m + 1)}-${pad(start.getUTCDate())}`;
  switch (interval) {
    case 'hour':
      return `${date}T${pad(start.getUTCHours())}:00:00Z`;
    case 'day':
      return date;
    case 'week':
      return isoWeek(start);
    case 'month':
      return `${y}-${pad(m + 1)}`;
    case 'quarter':
      return `${y}-Q${Math.floor(m / 3) + 1}`;
    case 'year':
      return y;
  }
}

export function parseAggregate(kind: ObjectKind, body: AggregateRequest): AggregateSpec {
  const { filters = {}, groupBy = [], metrics = ['count'], timeSeriesField, timeSeriesInterval, ...topLevel } = body;
  const allowed = kind.aggregate;
  const conditions = [...filterConditions(allowed.filters, filters), ...filterConditions(allowed.filters, topLevel)];
  const groups = groupBy.map((g) => {
    const col = allowed.groups.get(snake(g));
    if (!col) throw badRequest(`Unknown groupBy "${g}"; allowed: ${listed(allowed.groups)}`, { groupBy: g });
    return { name: g, col };
  });
  const names = new Set<MetricName>(['count']);
  for (const m of metrics) {
    const expanded = allowed.metrics.get(snake(m));
    if (!expanded) throw badRequest(`Unknown metric "${m}"; allowed: ${listed(allowed.metrics)}`, { metric: m });
    for (const e of expanded) names.add(e);
  }
  let timeSeries: AggregateSpec['timeSeries'];
  if (timeSeriesField !== undefined || timeSeriesInterval !== undefined) {
    const col = allowed.timeFields.get(snake(timeSeriesField ?? 'created_at'));
    if (!col) {
      throw badRequest(`Unknown timeSeriesField "${timeSeriesField}"; allowed: ${listed(allowed.timeFields)}`);
    }
    const interval = (timeSeriesInterval ?? 'day') as Interval;
    if (!INTERVALS.includes(interval)) throw badRequest(`timeSeriesInterval must be one of ${INTERVALS.join(', ')}`);
    timeSeries = { col, interval };
  }
  return { conditions, groupBy: groups, metrics: [...names], timeSeries };
}
