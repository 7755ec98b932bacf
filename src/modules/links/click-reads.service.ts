/**
 * A link's clicks as the seed's routes read them: the click list and the click statistics
 * (series and the top countries, device types and referer hosts), and the conversions of
 * links that track them (attribution.ts). Reads only; the clicks are written by the recorder
 * (click-recorder.ts) and analysed at depth by analytics.service.ts.
 */
import type { Db } from '../../db/index.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { type PageWithTotal, paging } from '../../platform/schemas.ts';
import {
  type CollectionConversions,
  type ConversionsQuery,
  collectionConversions,
  type LinkConversions,
  type LinkConversionsQuery,
  linkConversions,
} from './attribution.ts';
import * as repo from './links.repository.ts';
import {
  type Click,
  type ClickListQuery,
  type ClickStats,
  type ClickStatsQuery,
  STATS_MAX_BUCKETS,
} from './links.schema.ts';

/** A timestamp of a request, or a 400 naming its field. */
export function parseTime(raw: string, field: string): Date {
  const d = new Date(raw);
  if (Number.isNaN(d.getTime())) throw badRequest(`${field} is not a valid timestamp`, { field });
  return d;
}

const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 } as const;
/** The window a stats request without `from` covers: a useful first chart for each interval. */
const DEFAULT_WINDOW_MS = { hour: 48 * 3_600_000, day: 30 * 86_400_000 } as const;

/**
 * A bucket's name as the aggregates of app objects give it (docs/app-objects.md, Aggregates):
 * an RFC 3339 hour, or the date of a day.
 */
function bucketLabel(interval: 'hour' | 'day', start: Date): string {
  const iso = start.toISOString();
  return interval === 'day' ? iso.slice(0, 10) : `${iso.slice(0, 13)}:00:00Z`;
}

export class ClickReads {
  constructor(private readonly db: Db) {}

  async clicks(collectionId: string, linkId: string, query: ClickListQuery): Promise<PageWithTotal<Click>> {
    if (!(await repo.findLink(this.db, collectionId, linkId))) throw notFound('Link');
    const { limit, offset } = paging(query, 50);
    const { rows, total } = await repo.listClicks(this.db, collectionId, linkId, {
      from: query.from ? parseTime(query.from, 'from') : undefined,
      to: query.to ? parseTime(query.to, 'to') : undefined,
      limit,
      offset,
    });
    const items = rows.map((r) => ({
      id: r.id,
      clickedAt: r.clicked_at.toISOString(),
      ipAddress: r.ip_address,
      userAgent: r.user_agent,
      referer: r.referer,
      country: r.country,
      city: r.city,
      deviceType: r.device_type,
      trigger: r.trigger,
      clickId: r.click_id,
      region: r.region,
      browser: r.browser,
      os: r.os,
      utmSource: r.utm_source,
      utmMedium: r.utm_medium,
      utmCampaign: r.utm_campaign,
      utmTerm: r.utm_term,
      utmContent: r.utm_content,
      route: r.route,
    }));
    return { items, limit, offset, total };
  }

  /**
   * Counts of a link's clicks over a window: a series of every hour or day bucket (empty
   * ones as 0, so a chart needs no filling; the window is bounded, so the series is too) and
   * the top countries, device types and referer hosts.
   */
  async clickStats(
    collectionId: string,
    linkId: string,
    query: ClickStatsQuery,
    now = new Date(),
  ): Promise<ClickStats> {
    const interval = query.interval ?? 'day';
    const step = BUCKET_MS[interval];
    const to = query.to ? parseTime(query.to, 'to') : now;
    const from = query.from ? parseTime(query.from, 'from') : new Date(to.getTime() - DEFAULT_WINDOW_MS[interval]);
    if (from.getTime() >= to.getTime()) throw badRequest('from must be before to', { field: 'from' });
    // UTC hours and days are fixed lengths, so buckets are cut by arithmetic (as date_trunc
    // cuts them in SQL); the first and the last may be partial.
    const first = Math.floor(from.getTime() / step) * step;
    const buckets = Math.ceil((to.getTime() - first) / step);
    if (buckets > STATS_MAX_BUCKETS) {
      throw badRequest(
        `The window holds ${buckets} ${interval} buckets; at most ${STATS_MAX_BUCKETS} (a shorter window, or interval=day)`,
        { field: 'from', buckets, max: STATS_MAX_BUCKETS },
      );
    }
    if (!(await repo.findLink(this.db, collectionId, linkId))) throw notFound('Link');
    const top = query.top ?? 10;
    const rows = await repo.clickStats(this.db, collectionId, linkId, { interval, from, to, top });
    const perBucket = new Map<number, number>();
    const breakdowns = [1, 2, 3].map(() => ({ items: [] as { value: string; count: number }[], other: 0 }));
    for (const r of rows) {
      if (r.dim === 0 && r.start) perBucket.set(r.start.getTime(), r.n);
      else if (r.dim > 0 && r.other) breakdowns[r.dim - 1].other = r.n;
      else if (r.dim > 0) breakdowns[r.dim - 1].items.push({ value: r.value ?? '', count: r.n });
    }
    const series = [];
    let total = 0;
    for (let t = first; t < to.getTime(); t += step) {
      const count = perBucket.get(t) ?? 0;
      total += count;
      const start = new Date(t);
      series.push({ bucket: bucketLabel(interval, start), start: start.toISOString(), count });
    }
    const [countries, deviceTypes, referers] = breakdowns;
    return {
      linkId,
      interval,
      from: from.toISOString(),
      to: to.toISOString(),
      total,
      series,
      countries,
      deviceTypes,
      referers,
    };
  }

  /** A link's conversions: events carrying its click ids (attribution.ts). */
  conversions(collectionId: string, linkId: string, query: LinkConversionsQuery): Promise<LinkConversions> {
    return linkConversions(this.db, collectionId, linkId, query);
  }

  /** Every link's conversions in the collection (attribution.ts). */
  collectionConversions(collectionId: string, query: ConversionsQuery): Promise<CollectionConversions> {
    return collectionConversions(this.db, collectionId, query);
  }
}
