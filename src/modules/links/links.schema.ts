import { Type } from 'typebox';
import { IdParam, inCollection } from '../../platform/routes.ts';
import { Closed, Instant, Nullable, Page, pageQuery, Timestamp } from '../../platform/schemas.ts';
import { RoutingInput, RoutingOutput } from './routing.schema.ts';

export const CODE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{2,63}$';
const Code = Type.String({
  pattern: CODE_PATTERN,
  maxLength: 64,
  description: 'Custom code: 3-64 letters, digits, "_" or "-", starting with a letter or digit; unique per deployment',
});
const Destination = Type.String({ minLength: 1, maxLength: 2048, description: 'Destination address, http or https' });
const Title = Type.String({ maxLength: 300 });
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 20, uniqueItems: true });
/** Thresholds of `link.clicks.milestone` events (links.events.ts). */
export const MILESTONES_MAX = 20;
const ClickMilestones = Type.Array(Type.Integer({ minimum: 1, maximum: 1_000_000_000_000 }), {
  minItems: 1,
  maxItems: MILESTONES_MAX,
  uniqueItems: true,
  description:
    'Click counts at which a `link.clicks.milestone` event is sent; without it (or null) 10, 100, 1,000 and every further power of ten',
});

/** A link's custom domain and conversion tracking (issue 28; domains.ts, attribution.ts). */
const LinkDomainField = Type.String({
  minLength: 1,
  maxLength: 253,
  description:
    'A verified domain of the collection (…/domains) the link lives on: its address is https://<domain>/<code>. Absent or null: the deployment’s own (PUBLIC_BASE_URL)',
});
const TrackConversions = Type.Boolean({
  description: 'Append a click id (`pl_cid`) to the destination on every visit, for attribution (default false)',
});

export const LinkParams = inCollection({ linkId: IdParam(100) });
export { CollectionParams } from '../../platform/routes.ts';
export const RedirectParams = Type.Object({ code: IdParam(64) });

export const CreateLinkBody = Closed(
  {
    url: Destination,
    code: Type.Optional(Code),
    title: Type.Optional(Title),
    tags: Type.Optional(Tags),
    expiresAt: Type.Optional(Instant('From this time on the short address answers 410', 'end')),
    clickMilestones: Type.Optional(ClickMilestones),
    domain: Type.Optional(LinkDomainField),
    trackConversions: Type.Optional(TrackConversions),
    // Routing: rules, variants, passQuery, expiredUrl, password (routing.schema.ts).
    ...RoutingInput,
  },
  { $id: 'CreateLinkBody' },
);
export type CreateLinkBody = Type.Static<typeof CreateLinkBody>;

export const UpdateLinkBody = Closed(
  {
    url: Type.Optional(Destination),
    code: Type.Optional(Code),
    title: Type.Optional(Nullable(Title)),
    tags: Type.Optional(Tags),
    expiresAt: Type.Optional(
      Nullable(Instant('From this time on the short address answers 410; null removes the expiry', 'end')),
    ),
    clickMilestones: Type.Optional(Nullable(ClickMilestones)),
    domain: Type.Optional(Nullable(LinkDomainField)),
    trackConversions: Type.Optional(TrackConversions),
    ...RoutingInput,
  },
  { $id: 'UpdateLinkBody', minProperties: 1 },
);
export type UpdateLinkBody = Type.Static<typeof UpdateLinkBody>;

export const Link = Closed(
  {
    id: Type.String(),
    code: Type.String(),
    shortUrl: Type.String(),
    destinationUrl: Type.String(),
    title: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    expiresAt: Nullable(Timestamp),
    clicks: Type.Integer(),
    clickMilestones: Nullable(Type.Array(Type.Integer(), { description: 'Its own milestones; null: the default' })),
    createdBy: Type.String(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    domain: Nullable(Type.String({ description: 'The custom domain it lives on; null: the deployment’s own' })),
    trackConversions: Type.Boolean(),
    ...RoutingOutput,
  },
  { $id: 'Link' },
);
export type Link = Type.Static<typeof Link>;

export const LinkListQuery = Closed({
  q: Type.Optional(Type.String({ maxLength: 200, description: 'Substring of the code, title or destination' })),
  tag: Type.Optional(Type.String({ maxLength: 50 })),
  ...pageQuery(100, 20, 100_000),
});
export type LinkListQuery = Type.Static<typeof LinkListQuery>;

export const LinkPage = Page(Link, { $id: 'LinkPage', total: true });

export const Click = Closed(
  {
    id: Type.Integer(),
    clickedAt: Timestamp,
    ipAddress: Type.String(),
    userAgent: Type.String(),
    referer: Type.String(),
    country: Type.String({ description: 'ISO 3166-1 alpha-2, or empty when unknown' }),
    city: Type.String(),
    deviceType: Type.String({
      description: 'desktop | mobile | tablet | smarttv | wearable | console | bot | ... or empty',
    }),
    trigger: Type.String({ description: 'link (the short address followed) | qr (its QR code scanned)' }),
    clickId: Nullable(Type.String({ description: 'The click id given to the destination (trackConversions)' })),
    region: Type.String({
      description: 'The subdivision (ISO 3166-2 code or as the GeoIP database or proxy names it), or empty',
    }),
    browser: Type.String({ description: 'From the user agent, or empty' }),
    os: Type.String({ description: 'From the user agent, or empty' }),
    utmSource: Type.String({ description: 'The short address’s utm_source, or empty' }),
    utmMedium: Type.String(),
    utmCampaign: Type.String(),
    utmTerm: Type.String(),
    utmContent: Type.String(),
    route: Type.String({
      description:
        'The way of the link the click was sent: destination, rule:<i> (rules[i] matched) or variant:<i> (variants[i] drawn); empty for clicks stored before routes were kept',
    }),
  },
  { $id: 'Click' },
);
export type Click = Type.Static<typeof Click>;

export const ClickListQuery = Closed({
  from: Type.Optional(Instant('Inclusive start of the window')),
  to: Type.Optional(Instant('Exclusive end of the window', 'end')),
  ...pageQuery(500, 50, 1_000_000),
});
export type ClickListQuery = Type.Static<typeof ClickListQuery>;

export const ClickPage = Page(Click, { $id: 'ClickPage', total: true });

/** Longest window of a stats request, in buckets (the same bound as the aggregates' 1000). */
export const STATS_MAX_BUCKETS = 1000;

export const ClickStatsQuery = Closed({
  interval: Type.Optional(
    Type.Union([Type.Literal('hour'), Type.Literal('day')], {
      default: 'day',
      description: 'Bucket size of the series, in UTC',
    }),
  ),
  from: Type.Optional(Instant('Inclusive start of the window; default `to` minus 48 hours (hour) or 30 days (day)')),
  to: Type.Optional(Instant('Exclusive end of the window; default now', 'end')),
  top: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'Entries per breakdown before "other"' }),
  ),
});
export type ClickStatsQuery = Type.Static<typeof ClickStatsQuery>;

const Breakdown = (description: string) =>
  Closed(
    {
      items: Type.Array(Closed({ value: Type.String(), count: Type.Integer() }), {
        description:
          'The `top` values with the most clicks, most first; an empty value is unknown (no referer: a direct visit)',
      }),
      other: Type.Integer({ description: 'Clicks of every value beyond the top ones' }),
    },
    { description },
  );

export const ClickStats = Closed(
  {
    linkId: Type.String(),
    interval: Type.String({ description: 'hour | day' }),
    from: Timestamp,
    to: Timestamp,
    total: Type.Integer({ description: 'Clicks in the window' }),
    series: Type.Array(
      Closed({
        bucket: Type.String({
          description:
            'The bucket, labelled as aggregates label them: `2026-02-10T14:00:00Z` (hour), `2026-02-10` (day)',
        }),
        start: Timestamp,
        count: Type.Integer(),
      }),
      { description: 'Every bucket of the window in order, empty ones included (count 0)' },
    ),
    countries: Breakdown('By country (ISO 3166-1 alpha-2)'),
    deviceTypes: Breakdown('By device type (desktop, mobile, tablet, bot, …)'),
    referers: Breakdown('By the referer’s host name (`news.example`)'),
  },
  { $id: 'ClickStats' },
);
export type ClickStats = Type.Static<typeof ClickStats>;
