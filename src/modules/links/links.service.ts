/**
 * Short links of a collection: admin CRUD and bulk. Every change publishes its webhook event in
 * its own transaction (the outbox), and drops the code from every process's redirect cache.
 * Its parts: `redirects` (the public redirect's lookups and click capture), `clickReads` (the
 * click list, statistics and conversions), `analytics`, `partitions`, and the `domains` it is
 * given.
 */
import { randomInt } from 'node:crypto';
import type { Analytics, Db, Queryable } from '../../db/index.ts';
import { AppError, badRequest, conflict, notFound } from '../../platform/errors.ts';
import type { NewEvent } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import { type PageWithTotal, paging } from '../../platform/schemas.ts';
import { httpUrl } from '../../platform/urls.ts';
import { LinkAnalytics } from './analytics.service.ts';
import type { ClickEventPublisher } from './click-events.ts';
import { ClickPartitions } from './click-partitions.ts';
import { ClickReads, parseTime } from './click-reads.service.ts';
import type { ClickRecorder } from './click-recorder.ts';
import { claimDomainCode } from './domains.repository.ts';
import type { DomainsService } from './domains.service.ts';
import { cacheKey } from './links.cache.ts';
import { type EventPublisher, shortUrl } from './links.events.ts';
import * as repo from './links.repository.ts';
import type { CreateLinkBody, Link, LinkListQuery, UpdateLinkBody } from './links.schema.ts';
import type { LinksSettings } from './links.settings.ts';
import { hashPassword } from './password-page.ts';
import { Redirects } from './redirects.service.ts';
import { checkRouting } from './routing.ts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A random base62 code; 7 characters give 62^7 ≈ 3.5 × 10^12 possibilities. */
function randomCode(length: number): string {
  let code = '';
  for (let i = 0; i < length; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

const checkDestination = (raw: string, field = 'url'): string => httpUrl(raw, field).toString();

export class LinksService {
  /** The public redirect's lookups, its cache, and click capture (redirects.service.ts). */
  readonly redirects: Redirects;
  /** Click analytics and the CSV export of clicks (analytics.service.ts). */
  readonly analytics: LinkAnalytics;
  /** A link's clicks listed and counted, and conversions (click-reads.service.ts). */
  readonly clickReads: ClickReads;
  /** The clicks' monthly partitions and their retention (click-partitions.ts). */
  readonly partitions: ClickPartitions;

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
    /** The collection's own domains (domains.service.ts). */
    readonly domains: DomainsService,
    /** The platform's analytics reads (slots, work_mem, time bound): the click analytics run in them. */
    analytics: Analytics,
  ) {
    this.redirects = new Redirects(db, settings, domains, clickRecorder);
    this.analytics = new LinkAnalytics(db, analytics);
    this.clickReads = new ClickReads(db);
    this.partitions = new ClickPartitions(db, settings);
  }

  /** A code's short address: on its custom domain (https, at the root), else PUBLIC_BASE_URL/l/{code}. */
  shortUrl(code: string, domain: string | null = null): string {
    return shortUrl(this.publicBaseUrl, code, domain);
  }

  private toLink(r: repo.LinkRow): Link {
    return {
      id: r.id,
      code: r.code,
      shortUrl: this.shortUrl(r.code, r.domain),
      destinationUrl: r.destination_url,
      title: r.title,
      tags: r.tags,
      expiresAt: r.expires_at ? r.expires_at.toISOString() : null,
      clicks: r.clicks,
      clickMilestones: r.click_milestones,
      createdBy: r.created_by,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
      domain: r.domain,
      trackConversions: r.track_conversions,
      rules: r.rules,
      variants: r.variants,
      passQuery: r.pass_query,
      expiredUrl: r.expired_url,
      passwordProtected: r.password_hash !== null,
    };
  }

  /** The fields every link event carries. */
  private eventData(r: repo.LinkRow): Record<string, unknown> {
    return {
      link_id: r.id,
      short_url: this.shortUrl(r.code, r.domain),
      destination_url: r.destination_url,
      code: r.code,
      domain: r.domain,
      title: r.title,
      tags: r.tags,
      expires_at: r.expires_at ? r.expires_at.toISOString() : null,
    };
  }

  private async publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<void> {
    await this.events.publish(q, collectionId, events);
  }

  /** Drops links' cache keys (links.cache.ts `cacheKey`) from this process's redirect cache. */
  private changed(keys: string[]): void {
    this.redirects.invalidate(keys);
  }

  /**
   * Claims a code on a domain for the collection (null: the own domain, migration 0403's
   * claims; a custom domain's in link_domain_codes): false when another collection has held it.
   */
  private claim(tx: Queryable, collectionId: string, code: string, domain: string | null): Promise<boolean> {
    return domain === null ? repo.claimCode(tx, collectionId, code) : claimDomainCode(tx, collectionId, domain, code);
  }

  async create(collectionId: string, actorId: string, body: CreateLinkBody): Promise<Link> {
    const prepared = await this.prepare(body);
    const row = await this.db.transaction(async (tx) => {
      const inserted = await this.insertPrepared(tx, collectionId, actorId, prepared);
      await this.publish(tx, collectionId, [this.createdEvent(inserted, actorId)]);
      await repo.notifyChanged(tx, [cacheKey(inserted.domain, inserted.code)]);
      return inserted;
    });
    // A negative cache entry for this code (someone tried it before it existed) must go.
    this.changed([cacheKey(row.domain, row.code)]);
    return this.toLink(row);
  }

  /**
   * Up to BULK_MAX links in one transaction, all or none: each checked as a single create is
   * (a refusal names `links[i].field`), each with its `link.created` in the same transaction.
   */
  async createMany(collectionId: string, actorId: string, bodies: CreateLinkBody[]): Promise<{ links: Link[] }> {
    const prepared = await prepareAll(bodies.map((body, i) => () => this.prepare(body, `links[${i}].`)));
    const rows = await this.db.transaction(async (tx) => {
      const inserted: repo.LinkRow[] = [];
      for (let i = 0; i < prepared.length; i++) {
        inserted.push(await this.insertPrepared(tx, collectionId, actorId, prepared[i], `links[${i}].`));
      }
      await this.announceCreated(tx, collectionId, actorId, inserted);
      return inserted;
    });
    this.changed(rows.map((r) => cacheKey(r.domain, r.code)));
    return { links: rows.map((r) => this.toLink(r)) };
  }

  /** New links' `link.created` events and the other processes' cache notice, in their transaction. */
  private async announceCreated(tx: Queryable, collectionId: string, actorId: string, rows: repo.LinkRow[]) {
    await this.publish(
      tx,
      collectionId,
      rows.map((r) => this.createdEvent(r, actorId)),
    );
    await repo.notifyChanged(
      tx,
      rows.map((r) => cacheKey(r.domain, r.code)),
    );
  }

  private createdEvent(r: repo.LinkRow, actorId: string): NewEvent {
    return { type: 'link.created', data: { ...this.eventData(r), created_by: actorId }, scope: { linkId: r.id } };
  }

  /** A create's fields checked and normalised; field names in refusals are prefixed with `at`. */
  async prepare(body: CreateLinkBody, at = ''): Promise<PreparedLink> {
    const destinationUrl = checkDestination(body.url, `${at}url`);
    const expiresAt = body.expiresAt !== undefined ? parseTime(body.expiresAt, `${at}expiresAt`) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now())
      throw badRequest(`${at}expiresAt must be in the future`, { field: `${at}expiresAt` });
    return { body, destinationUrl, expiresAt, routing: await routingColumns(body, at) };
  }

  /**
   * Inserts a prepared link in `tx` with its code claimed (a generated one retried on a
   * collision); a taken custom code is a 409 naming `${at}code`, which leaves `tx` usable.
   */
  private async insertPrepared(
    tx: Queryable,
    collectionId: string,
    actorId: string,
    p: PreparedLink,
    at = '',
    id = newId('lnk'),
  ): Promise<repo.LinkRow> {
    const { body } = p;
    const taken = () => conflict(`The code "${body.code}" is already taken`, { field: `${at}code` });
    const domain = body.domain === undefined ? null : await this.domains.usable(tx, collectionId, body.domain, at);
    for (let i = 0; i < 5; i++) {
      const code = body.code ?? randomCode(this.settings.codeLength + Math.floor(i / 2));
      // Another collection's code, even one its link gave up by rename, is never handed on.
      if (!(await this.claim(tx, collectionId, code, domain))) {
        if (body.code) throw taken();
        continue;
      }
      const inserted = await repo.insertLink(tx, collectionId, {
        id,
        code,
        destinationUrl: p.destinationUrl,
        title: body.title ?? null,
        tags: body.tags ?? [],
        expiresAt: p.expiresAt,
        clickMilestones: sortedMilestones(body.clickMilestones) ?? null,
        createdBy: actorId,
        domain,
        trackConversions: body.trackConversions ?? false,
        ...p.routing,
      });
      if (inserted) return inserted;
      if (body.code) throw taken();
    }
    throw new Error('could not find a free link code');
  }

  /** The collection's live links, newest first, a page at a time (an export never holds more). */
  async *exportLinks(
    collectionId: string,
    query: { q?: string; tag?: string },
    pageSize = 500,
  ): AsyncGenerator<Link[]> {
    let after: { at: string; id: string } | null = null;
    for (;;) {
      const rows = await repo.exportPage(this.db, collectionId, query, after, pageSize);
      if (rows.length > 0) yield rows.map((r) => this.toLink(r));
      if (rows.length < pageSize) return;
      const last = rows[rows.length - 1];
      after = { at: last.at, id: last.id };
    }
  }

  /**
   * Links of an import written in one transaction with their `link.created` events. A row whose
   * code is taken is answered as its error and left out; the others are kept. Ids are the
   * caller's (an import's are derived from the job and the row, so a retried job skips the
   * rows an earlier attempt wrote: `existing`).
   */
  async insertBatch(
    collectionId: string,
    actorId: string,
    items: { prepared: PreparedLink; id: string }[],
  ): Promise<{ rows: ({ row: repo.LinkRow; fresh: boolean } | AppError)[] }> {
    const existing = await repo.linksById(
      this.db,
      collectionId,
      items.map((i) => i.id),
    );
    const out = await this.db.transaction(async (tx) => {
      const rows: ({ row: repo.LinkRow; fresh: boolean } | AppError)[] = [];
      for (const item of items) {
        const had = existing.get(item.id);
        if (had) {
          rows.push({ row: had, fresh: false });
          continue;
        }
        try {
          rows.push({
            row: await this.insertPrepared(tx, collectionId, actorId, item.prepared, '', item.id),
            fresh: true,
          });
        } catch (err) {
          // A taken code (409) or an unusable domain (400): that row's refusal, the rest go on.
          if (!(err instanceof AppError) || (err.statusCode !== 409 && err.statusCode !== 400)) throw err;
          rows.push(err);
        }
      }
      const inserted = rows.flatMap((r) => (r instanceof AppError || !r.fresh ? [] : [r.row]));
      if (inserted.length > 0) await this.announceCreated(tx, collectionId, actorId, inserted);
      return rows;
    });
    this.changed(out.flatMap((r) => (r instanceof AppError ? [] : [cacheKey(r.row.domain, r.row.code)])));
    return { rows: out };
  }

  async get(collectionId: string, linkId: string): Promise<Link> {
    const row = await repo.findLink(this.db, collectionId, linkId);
    if (!row) throw notFound('Link');
    return this.toLink(row);
  }

  async list(collectionId: string, query: LinkListQuery): Promise<PageWithTotal<Link>> {
    const { limit, offset } = paging(query, 20);
    // A list may be a moment old, except after this caller's own change (db/client.ts, `Db.read`).
    const { rows, total } = await this.db.read(collectionId, (r) =>
      repo.listLinks(r, collectionId, { ...query, limit, offset }),
    );
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
    const routing = await routingColumns(body);
    const { before, after } = await this.db.transaction(async (tx) => {
      const before = await repo.findLink(tx, collectionId, linkId, true);
      if (!before) throw notFound('Link');
      const domain =
        body.domain === undefined
          ? before.domain
          : body.domain === null
            ? null
            : await this.domains.usable(tx, collectionId, body.domain);
      const code = body.code ?? before.code;
      // The old code stays claimed by this collection (repo.claimCode): it may come back to
      // one of its links, never to another collection's. A move to another domain is a new
      // address too: claimed and checked on that domain.
      if (
        (code !== before.code || domain !== before.domain) &&
        (!(await this.claim(tx, collectionId, code, domain)) || (await repo.codeTaken(tx, code, domain)))
      ) {
        throw conflict(`The code "${code}" is already taken${domain ? ` on ${domain}` : ''}`, { field: 'code' });
      }
      const after = await repo.updateLink(tx, collectionId, linkId, {
        code: body.code,
        destinationUrl,
        title: body.title,
        tags: body.tags,
        expiresAt,
        clickMilestones: body.clickMilestones === null ? null : sortedMilestones(body.clickMilestones),
        domain: domain !== before.domain ? domain : undefined,
        trackConversions: body.trackConversions,
        ...routing,
      });
      const fields: string[] = [];
      if (before.code !== after.code) fields.push('code');
      if (before.domain !== after.domain) fields.push('domain');
      if (before.destination_url !== after.destination_url) fields.push('destination_url');
      if (before.title !== after.title) fields.push('title');
      if (JSON.stringify(before.tags) !== JSON.stringify(after.tags)) fields.push('tags');
      if (before.expires_at?.getTime() !== after.expires_at?.getTime()) fields.push('expires_at');
      fields.push(...routingChanges(before, after));
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
      const keys = [...new Set([cacheKey(before.domain, before.code), cacheKey(after.domain, after.code)])];
      await repo.notifyChanged(tx, keys);
      return { before, after };
    });
    this.changed([cacheKey(before.domain, before.code), cacheKey(after.domain, after.code)]);
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
      await repo.notifyChanged(tx, [cacheKey(row.domain, row.code)]);
      return row;
    });
    this.changed([cacheKey(row.domain, row.code)]);
    return { success: true };
  }
}

/** The routing columns of a create or a change: checked, empty lists as none, the password hashed. */
async function routingColumns(body: CreateLinkBody | UpdateLinkBody, at = ''): Promise<repo.RoutingColumns> {
  const { rules, variants, expiredUrl } = checkRouting(body, at);
  return {
    rules: rules?.length === 0 ? null : rules,
    variants,
    expiredUrl,
    passQuery: body.passQuery,
    passwordHash: body.password === undefined ? undefined : body.password && (await hashPassword(body.password)),
  };
}

/** The routing fields a change touched, as `link.updated` names them. */
function routingChanges(before: repo.LinkRow, after: repo.LinkRow): string[] {
  const out: string[] = [];
  if (JSON.stringify(before.rules) !== JSON.stringify(after.rules)) out.push('rules');
  if (JSON.stringify(before.variants) !== JSON.stringify(after.variants)) out.push('variants');
  if (before.pass_query !== after.pass_query) out.push('pass_query');
  if (before.expired_url !== after.expired_url) out.push('expired_url');
  if (before.password_hash !== after.password_hash) out.push('password');
  return out;
}

/** A create checked and normalised, ready to insert. */
export interface PreparedLink {
  body: CreateLinkBody;
  destinationUrl: string;
  expiresAt: Date | null;
  routing: repo.RoutingColumns;
}

/**
 * Password hashes run on libuv's pool (4 threads by default), which DNS look-ups and file reads
 * share: a bulk hashes two at a time, leaving the rest to them.
 */
const HASHING_AT_ONCE = 2;

/** The checks of a bulk, HASHING_AT_ONCE at a time; the first refusal by position wins. */
async function prepareAll<T>(tasks: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < tasks.length; i += HASHING_AT_ONCE) {
    const settled = await Promise.allSettled(tasks.slice(i, i + HASHING_AT_ONCE).map((f) => f()));
    for (const r of settled) {
      if (r.status === 'rejected') throw r.reason;
      out.push(r.value);
    }
  }
  return out;
}

/** A link's own milestones, kept in order (undefined stays undefined: nothing given). */
function sortedMilestones(list: number[] | undefined): number[] | undefined {
  return list && [...list].sort((a, b) => a - b);
}
