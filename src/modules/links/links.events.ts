/**
 * What the links module publishes (its part of the event catalogue, docs/webhooks.md), and
 * the short address its events carry. Each event is about one link: its scope is the link,
 * so a registration's `filters.linkIds` narrows to it.
 */
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';
import { Closed, Nullable, Timestamp } from '../../platform/schemas.ts';

export type { EventPublisher } from '../../platform/events.ts';

/**
 * The short address of a code: on the service's public address (BASE_PATH included) under
 * /l/, or at the root of the link's custom domain, over https.
 */
export const shortUrl = (publicBaseUrl: string, code: string, domain: string | null = null): string =>
  domain === null ? `${publicBaseUrl}/l/${encodeURIComponent(code)}` : `https://${domain}/${encodeURIComponent(code)}`;

const linkFields = {
  link_id: Type.String(),
  short_url: Type.String({
    description:
      'The short address: on the link’s custom domain (https://<domain>/<code>), else the service’s public address',
  }),
  destination_url: Type.String(),
  code: Type.String(),
  domain: Nullable(Type.String({ description: 'The link’s custom domain; null: the deployment’s own' })),
  title: Nullable(Type.String()),
  tags: Type.Array(Type.String()),
  expires_at: Nullable(Timestamp),
};
const linkExample = {
  link_id: 'lnk_Jm1q9Zx0aB3kR7tW',
  short_url: 'https://sho.rt/l/aZ3k9Qp',
  destination_url: 'https://example.com/spring',
  code: 'aZ3k9Qp',
  domain: null,
  title: 'Spring sale',
  tags: ['sale'],
  expires_at: null,
};
const filterable = ['linkId'] as const;

/** The default thresholds: 10, 100, 1,000 and every further power of ten. */
const DEFAULT_FIRST_MILESTONE = 10;

/**
 * The thresholds a counter crossed moving from `before` to `after` (before < t ≤ after): the
 * link's own list, or the powers of ten from 10.
 */
export function milestonesCrossed(before: number, after: number, own: readonly number[] | null): number[] {
  if (own) return own.filter((t) => t > before && t <= after).sort((a, b) => a - b);
  const out: number[] = [];
  for (let t = DEFAULT_FIRST_MILESTONE; t <= after; t *= 10) if (t > before) out.push(t);
  return out;
}

export const linkEvents = [
  defineEvent({
    type: 'link.created',
    description: 'A short link was created. `created_by` is the admin key (or user) that created it.',
    data: Closed({ ...linkFields, created_by: Nullable(Type.String()) }),
    example: { ...linkExample, created_by: 'key_8HkQ2mXo1PzR4vTe' },
    filterable,
  }),
  defineEvent({
    type: 'link.updated',
    description:
      'A short link was changed. `changed_fields` names what changed (among code, destination_url, title, tags, expires_at, and the routing: rules, variants, pass_query, expired_url, password) and `previous` holds the values before of the first five.',
    data: Closed({
      ...linkFields,
      changed_fields: Type.Array(Type.String()),
      previous: Type.Record(Type.String(), Type.Unknown()),
    }),
    example: {
      ...linkExample,
      destination_url: 'https://example.com/summer',
      changed_fields: ['destination_url'],
      previous: { destination_url: 'https://example.com/spring' },
    },
    filterable,
  }),
  defineEvent({
    type: 'link.deleted',
    description: 'A short link was deleted; its code stays reserved to the collection.',
    data: Closed({ ...linkFields, deleted_at: Nullable(Timestamp) }),
    example: { ...linkExample, deleted_at: '2026-11-22T03:00:00.000Z' },
    filterable,
  }),
  defineEvent({
    type: 'link.clicked',
    description:
      'Someone followed a short link (a GET of /l/{code}, or /{code} on its custom domain; a HEAD is not a click); `click.trigger` is `qr` when the address came from its QR code. Sent a moment after the visit, once the click is stored (CLICK_FLUSH_MS).',
    data: Closed({
      link_id: Type.String(),
      short_url: Type.String(),
      destination_url: Type.String(),
      clicked_at: Timestamp,
      click: Closed({
        ip_address: Nullable(Type.String()),
        user_agent: Nullable(Type.String()),
        referer: Nullable(Type.String()),
        country: Nullable(Type.String()),
        city: Nullable(Type.String()),
        device_type: Nullable(Type.String()),
        trigger: Type.Optional(
          Type.String({ description: 'link (the short address followed) | qr (its QR code scanned)' }),
        ),
        click_id: Type.Optional(
          Nullable(
            Type.String({ description: 'The click id appended to the destination (trackConversions), else null' }),
          ),
        ),
      }),
    }),
    example: {
      link_id: 'lnk_Jm1q9Zx0aB3kR7tW',
      short_url: 'https://sho.rt/l/aZ3k9Qp',
      destination_url: 'https://example.com/summer',
      clicked_at: '2026-11-22T03:01:02.345Z',
      click: {
        ip_address: '203.0.113.9',
        user_agent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)',
        referer: 'https://news.example/post',
        country: 'DE',
        city: 'Munich',
        device_type: 'mobile',
        trigger: 'qr',
        click_id: null,
      },
    },
    filterable,
  }),
  defineEvent({
    type: 'link.clicks.milestone',
    description:
      'A link’s click count reached a threshold: 10, 100, 1,000 and every further power of ten, or the link’s own `clickMilestones`. Sent once per threshold, in the transaction that stored the click that reached it; `clicks` is the count after that batch of clicks (it may pass the threshold by a few under load).',
    data: Closed({
      link_id: Type.String(),
      short_url: Type.String(),
      milestone: Type.Integer({ description: 'The threshold reached' }),
      clicks: Type.Integer({ description: 'The link’s click count when it was reached' }),
      reached_at: Timestamp,
    }),
    example: {
      link_id: 'lnk_Jm1q9Zx0aB3kR7tW',
      short_url: 'https://sho.rt/l/aZ3k9Qp',
      milestone: 100,
      clicks: 100,
      reached_at: '2026-11-22T03:01:02.345Z',
    },
    filterable,
  }),
];
