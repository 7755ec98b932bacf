/**
 * Click analytics: totals {clicks, uniques}, a series and a breakdown by one dimension, for a
 * link (read from its clicks: exact over any window) or for the whole collection (read from the
 * rollup the click batch keeps: whole UTC hours); and the CSV export of clicks, streamed a page
 * at a time. Bots are left out unless `includeBots`.
 */
import type { Readable } from 'node:stream';
import type { Analytics, Db, ReadSignal } from '../../db/index.ts';
import { csvLine } from '../../platform/csv.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { startedStream } from '../../platform/streaming.ts';
import { type AnyGroupBy, DIM, LINK_GROUP_BY, type LinkGroupBy } from './analytics.dimensions.ts';
import * as repo from './analytics.repository.ts';
import {
  type ClickAnalytics,
  type ClickExportQuery,
  type CollectionAnalyticsQuery,
  EXPORT_COLUMNS,
  type LinkAnalyticsQuery,
  MAX_BUCKETS,
  MAX_WINDOW_DAYS,
} from './analytics.schema.ts';
import { findLink } from './links.repository.ts';
import { utcDay } from './visitors.ts';

type Interval = repo.Interval;
const HOUR = 3_600_000;
/** The last whole hour an ISO 8601 date-time can name. */
const LAST_HOUR = Date.UTC(9999, 11, 31, 23);
const DAY = 86_400_000;
/** The window a request without `from` covers: a useful first chart for each interval. */
const DEFAULT_WINDOW_MS: Record<Interval, number> = {
  hour: 48 * HOUR,
  day: 30 * DAY,
  week: 84 * DAY,
  month: 365 * DAY,
};
/** Rows read per page of an export: memory stays bounded whatever the clicks. */
const EXPORT_PAGE = 5000;

/** The start of the bucket holding `t` (UTC; weeks from Monday). */
export function bucketStart(interval: Interval, t: number): number {
  if (interval === 'hour') return Math.floor(t / HOUR) * HOUR;
  const day = Math.floor(t / DAY) * DAY;
  if (interval === 'day') return day;
  if (interval === 'week') return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
  const d = new Date(day);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

function nextBucket(interval: Interval, start: number): number {
  if (interval === 'hour') return start + HOUR;
  if (interval === 'day') return start + DAY;
  if (interval === 'week') return start + 7 * DAY;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

/** ISO 8601 week, `2026-W07`: the week-numbering year is the year of the week's Thursday. */
function isoWeek(monday: number): string {
  const thursday = new Date(monday + 3 * DAY);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * DAY)) + 1;
  return `${year}-W${String(week).padStart(2, '0')}`;
}

/** A bucket's label as the aggregates of app objects label theirs (docs/app-objects.md). */
export function bucketLabel(interval: Interval, start: number): string {
  const iso = new Date(start).toISOString();
  if (interval === 'hour') return `${iso.slice(0, 13)}:00:00Z`;
  if (interval === 'day') return iso.slice(0, 10);
  if (interval === 'week') return isoWeek(start);
  return iso.slice(0, 7);
}

interface Window {
  from: Date;
  to: Date;
  interval: Interval;
  buckets: number[];
}

/** The window of a request, checked: from before to, at most MAX_WINDOW_DAYS and MAX_BUCKETS. */
function windowOf(q: { from?: string; to?: string; interval?: Interval }, now: Date, wholeHours: boolean): Window {
  const interval = q.interval ?? 'day';
  let to = q.to ? new Date(q.to) : now;
  let from = q.from ? new Date(q.from) : new Date(to.getTime() - DEFAULT_WINDOW_MS[interval]);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw badRequest('from and to must be valid times');
  if (from.getTime() >= to.getTime()) throw badRequest('from must be before to', { field: 'from' });
  if (wholeHours) {
    from = new Date(Math.floor(from.getTime() / HOUR) * HOUR);
    to = new Date(Math.ceil(to.getTime() / HOUR) * HOUR);
    // Widened past year 9999 the answer's `to` would not be an ISO date-time any more.
    if (to.getTime() > LAST_HOUR) {
      throw badRequest('to must be at most 9999-12-31T23:00:00.000Z (the collection counts whole hours)', {
        field: 'to',
      });
    }
  }
  const days = (to.getTime() - from.getTime()) / DAY;
  if (days > MAX_WINDOW_DAYS) {
    throw badRequest(
      `The window is ${Math.ceil(days)} days long; at most ${MAX_WINDOW_DAYS} (a later from or an earlier to)`,
      {
        field: 'from',
        max: MAX_WINDOW_DAYS,
      },
    );
  }
  const buckets: number[] = [];
  for (let t = bucketStart(interval, from.getTime()); t < to.getTime(); t = nextBucket(interval, t)) {
    if (buckets.length >= MAX_BUCKETS) {
      throw badRequest(
        `The window holds more than ${MAX_BUCKETS} ${interval} buckets (a shorter window or a longer interval)`,
        {
          field: 'interval',
          max: MAX_BUCKETS,
        },
      );
    }
    buckets.push(t);
  }
  return { from, to, interval, buckets };
}

function answer(
  w: Window,
  includeBots: boolean,
  groupBy: AnyGroupBy | undefined,
  rows: repo.AnalyticsRows,
  linkId?: string,
): ClickAnalytics {
  const perBucket = new Map(rows.series.map((r) => [r.start.getTime(), r]));
  const totals = { clicks: 0, uniques: 0 };
  const series = w.buckets.map((start) => {
    const r = perBucket.get(start);
    const clicks = r?.clicks ?? 0;
    const uniques = r?.uniques ?? 0;
    totals.clicks += clicks;
    totals.uniques += uniques;
    return { bucket: bucketLabel(w.interval, start), start: new Date(start).toISOString(), clicks, uniques };
  });
  const out: ClickAnalytics = {
    ...(linkId ? { linkId } : {}),
    from: w.from.toISOString(),
    to: w.to.toISOString(),
    interval: w.interval,
    includeBots,
    totals,
    series,
  };
  if (groupBy) {
    const other = rows.breakdown.find((r) => r.other);
    out.breakdown = {
      groupBy,
      items: rows.breakdown
        .filter((r) => !r.other)
        .map((r) => ({ value: r.value ?? '', clicks: r.clicks, uniques: r.uniques })),
      other: { clicks: other?.clicks ?? 0, uniques: other?.uniques ?? 0 },
    };
  }
  return out;
}

function clickLine(c: repo.ExportClickRow): string {
  return csvLine([
    c.id,
    c.link_id,
    c.clicked_at,
    c.ip_address,
    c.user_agent,
    c.referer,
    c.country,
    c.region,
    c.city,
    c.device_type,
    c.browser,
    c.os,
    c.device_type === 'bot',
    c.trigger,
    c.utm_source,
    c.utm_medium,
    c.utm_campaign,
    c.utm_term,
    c.utm_content,
    c.route,
  ]);
}

export class LinkAnalytics {
  constructor(
    private readonly db: Db,
    /**
     * The platform's analytics reads, `quick` (no transaction: the rollup's counts and a link's
     * clicks sort little): the slots every analytics read shares, so that a burst of breakdowns
     * over millions of clicks cannot take the pool, and, with the request's `signal`, a time
     * bound and a cancel when the client hangs up (platform/analytics-slots.ts). A read
     * replica serves them when one may (db/client.ts, `Db.read`).
     */
    private readonly analytics: Analytics,
  ) {}

  async forLink(
    collectionId: string,
    linkId: string,
    q: LinkAnalyticsQuery,
    signal?: ReadSignal,
    now = new Date(),
  ): Promise<ClickAnalytics> {
    const w = windowOf(q, now, false);
    const includeBots = q.includeBots ?? false;
    const filters = LINK_GROUP_BY.flatMap((g): [LinkGroupBy, string][] => (q[g] === undefined ? [] : [[g, q[g]]]));
    const rows = await this.analytics.quick(
      collectionId,
      async (r) => {
        if (!(await findLink(r, collectionId, linkId))) throw notFound('Link');
        return repo.linkAnalytics(r, collectionId, linkId, {
          ...w,
          includeBots,
          groupBy: q.groupBy,
          filters,
          limit: q.limit ?? 10,
        });
      },
      signal,
    );
    return answer(w, includeBots, q.groupBy, rows, linkId);
  }

  async forCollection(
    collectionId: string,
    q: CollectionAnalyticsQuery,
    signal?: ReadSignal,
    now = new Date(),
  ): Promise<ClickAnalytics> {
    // The rollup counts whole hours: the window is widened to them, and the answer says so.
    const w = windowOf(q, now, true);
    const includeBots = q.includeBots ?? false;
    const rows = await this.analytics.quick(
      collectionId,
      (r) =>
        repo.collectionAnalytics(r, collectionId, {
          ...w,
          includeBots,
          groupBy: q.groupBy,
          dim: q.groupBy && DIM.get(q.groupBy),
          limit: q.limit ?? 10,
        }),
      signal,
    );
    return answer(w, includeBots, q.groupBy, rows);
  }

  /** A link's clicks as CSV, read a page at a time while the answer is sent. */
  async exportLink(collectionId: string, linkId: string, q: ClickExportQuery): Promise<Readable> {
    const range = exportRange(q);
    if (!(await findLink(this.db, collectionId, linkId))) throw notFound('Link');
    return startedStream(this.csv(collectionId, async () => [linkId], range, q.includeBots ?? false));
  }

  /** Every click of the collection as CSV, link after link (by id), each in time order. */
  exportCollection(collectionId: string, q: ClickExportQuery): Promise<Readable> {
    const range = exportRange(q);
    return startedStream(
      this.csv(collectionId, () => repo.linkIdsOf(this.db, collectionId), range, q.includeBots ?? false),
    );
  }

  private async *csv(
    collectionId: string,
    links: () => Promise<string[]>,
    range: { from?: Date; to?: Date },
    includeBots: boolean,
  ): AsyncGenerator<string> {
    // The header goes with the first page, so that startedStream reads a page before answering.
    let header = `${EXPORT_COLUMNS.join(',')}\n`;
    for (const linkId of await links()) {
      let after: { at: Date; id: number } | undefined;
      for (;;) {
        const page = await repo.exportPage(this.db, collectionId, linkId, {
          ...range,
          includeBots,
          after,
          limit: EXPORT_PAGE,
        });
        if (page.length > 0) {
          yield header + page.map(clickLine).join('');
          header = '';
        }
        if (page.length < EXPORT_PAGE) break;
        const last = page[page.length - 1];
        after = { at: last.clicked_at, id: last.id };
      }
    }
    if (header) yield header;
  }

  /** Housekeeping: past days' salts and visitors (today's and yesterday's stay: clicks buffered over midnight). */
  async forgetPastVisitors(now = new Date()): Promise<{ salts: number; visitorDays: number }> {
    const yesterday = utcDay(new Date(now.getTime() - DAY));
    return {
      salts: await repo.forgetSalts(this.db, yesterday),
      visitorDays: await repo.forgetVisitorDays(this.db, yesterday),
    };
  }
}

function exportRange(q: ClickExportQuery): { from?: Date; to?: Date } {
  const from = q.from ? new Date(q.from) : undefined;
  const to = q.to ? new Date(q.to) : undefined;
  if (from && to && from.getTime() >= to.getTime()) throw badRequest('from must be before to', { field: 'from' });
  return { from, to };
}
