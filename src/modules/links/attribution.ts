/**
 * Attribution (docs/links.md, "Attribution"): a link with `trackConversions` sends every visitor
 * to its destination with a click id (`pl_cid=<id>`); the destination's page sends it back with
 * its interaction events (`clickId`); those events are the link's conversions, counted here by
 * interaction and outcome, and a journey may begin with the link's clicks (journeys module).
 *
 * The click id is made by the redirect's process (a random UUID, 122 bits, as 32 hex digits)
 * and stored with the click (link_clicks.click_id): the redirect costs no extra read or write.
 * Events and clicks meet at query time on (collection, click id), both sides indexed (0600), so
 * an event sent before its click's batch was stored still counts once it is.
 */
import { randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import type { Queryable } from '../../db/index.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { Closed, Instant, Nullable, Timestamp } from '../../platform/schemas.ts';
import { conversionRows } from './attribution.repository.ts';
import * as repo from './links.repository.ts';

/** The query parameter the destination receives the click id in. */
export const CLICK_ID_PARAM = 'pl_cid';
/** The query parameter that marks a visit of the QR code's address (qr.ts). */
export const QR_PARAM = 'qr';

/** A new click id: unguessable (122 random bits), URL-safe, 32 characters. */
export const newClickId = (): string => randomUUID().replaceAll('-', '');

/**
 * The destination with the click id appended to its query (before any fragment). Parameters
 * already there are kept as they are, a `pl_cid` among them too: the new one comes last.
 */
export function withClickId(destination: string, clickId: string): string {
  const hash = destination.indexOf('#');
  const base = hash < 0 ? destination : destination.slice(0, hash);
  const fragment = hash < 0 ? '' : destination.slice(hash);
  const sep = base.includes('?') ? (base.endsWith('?') || base.endsWith('&') ? '' : '&') : '?';
  return `${base}${sep}${CLICK_ID_PARAM}=${clickId}${fragment}`;
}

/**
 * What led to a visit: `qr` when the short address carries the QR code's marker (`?qr=1`),
 * else `link`. The marker is the short address's own: whatever passes the visit's query on to
 * the destination leaves `qr` out (QR_PARAM).
 */
export function visitTrigger(query: unknown): 'qr' | 'link' {
  const q = query as Record<string, unknown> | undefined;
  return q?.[QR_PARAM] === '1' ? 'qr' : 'link';
}

// --- conversions -------------------------------------------------------------------------------

/** The window a conversions request without `from` covers. */
const DEFAULT_WINDOW_MS = 30 * 86_400_000;

export const ConversionsQuery = Closed({
  from: Type.Optional(Instant('Inclusive start of the window (the events’ time); default `to` minus 30 days')),
  to: Type.Optional(Instant('Exclusive end of the window; default the next whole minute (now included)', 'end')),
});
export type ConversionsQuery = Type.Static<typeof ConversionsQuery>;

export const LinkConversionsQuery = Closed({
  ...ConversionsQuery.properties,
  groupBy: Type.Optional(
    Type.Literal('route', {
      description:
        'route: each item is also split by the way of the link its click was sent (destination, rule:<i>, variant:<i>): an A/B split’s conversions',
    }),
  ),
});
export type LinkConversionsQuery = Type.Static<typeof LinkConversionsQuery>;

const ConversionCount = {
  interactionId: Type.String(),
  outcome: Nullable(Type.String()),
  count: Type.Integer({ description: 'Events of this interaction and outcome carrying a click id of the link' }),
  clicks: Type.Integer({ description: 'Distinct clicks (click ids) among them' }),
};

export const LinkConversions = Closed(
  {
    linkId: Type.String(),
    from: Timestamp,
    to: Timestamp,
    total: Type.Integer({ description: 'Events in the window carrying a click id of the link' }),
    items: Type.Array(
      Closed({
        ...ConversionCount,
        route: Type.Optional(
          Type.String({
            description:
              'With groupBy=route: destination, rule:<i> or variant:<i> (empty for clicks stored before routes were kept)',
          }),
        ),
      }),
      { description: 'By interaction and outcome (and route with groupBy=route), most first' },
    ),
  },
  { $id: 'LinkConversions' },
);
export type LinkConversions = Type.Static<typeof LinkConversions>;

export const CollectionConversions = Closed(
  {
    from: Timestamp,
    to: Timestamp,
    total: Type.Integer({ description: 'Events in the window carrying a click id of any of the collection’s links' }),
    items: Type.Array(Closed({ linkId: Type.String(), ...ConversionCount }), {
      description: 'By link, interaction and outcome, most first (at most 1000 rows)',
    }),
  },
  { $id: 'CollectionConversions' },
);
export type CollectionConversions = Type.Static<typeof CollectionConversions>;

/**
 * The window asked for. Without `to` it ends at the next whole minute: the events of this minute
 * count, and two requests a moment apart answer the same window.
 */
function conversionWindow(q: ConversionsQuery, now: Date): { from: Date; to: Date } {
  const to = q.to ? new Date(q.to) : new Date(Math.ceil((now.getTime() + 1) / 60_000) * 60_000);
  const from = q.from ? new Date(q.from) : new Date(to.getTime() - DEFAULT_WINDOW_MS);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) throw badRequest('from and to must be timestamps');
  if (from.getTime() >= to.getTime()) throw badRequest('from must be before to', { field: 'from' });
  return { from, to };
}

export async function linkConversions(
  db: Queryable,
  collectionId: string,
  linkId: string,
  q: LinkConversionsQuery,
  now = new Date(),
): Promise<LinkConversions> {
  const w = conversionWindow(q, now);
  if (!(await repo.findLink(db, collectionId, linkId))) throw notFound('Link');
  const byRoute = q.groupBy === 'route';
  const rows = await conversionRows(db, collectionId, { linkId, byRoute, ...w });
  const items = rows.map((r) => ({
    interactionId: r.interaction_id,
    outcome: r.outcome,
    count: r.n,
    clicks: r.clicks,
    ...(byRoute ? { route: r.route ?? '' } : {}),
  }));
  return {
    linkId,
    from: w.from.toISOString(),
    to: w.to.toISOString(),
    total: items.reduce((n, i) => n + i.count, 0),
    items,
  };
}

export async function collectionConversions(
  db: Queryable,
  collectionId: string,
  q: ConversionsQuery,
  now = new Date(),
): Promise<CollectionConversions> {
  const w = conversionWindow(q, now);
  const rows = await conversionRows(db, collectionId, w);
  const items = rows.map((r) => ({
    linkId: r.link_id,
    interactionId: r.interaction_id,
    outcome: r.outcome,
    count: r.n,
    clicks: r.clicks,
  }));
  return {
    from: w.from.toISOString(),
    to: w.to.toISOString(),
    total: items.reduce((n, i) => n + i.count, 0),
    items,
  };
}
