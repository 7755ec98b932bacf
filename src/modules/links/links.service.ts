/**
 * Short links of a collection: admin CRUD, the public redirect, click capture (stored by the
 * ClickRecorder, click-recorder.ts). Every change
 * publishes its webhook event in its own transaction (the outbox), and drops the code from
 * every process's redirect cache.
 */
import { randomInt } from 'node:crypto';
import type { Db, Queryable } from '../../db/index.ts';
import type { TrustedProxies } from '../../platform/client-address.ts';
import { badRequest, conflict, gone, notFound } from '../../platform/errors.ts';
import type { NewEvent } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import { type PageWithTotal, paging } from '../../platform/schemas.ts';
import { Subscription } from '../../platform/subscription.ts';
import { httpUrl } from '../../platform/urls.ts';
import { LinkAnalytics } from './analytics.service.ts';
import type { ClickEventPublisher } from './click-events.ts';
import type { ClickRecorder } from './click-recorder.ts';
import type { RawClick } from './clicks.ts';
import { type CachedLink, RedirectCache } from './links.cache.ts';
import { type EventPublisher, shortUrl } from './links.events.ts';
import * as repo from './links.repository.ts';
import {
  type Click,
  type ClickListQuery,
  type ClickStats,
  type ClickStatsQuery,
  type CreateLinkBody,
  type Link,
  type LinkListQuery,
  STATS_MAX_BUCKETS,
  type UpdateLinkBody,
} from './links.schema.ts';
import type { LinksSettings } from './links.settings.ts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random base62 code; 7 characters give 62^7 ≈ 3.5 × 10^12 possibilities. */
function randomCode(length: number): string {
  let code = '';
  for (let i = 0; i < length; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

const checkDestination = (raw: string): string => httpUrl(raw).toString();

function parseTime(raw: string, field: string): Date {
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

export class LinksService {
  readonly cache: RedirectCache;
  readonly trusted: TrustedProxies;
  /** Other processes' link changes, dropped from the redirect cache (started and stopped by the manifest). */
  readonly changes: Subscription;
  /** Click analytics and the CSV export of clicks (analytics.service.ts). */
  readonly analytics: LinkAnalytics;

  constructor(
    private readonly db: Db,
    readonly settings: LinksSettings,
    /** The service's public address, BASE_PATH included: short URLs are built on it. */
    private readonly publicBaseUrl: string,
    /** Where link events go: the webhooks module's outbox. */
    private readonly events: EventPublisher,
    /** Stores the redirects' clicks in batches; the manifest starts and stops it. */
    readonly clickRecorder: ClickRecorder,
    /** Publishes the link.clicked events the batches note, in processes that run jobs. */
    readonly clickEvents: ClickEventPublisher,
  ) {
    this.cache = new RedirectCache(this.settings.cacheTtlMs, this.settings.cacheMaxEntries);
    this.trusted = settings.trustedProxies;
    this.analytics = new LinkAnalytics(db);
    this.changes = new Subscription(
      db,
      repo.LINKS_CHANNEL,
      (code) => this.cache.invalidate(code),
      // Changes made elsewhere while the LISTEN connection was down were never announced.
      () => this.cache.clear(),
    );
  }

  shortUrl(code: string): string {
    return shortUrl(this.publicBaseUrl, code);
  }

  private toLink(r: repo.LinkRow): Link {
    return {
      id: r.id,
      code: r.code,
      shortUrl: this.shortUrl(r.code),
      destinationUrl: r.destination_url,
      title: r.title,
      tags: r.tags,
      expiresAt: r.expires_at ? r.expires_at.toISOString() : null,
      clicks: r.clicks,
      clickMilestones: r.click_milestones,
      createdBy: r.created_by,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    };
  }

  /** The fields every link event carries. */
  private eventData(r: repo.LinkRow): Record<string, unknown> {
    return {
      link_id: r.id,
      short_url: this.shortUrl(r.code),
      destination_url: r.destination_url,
      code: r.code,
      title: r.title,
      tags: r.tags,
      expires_at: r.expires_at ? r.expires_at.toISOString() : null,
    };
  }

  private async publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<void> {
    await this.events.publish(q, collectionId, events);
  }

  private changed(codes: string[]): void {
    for (const c of codes) this.cache.invalidate(c);
  }

  async create(collectionId: string, actorId: string, body: CreateLinkBody): Promise<Link> {
    const destinationUrl = checkDestination(body.url);
    const expiresAt = body.expiresAt !== undefined ? parseTime(body.expiresAt, 'expiresAt') : null;
    if (expiresAt && expiresAt.getTime() <= Date.now())
      throw badRequest('expiresAt must be in the future', { field: 'expiresAt' });
    const row = await this.db.transaction(async (tx) => {
      let inserted: repo.LinkRow | undefined;
      for (let i = 0; i < 5 && !inserted; i++) {
        const code = body.code ?? randomCode(this.settings.codeLength + Math.floor(i / 2));
        // Another collection's code, even one its link gave up by rename, is never handed on.
        if (!(await repo.claimCode(tx, collectionId, code))) {
          if (body.code) throw conflict(`The code "${body.code}" is already taken`, { field: 'code' });
          continue;
        }
        inserted = await repo.insertLink(tx, collectionId, {
          id: newId('lnk'),
          code,
          destinationUrl,
          title: body.title ?? null,
          tags: body.tags ?? [],
          expiresAt,
          clickMilestones: sortedMilestones(body.clickMilestones) ?? null,
          createdBy: actorId,
        });
        if (!inserted && body.code) throw conflict(`The code "${body.code}" is already taken`, { field: 'code' });
      }
      if (!inserted) throw new Error('could not find a free link code');
      await this.publish(tx, collectionId, [
        {
          type: 'link.created',
          data: { ...this.eventData(inserted), created_by: actorId },
          scope: { linkId: inserted.id },
        },
      ]);
      await repo.notifyChanged(tx, [inserted.code]);
      return inserted;
    });
    // A negative cache entry for this code (someone tried it before it existed) must go.
    this.changed([row.code]);
    return this.toLink(row);
  }

  async get(collectionId: string, linkId: string): Promise<Link> {
    const row = await repo.findLink(this.db, collectionId, linkId);
    if (!row) throw notFound('Link');
    return this.toLink(row);
  }

  async list(collectionId: string, query: LinkListQuery): Promise<PageWithTotal<Link>> {
    const { limit, offset } = paging(query, 20);
    const { rows, total } = await repo.listLinks(this.db, collectionId, { ...query, limit, offset });
    return { items: rows.map((r) => this.toLink(r)), limit, offset, total };
  }

  async update(collectionId: string, linkId: string, body: UpdateLinkBody): Promise<Link> {
    const destinationUrl = body.url !== undefined ? checkDestination(body.url) : undefined;
    const expiresAt =
      body.expiresAt === undefined
        ? undefined
        : body.expiresAt === null
          ? null
          : parseTime(body.expiresAt, 'expiresAt');
    const { before, after } = await this.db.transaction(async (tx) => {
      const before = await repo.findLink(tx, collectionId, linkId, true);
      if (!before) throw notFound('Link');
      // The old code stays claimed by this collection (repo.claimCode): it may come back to
      // one of its links, never to another collection's.
      if (
        body.code !== undefined &&
        body.code !== before.code &&
        (!(await repo.claimCode(tx, collectionId, body.code)) || (await repo.codeTaken(tx, body.code)))
      ) {
        throw conflict(`The code "${body.code}" is already taken`, { field: 'code' });
      }
      const after = await repo.updateLink(tx, collectionId, linkId, {
        code: body.code,
        destinationUrl,
        title: body.title,
        tags: body.tags,
        expiresAt,
        clickMilestones: body.clickMilestones === null ? null : sortedMilestones(body.clickMilestones),
      });
      const fields: string[] = [];
      if (before.code !== after.code) fields.push('code');
      if (before.destination_url !== after.destination_url) fields.push('destination_url');
      if (before.title !== after.title) fields.push('title');
      if (JSON.stringify(before.tags) !== JSON.stringify(after.tags)) fields.push('tags');
      if (before.expires_at?.getTime() !== after.expires_at?.getTime()) fields.push('expires_at');
      const previous: Record<string, unknown> = {};
      const beforeData = this.eventData(before);
      for (const f of fields) previous[f] = beforeData[f];
      await this.publish(tx, collectionId, [
        {
          type: 'link.updated',
          data: { ...this.eventData(after), changed_fields: fields, previous },
          scope: { linkId: after.id },
        },
      ]);
      await repo.notifyChanged(tx, [...new Set([before.code, after.code])]);
      return { before, after };
    });
    this.changed([before.code, after.code]);
    return this.toLink(after);
  }

  async remove(collectionId: string, linkId: string): Promise<{ success: boolean }> {
    const row = await this.db.transaction(async (tx) => {
      const row = await repo.softDeleteLink(tx, collectionId, linkId);
      if (!row) throw notFound('Link');
      await this.publish(tx, collectionId, [
        {
          type: 'link.deleted',
          data: { ...this.eventData(row), deleted_at: row.deleted_at?.toISOString() ?? null },
          scope: { linkId: row.id },
        },
      ]);
      await repo.notifyChanged(tx, [row.code]);
      return row;
    });
    this.changed([row.code]);
    return { success: true };
  }

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

  // --- the redirect ------------------------------------------------------------------------

  /** Where a code leads: from the cache, else one indexed read. Throws 404 / 410. */
  async resolve(code: string, now = Date.now()): Promise<CachedLink> {
    let link = this.cache.get(code, now);
    if (link === undefined) {
      const token = this.cache.token();
      const row = await repo.findByCode(this.db, code);
      link =
        row && !row.deleted_at
          ? {
              collectionId: row.collection_id,
              linkId: row.id,
              code: row.code,
              destinationUrl: row.destination_url,
              expiresAt: row.expires_at ? row.expires_at.getTime() : null,
            }
          : null;
      this.cache.set(code, link, token, now);
    }
    if (!link) throw notFound('Link');
    if (link.expiresAt !== null && link.expiresAt <= now) throw gone('This link has expired');
    return link;
  }

  /** Queues a click; never waits for the database. */
  recordClick(click: RawClick): void {
    this.clickRecorder.record(click);
  }

  /** Stores every buffered click now, rather than at the recorder's next flush (tests use it). */
  flush(): Promise<void> {
    return this.clickRecorder.flush();
  }
}

/** A link's own milestones, kept in order (undefined stays undefined: nothing given). */
function sortedMilestones(list: number[] | undefined): number[] | undefined {
  return list && [...list].sort((a, b) => a - b);
}
