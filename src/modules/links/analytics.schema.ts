/** Schemas of click analytics and the CSV export of clicks (analytics.routes.ts). */
import { Type } from 'typebox';
import { Closed, Instant, Timestamp } from '../../platform/schemas.ts';
import { GROUP_BY, LINK_GROUP_BY, VALUE_MAX } from './analytics.dimensions.ts';

/** The series' buckets at most, whatever the interval (the aggregates' bound). */
export const MAX_BUCKETS = 1000;
/** The longest window, in days: two years and a day, whatever the interval. */
export const MAX_WINDOW_DAYS = 732;
/** Values in a breakdown at most. */
export const MAX_LIMIT = 100;

const Interval = Type.Union([Type.Literal('hour'), Type.Literal('day'), Type.Literal('week'), Type.Literal('month')], {
  default: 'day',
  description: 'Bucket size of the series, in UTC: hour, day, week (from Monday) or month',
});

const literals = (names: readonly string[]) => names.map((n) => Type.Literal(n));

const window = {
  from: Type.Optional(
    Instant(
      'Inclusive start of the window; default `to` minus 48 hours (hour), 30 days (day), 12 weeks (week) or a year (month)',
    ),
  ),
  to: Type.Optional(Instant('Exclusive end of the window; default now', 'end')),
  interval: Type.Optional(Interval),
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIMIT,
      default: 10,
      description: 'Values in the breakdown before `other`',
    }),
  ),
  includeBots: Type.Optional(
    Type.Boolean({
      default: false,
      description: 'Count the clicks of bots (crawlers, previewers, HTTP libraries) too',
    }),
  ),
};

/**
 * A link's analytics may be narrowed to the clicks with given values (`country=DE&device=mobile`):
 * one value per dimension, every one given must match (as a breakdown names it: `referer` is the
 * host, `device` the device type). The collection's analytics read a rollup counted one dimension
 * at a time, which cannot be narrowed by another: filters are a link's only.
 */
const filters = Object.fromEntries(
  LINK_GROUP_BY.map((g) => [
    g,
    Type.Optional(Type.String({ maxLength: VALUE_MAX, description: `Only the clicks whose ${g} is this value` })),
  ]),
) as { [K in (typeof LINK_GROUP_BY)[number]]: ReturnType<typeof Type.Optional<ReturnType<typeof Type.String>>> };

export const LinkAnalyticsQuery = Closed({
  ...window,
  ...filters,
  groupBy: Type.Optional(
    Type.Union(literals(LINK_GROUP_BY), {
      description:
        'The dimension of the breakdown (none: totals and series only); `route`: by the way of the link each click was sent (destination, rule:<i>, variant:<i>)',
    }),
  ),
});
export type LinkAnalyticsQuery = Type.Static<typeof LinkAnalyticsQuery>;

export const CollectionAnalyticsQuery = Closed({
  ...window,
  groupBy: Type.Optional(
    Type.Union(literals(GROUP_BY), {
      description: 'The dimension of the breakdown; `link`: by link id (none: totals and series only)',
    }),
  ),
});
export type CollectionAnalyticsQuery = Type.Static<typeof CollectionAnalyticsQuery>;

const Counts = {
  clicks: Type.Integer(),
  uniques: Type.Integer({ description: 'Visitors counted once per UTC day, at their first click of the day' }),
};

export const ClickAnalytics = Closed(
  {
    linkId: Type.Optional(Type.String({ description: 'The link (a link’s analytics only)' })),
    from: Timestamp,
    to: Timestamp,
    interval: Type.String({ description: 'hour | day | week | month' }),
    includeBots: Type.Boolean(),
    totals: Closed(Counts),
    series: Type.Array(
      Closed({
        bucket: Type.String({
          description: '`2026-02-10T14:00:00Z` (hour), `2026-02-10` (day), `2026-W07` (ISO week), `2026-02` (month)',
        }),
        start: Timestamp,
        ...Counts,
      }),
      { description: 'Every bucket of the window in order, empty ones included (0)' },
    ),
    breakdown: Type.Optional(
      Closed(
        {
          groupBy: Type.String(),
          items: Type.Array(Closed({ value: Type.String(), ...Counts }), {
            description: 'The `limit` values with the most clicks, most first (ties by value); "" is unknown or none',
          }),
          other: Closed(Counts, { description: 'The clicks of every value beyond the listed ones, summed' }),
        },
        { description: 'With `groupBy`' },
      ),
    ),
  },
  { $id: 'ClickAnalytics' },
);
export type ClickAnalytics = Type.Static<typeof ClickAnalytics>;

export const ClickExportQuery = Closed({
  from: Type.Optional(Instant('Inclusive start of the window (default: the first click)')),
  to: Type.Optional(Instant('Exclusive end of the window (default: none)', 'end')),
  includeBots: Type.Optional(Type.Boolean({ default: false, description: 'Include the clicks of bots' })),
});
export type ClickExportQuery = Type.Static<typeof ClickExportQuery>;

/** The CSV's columns, in order. */
export const EXPORT_COLUMNS = [
  'id',
  'linkId',
  'clickedAt',
  'ipAddress',
  'userAgent',
  'referer',
  'country',
  'region',
  'city',
  'deviceType',
  'browser',
  'os',
  'bot',
  'trigger',
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_term',
  'utm_content',
  'route',
] as const;
