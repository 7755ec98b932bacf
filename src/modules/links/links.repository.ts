/** All SQL of the links module. */
import sql, { join, raw } from 'sql-template-tag';
import { allOf, pageWithTotal, type Queryable, setList } from '../../db/index.ts';
import type { Rule, Variant } from './routing.schema.ts';

/** Channel on which a changed code is announced, so every process drops it from its cache. */
export const LINKS_CHANNEL = 'links_changed';

export interface LinkRow {
  collection_id: string;
  id: string;
  code: string;
  destination_url: string;
  title: string | null;
  tags: string[];
  expires_at: Date | null;
  clicks: number;
  click_milestones: number[] | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
  /** The custom domain it lives on (migration 0600); null: the deployment's own. */
  domain: string | null;
  track_conversions: boolean;
  // Routing (migration 0610, routing.ts).
  rules: Rule[] | null;
  variants: Variant[] | null;
  pass_query: boolean;
  expired_url: string | null;
  password_hash: string | null;
  total?: number;
}

/** A link's routing as stored: absent fields are left as they are by an update. */
export interface RoutingColumns {
  rules?: Rule[] | null;
  variants?: Variant[] | null;
  passQuery?: boolean;
  expiredUrl?: string | null;
  passwordHash?: string | null;
}

const jsonOrNull = (v: unknown) => (v ? JSON.stringify(v) : null);

export interface ClickRow {
  id: number;
  clicked_at: Date;
  ip_address: string;
  user_agent: string;
  referer: string;
  country: string;
  city: string;
  device_type: string;
  /** 'link' or 'qr' (migration 0600). */
  trigger: string;
  click_id: string | null;
  region: string;
  browser: string;
  os: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  utm_term: string;
  utm_content: string;
  /** `destination`, `rule:<i>` or `variant:<i>`; '' before migration 0630. */
  route: string;
  total?: number;
}

export interface NewClick {
  collectionId: string;
  linkId: string;
  clickedAt: Date;
  ipAddress: string;
  userAgent: string;
  referer: string;
  country: string;
  city: string;
  deviceType: string;
  /** The click id given to the destination (links that track conversions), else null or absent. */
  clickId?: string | null;
  /** The analytics' dimensions (analytics.repository.ts): parsed, looked up or read from the query. */
  region: string;
  browser: string;
  os: string;
  utmSource: string;
  utmMedium: string;
  utmCampaign: string;
  utmTerm: string;
  utmContent: string;
  /** 'link' or 'qr' (a scan of the QR code's address). */
  trigger: string;
  /** The way of the link the click was sent (routing.ts). */
  route: string;
  /** The visitor's hash under the day's salt (visitors.ts). */
  visitor: string;
}

const COLUMNS = raw(
  'collection_id, id, code, destination_url, title, tags, expires_at, clicks, click_milestones, created_by, created_at, updated_at, deleted_at, domain, track_conversions' +
    ', rules, variants, pass_query, expired_url, password_hash',
);

/** Inserts a link unless its code is taken (then undefined: the caller decides). */
export async function insertLink(
  db: Queryable,
  collectionId: string,
  l: {
    id: string;
    code: string;
    destinationUrl: string;
    title: string | null;
    tags: string[];
    expiresAt: Date | null;
    clickMilestones: number[] | null;
    createdBy: string;
    domain?: string | null;
    trackConversions?: boolean;
  } & RoutingColumns,
): Promise<LinkRow | undefined> {
  const milestones = l.clickMilestones ? JSON.stringify(l.clickMilestones) : null;
  // No conflict target: the code is unique per domain, by one of two partial indexes (0600).
  const { rows } = await db.query<LinkRow>(sql`
    INSERT INTO links (collection_id, id, code, destination_url, title, tags, expires_at, click_milestones, created_by,
      domain, track_conversions, rules, variants, pass_query, expired_url, password_hash)
    VALUES (${collectionId}, ${l.id}, ${l.code}, ${l.destinationUrl}, ${l.title}, ${JSON.stringify(l.tags)}::jsonb,
      ${l.expiresAt}, ${milestones}::jsonb, ${l.createdBy}, ${l.domain ?? null}, ${l.trackConversions ?? false},
      ${jsonOrNull(l.rules)}::jsonb, ${jsonOrNull(l.variants)}::jsonb, ${l.passQuery ?? true}, ${l.expiredUrl ?? null},
      ${l.passwordHash ?? null})
    ON CONFLICT DO NOTHING
    RETURNING ${COLUMNS}`);
  return rows[0];
}

export async function findLink(
  db: Queryable,
  collectionId: string,
  id: string,
  forUpdate = false,
): Promise<LinkRow | undefined> {
  const { rows } = await db.query<LinkRow>(sql`
    SELECT ${COLUMNS} FROM links
    WHERE collection_id = ${collectionId} AND id = ${id} AND deleted_at IS NULL ${raw(forUpdate ? 'FOR UPDATE' : '')}`);
  return rows[0];
}

/**
 * By code on a domain (null: the deployment's own), deleted ones included (the redirect tells
 * "deleted" from "never existed" only by 404).
 */
export async function findByCode(
  db: Queryable,
  code: string,
  domain: string | null = null,
): Promise<LinkRow | undefined> {
  const { rows } = await db.query<LinkRow>(
    domain === null
      ? sql`SELECT ${COLUMNS} FROM links WHERE code = ${code} AND domain IS NULL`
      : sql`SELECT ${COLUMNS} FROM links WHERE domain = ${domain} AND code = ${code}`,
  );
  return rows[0];
}

/**
 * Claims `code` for the collection (migration 0403): true when the code is now, or already
 * was, this collection's; false when another collection has ever held it. A claim is never
 * released, so a code a link gave up by rename (or deletion) is never handed to another
 * collection. Made in the transaction that inserts or renames the link, so two collections
 * racing for one code meet on link_codes' unique index and one of them gets false.
 */
export async function claimCode(db: Queryable, collectionId: string, code: string): Promise<boolean> {
  // The no-op update on a claim of the same collection is what makes RETURNING answer it.
  const { rows } = await db.query(sql`
    INSERT INTO link_codes (collection_id, code) VALUES (${collectionId}, ${code})
    ON CONFLICT (code) DO UPDATE SET code = EXCLUDED.code WHERE link_codes.collection_id = EXCLUDED.collection_id
    RETURNING collection_id`);
  return rows.length > 0;
}

/** Whether a link (live or deleted, of any collection) holds the code on the domain now (null: the own). */
export async function codeTaken(db: Queryable, code: string, domain: string | null = null): Promise<boolean> {
  return (await findByCode(db, code, domain)) !== undefined;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export async function listLinks(
  db: Queryable,
  collectionId: string,
  q: { q?: string; tag?: string; limit: number; offset: number },
): Promise<{ rows: LinkRow[]; total: number }> {
  const where = [sql`collection_id = ${collectionId}`, sql`deleted_at IS NULL`];
  const term = q.q?.trim();
  if (term) {
    const like = `%${escapeLike(term)}%`;
    where.push(sql`(code ILIKE ${like} OR title ILIKE ${like} OR destination_url ILIKE ${like})`);
  }
  if (q.tag) where.push(sql`tags @> ${JSON.stringify([q.tag])}::jsonb`);
  return pageWithTotal<LinkRow>(db, {
    columns: COLUMNS,
    from: sql`FROM links WHERE ${join(where, ' AND ')}`,
    orderBy: sql`created_at DESC, id DESC`,
    limit: q.limit,
    offset: q.offset,
  });
}

/**
 * A page of the collection's live links for an export, newest first, after a cursor: the last
 * row's `created_at` as PostgreSQL's own text (microseconds kept: a Date would round them, and
 * the links of one bulk create share one time) and its id.
 */
export async function exportPage(
  db: Queryable,
  collectionId: string,
  q: { q?: string; tag?: string },
  after: { at: string; id: string } | null,
  limit: number,
): Promise<(LinkRow & { at: string })[]> {
  const term = q.q?.trim();
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    sql`deleted_at IS NULL`,
    !!term &&
      sql`(code ILIKE ${`%${escapeLike(term)}%`} OR title ILIKE ${`%${escapeLike(term)}%`} OR destination_url ILIKE ${`%${escapeLike(term)}%`})`,
    !!q.tag && sql`tags @> ${JSON.stringify([q.tag])}::jsonb`,
    after !== null && sql`(created_at, id) < (${after.at}::timestamptz, ${after.id})`,
  );
  const { rows } = await db.query<LinkRow & { at: string }>(sql`
    SELECT ${COLUMNS}, created_at::text AS at FROM links WHERE ${where}
    ORDER BY created_at DESC, id DESC LIMIT ${limit}`);
  return rows;
}

export async function updateLink(
  db: Queryable,
  collectionId: string,
  id: string,
  patch: {
    code?: string;
    destinationUrl?: string;
    title?: string | null;
    tags?: string[];
    expiresAt?: Date | null;
    clickMilestones?: number[] | null;
    domain?: string | null;
    trackConversions?: boolean;
  } & RoutingColumns,
): Promise<LinkRow> {
  const sets = setList(
    sql`updated_at = now()`,
    patch.code !== undefined && sql`code = ${patch.code}`,
    patch.destinationUrl !== undefined && sql`destination_url = ${patch.destinationUrl}`,
    patch.title !== undefined && sql`title = ${patch.title}`,
    patch.tags !== undefined && sql`tags = ${JSON.stringify(patch.tags)}::jsonb`,
    patch.clickMilestones !== undefined &&
      sql`click_milestones = ${patch.clickMilestones ? JSON.stringify(patch.clickMilestones) : null}::jsonb`,
    patch.expiresAt !== undefined && sql`expires_at = ${patch.expiresAt}`,
    patch.domain !== undefined && sql`domain = ${patch.domain}`,
    patch.trackConversions !== undefined && sql`track_conversions = ${patch.trackConversions}`,
    patch.rules !== undefined && sql`rules = ${jsonOrNull(patch.rules)}::jsonb`,
    patch.variants !== undefined && sql`variants = ${jsonOrNull(patch.variants)}::jsonb`,
    patch.passQuery !== undefined && sql`pass_query = ${patch.passQuery}`,
    patch.expiredUrl !== undefined && sql`expired_url = ${patch.expiredUrl}`,
    patch.passwordHash !== undefined && sql`password_hash = ${patch.passwordHash}`,
  );
  const { rows } = await db.query<LinkRow>(sql`
    UPDATE links SET ${sets}
    WHERE collection_id = ${collectionId} AND id = ${id} AND deleted_at IS NULL
    RETURNING ${COLUMNS}`);
  return rows[0];
}

export async function softDeleteLink(db: Queryable, collectionId: string, id: string): Promise<LinkRow | undefined> {
  const { rows } = await db.query<LinkRow>(sql`
    UPDATE links SET deleted_at = now(), updated_at = now()
    WHERE collection_id = ${collectionId} AND id = ${id} AND deleted_at IS NULL
    RETURNING ${COLUMNS}`);
  return rows[0];
}

/** Announces changed codes; inside a transaction PostgreSQL delivers it only on commit. */
export async function notifyChanged(db: Queryable, codes: string[]): Promise<void> {
  // One statement however many codes (a bulk create announces up to 1,000).
  await db.query(sql`SELECT pg_notify(${LINKS_CHANNEL}, c) FROM unnest(${codes}::text[]) AS c`);
}

/** The collection's links (deleted ones included) that have these ids, by id. */
export async function linksById(db: Queryable, collectionId: string, ids: string[]): Promise<Map<string, LinkRow>> {
  const { rows } = await db.query<LinkRow>(
    sql`SELECT ${COLUMNS} FROM links WHERE collection_id = ${collectionId} AND id = ANY(${ids}::text[])`,
  );
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * Stores a batch of clicks and adds them to their links' counters; returns, per click, whether
 * it was stored. link_clicks has no foreign key (migration 0401), so the links' rows are
 * locked first and only clicks of links found are stored. The locks are taken in one stable
 * order, so flushes running at once in several processes cannot deadlock.
 */
/** A link's counter moved by a batch of clicks: from `clicks - n` to `clicks`. */
export interface CountedLink {
  collection_id: string;
  id: string;
  clicks: number;
  n: number;
  click_milestones: number[] | null;
}

/**
 * Stores clicks and moves their links' counters, under the links' row locks (so counters
 * move one batch at a time, and each crossing of a threshold is seen by exactly one batch).
 * Returns which clicks were stored (their link still exists) and each counter's move.
 */
export async function insertClicks(
  db: Queryable,
  clicks: NewClick[],
): Promise<{ stored: boolean[]; counted: CountedLink[] }> {
  if (clicks.length === 0) return { stored: [], counted: [] };
  const keyOf = (collectionId: string, linkId: string) => `${collectionId}\u0000${linkId}`;
  const perLink = new Map<string, { collectionId: string; linkId: string; n: number }>();
  for (const c of clicks) {
    const key = keyOf(c.collectionId, c.linkId);
    const entry = perLink.get(key) ?? { collectionId: c.collectionId, linkId: c.linkId, n: 0 };
    entry.n++;
    perLink.set(key, entry);
  }
  const links = [...perLink.values()];
  const { rows: locked } = await db.query<{ collection_id: string; id: string }>(sql`
    SELECT l.collection_id, l.id
    FROM links l
    JOIN unnest(${links.map((l) => l.collectionId)}::text[], ${links.map((l) => l.linkId)}::text[]) AS k (collection_id, id)
      ON l.collection_id = k.collection_id AND l.id = k.id
    ORDER BY l.collection_id, l.id
    FOR UPDATE OF l`);
  const found = new Set(locked.map((r) => keyOf(r.collection_id, r.id)));
  const stored = clicks.map((c) => found.has(keyOf(c.collectionId, c.linkId)));
  const kept = clicks.filter((_, i) => stored[i]);
  if (kept.length === 0) return { stored, counted: [] };
  const counting = links.filter((l) => found.has(keyOf(l.collectionId, l.linkId)));
  const { rows: counted } = await db.query<CountedLink>(sql`
    UPDATE links l SET clicks = l.clicks + k.n
    FROM unnest(${counting.map((l) => l.collectionId)}::text[], ${counting.map((l) => l.linkId)}::text[],
      ${counting.map((l) => l.n)}::int[]) AS k (collection_id, id, n)
    WHERE l.collection_id = k.collection_id AND l.id = k.id
    RETURNING l.collection_id, l.id, l.clicks, k.n, l.click_milestones`);
  // One array parameter per column whatever the batch size: cheap to bind and to parse.
  // Times go as ISO strings: the driver's own Date formatting is several times slower.
  const col = <K extends keyof NewClick>(k: K) => kept.map((c) => c[k]);
  await db.query(sql`
    INSERT INTO link_clicks (collection_id, link_id, clicked_at, ip_address, user_agent, referer, country, city, device_type,
      region, browser, os, utm_source, utm_medium, utm_campaign, utm_term, utm_content, trigger, visitor, click_id, route)
    SELECT * FROM unnest(${col('collectionId')}::text[], ${col('linkId')}::text[],
      ${kept.map((c) => c.clickedAt.toISOString())}::timestamptz[], ${col('ipAddress')}::text[], ${col('userAgent')}::text[],
      ${col('referer')}::text[], ${col('country')}::text[], ${col('city')}::text[], ${col('deviceType')}::text[],
      ${col('region')}::text[], ${col('browser')}::text[], ${col('os')}::text[], ${col('utmSource')}::text[],
      ${col('utmMedium')}::text[], ${col('utmCampaign')}::text[], ${col('utmTerm')}::text[], ${col('utmContent')}::text[],
      ${col('trigger')}::text[], ${col('visitor')}::text[], ${kept.map((c) => c.clickId ?? null)}::text[],
      ${col('route')}::text[])`);
  return { stored, counted };
}

export async function listClicks(
  db: Queryable,
  collectionId: string,
  linkId: string,
  q: { from?: Date; to?: Date; limit: number; offset: number },
): Promise<{ rows: ClickRow[]; total: number }> {
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    sql`link_id = ${linkId}`,
    q.from && sql`clicked_at >= ${q.from}`,
    q.to && sql`clicked_at < ${q.to}`,
  );
  return pageWithTotal<ClickRow>(db, {
    columns: raw(
      'id, clicked_at, ip_address, user_agent, referer, country, city, device_type, trigger, click_id, region, browser, os' +
        ', utm_source, utm_medium, utm_campaign, utm_term, utm_content, route',
    ),
    from: sql`FROM link_clicks WHERE ${where}`,
    orderBy: sql`clicked_at DESC, id DESC`,
    limit: q.limit,
    offset: q.offset,
  });
}

/**
 * A referer's host name: after the scheme and any user info, up to the port, path, query or
 * fragment. Per host rather than per address: full referers (paths, query strings) rarely
 * repeat, so a breakdown by them would be all "other".
 */
const REFERER_HOST = '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#:]+)';

export interface ClickStatsRow {
  /** 0: the series (by `start`), 1: country, 2: device type, 3: referer host. */
  dim: number;
  start: Date | null;
  value: string | null;
  n: number;
  /** The sum of a breakdown's values beyond its top ones. */
  other: boolean;
}

/**
 * Clicks of one link in [from, to): counts per hour or day bucket, and the `top` countries,
 * device types and referer hosts with the rest summed as "other". One scan of the window
 * (the primary key leads with collection, link and time): the four groupings are grouping
 * sets of one GROUP BY, ranked per grouping in the same statement, so the answer stays small
 * however many distinct referers the window holds.
 */
export async function clickStats(
  db: Queryable,
  collectionId: string,
  linkId: string,
  q: { interval: 'hour' | 'day'; from: Date; to: Date; top: number },
): Promise<ClickStatsRow[]> {
  const { rows } = await db.query<ClickStatsRow>(sql`
    WITH c AS (
      SELECT date_trunc(${q.interval}, clicked_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start,
        country, device_type,
        CASE WHEN referer = '' THEN ''
          ELSE coalesce(lower(substring(referer FROM ${REFERER_HOST}::text)), left(referer, 100)) END AS host
      FROM link_clicks
      WHERE collection_id = ${collectionId} AND link_id = ${linkId}
        AND clicked_at >= ${q.from} AND clicked_at < ${q.to}
    ), g AS (
      SELECT
        CASE WHEN GROUPING(start) = 0 THEN 0 WHEN GROUPING(country) = 0 THEN 1
          WHEN GROUPING(device_type) = 0 THEN 2 ELSE 3 END AS dim,
        start,
        CASE WHEN GROUPING(country) = 0 THEN country WHEN GROUPING(device_type) = 0 THEN device_type
          WHEN GROUPING(host) = 0 THEN host END AS value,
        count(*) AS n
      FROM c
      GROUP BY GROUPING SETS ((start), (country), (device_type), (host))
    ), ranked AS (
      SELECT dim, start, value, n, row_number() OVER (PARTITION BY dim ORDER BY n DESC, value) AS rank FROM g
    )
    SELECT dim, start, value, n, false AS other FROM ranked WHERE dim = 0 OR rank <= ${q.top}
    UNION ALL
    SELECT dim, NULL, NULL, sum(n), true FROM ranked WHERE dim > 0 AND rank > ${q.top} GROUP BY dim
    ORDER BY dim, start, n DESC, value`);
  return rows;
}

/** Channel a click batch NOTIFYs with its collection when it noted link.clicked events. */
export const CLICK_EVENTS_CHANNEL = 'link_click_events';

/** Notes a batch's clicks for the publisher of link.clicked (click-events.ts), and tells it at commit. */
export async function noteClickEvents(tx: Queryable, collectionId: string, clicks: unknown): Promise<void> {
  await tx.query(
    sql`INSERT INTO link_click_events (collection_id, clicks) VALUES (${collectionId}, ${JSON.stringify(clicks)}::json)`,
  );
  await tx.query(sql`SELECT pg_notify(${CLICK_EVENTS_CHANNEL}, ${collectionId})`);
}

/** Collections with click events noted and not yet published. */
export async function collectionsWithClickEvents(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ collection_id: string }>(
    sql`SELECT DISTINCT collection_id FROM link_click_events LIMIT ${limit}`,
  );
  return rows.map((r) => r.collection_id);
}

/** A noted batch as taken: what was noted, and the transaction that wrote it (its rows' `xmin`). */
export interface TakenClickEvents {
  clicks: unknown;
  xmin: string;
}

/**
 * Takes and removes up to `limit` of a collection's noted batches, oldest first, skipping those
 * another process holds: the caller publishes them in the same transaction.
 */
export async function takeClickEvents(tx: Queryable, collectionId: string, limit: number): Promise<TakenClickEvents[]> {
  const { rows } = await tx.query<{ seq: string; clicks: unknown; xmin: string }>(sql`
    DELETE FROM link_click_events WHERE (collection_id, seq) IN (
      SELECT collection_id, seq FROM link_click_events WHERE collection_id = ${collectionId}
      ORDER BY seq LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING seq, clicks, xmin::text AS xmin`);
  return rows.sort((x, y) => Number(x.seq) - Number(y.seq)).map(({ clicks, xmin }) => ({ clicks, xmin }));
}

/** A stored click as its link.clicked event reads it back: the row, with its link. */
export type WrittenClick = Pick<
  ClickRow,
  'clicked_at' | 'ip_address' | 'user_agent' | 'referer' | 'country' | 'city' | 'device_type' | 'trigger' | 'click_id'
> & { link_id: string };

/**
 * The clicks one transaction (`xmin`) stored for these links between `from` and `to` (inclusive),
 * in time order. The primary key (collection, link, time) finds the span; the transaction id
 * leaves out clicks other batches stored for the same links at the same times.
 */
export async function clicksWrittenBy(
  db: Queryable,
  collectionId: string,
  q: { linkIds: string[]; from: Date; to: Date; xmin: string },
): Promise<WrittenClick[]> {
  const { rows } = await db.query<WrittenClick>(sql`
    SELECT link_id, clicked_at, ip_address, user_agent, referer, country, city, device_type, trigger, click_id
    FROM link_clicks
    WHERE collection_id = ${collectionId} AND link_id = ANY(${q.linkIds}::text[])
      AND clicked_at BETWEEN ${q.from} AND ${q.to} AND xmin = ${q.xmin}::xid
    ORDER BY clicked_at, id`);
  return rows;
}
