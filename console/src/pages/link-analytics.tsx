/**
 * Click analytics in the console, for one link (its page) or the whole collection (the links
 * list): clicks and unique visitors per day over a window, and a breakdown by any dimension the
 * API has (country to UTM parameters and trigger; by link for the collection), bots left out
 * unless asked for. The numbers come from `…/links/{linkId}/analytics` and `…/links/analytics`.
 */
import { useMemo, useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import { Chart, COLORS } from '../chart.tsx';
import { DataTable, Empty, ErrorNote, Figure, Loading, percent, useAsync } from '../ui.tsx';

type Analytics = Schemas['ClickAnalytics'];

const DIMENSIONS = [
  ['country', 'Country'],
  ['region', 'Region'],
  ['city', 'City'],
  ['device', 'Device'],
  ['browser', 'Browser'],
  ['os', 'OS'],
  ['referer', 'Referer (host)'],
  ['referer_url', 'Referer (address)'],
  ['utm_source', 'UTM source'],
  ['utm_medium', 'UTM medium'],
  ['utm_campaign', 'UTM campaign'],
  ['utm_term', 'UTM term'],
  ['utm_content', 'UTM content'],
  ['trigger', 'Trigger (link or QR)'],
] as const;
type Dimension = (typeof DIMENSIONS)[number][0];
/** What an empty value means, per dimension: no location found, no referer sent, or nothing. */
const blankOf = (d: string) =>
  ['country', 'region', 'city'].includes(d) ? '(unknown)' : d.startsWith('referer') ? '(direct)' : '(none)';
const WINDOWS = [7, 30, 90];

export function AnalyticsPanel({
  api,
  collectionId,
  linkId,
}: {
  api: ServiceClient;
  collectionId: string;
  /** One link's; absent: the collection's. */
  linkId?: string;
}) {
  const [groupBy, setGroupBy] = useState<Dimension | 'link' | 'route'>(linkId ? 'country' : 'link');
  const [days, setDays] = useState(30);
  const [includeBots, setIncludeBots] = useState(false);
  const [refreshed, setRefreshed] = useState(0);
  const analytics = useAsync(async (): Promise<Analytics> => {
    const to = new Date();
    const query = {
      from: new Date(to.getTime() - days * 86_400_000).toISOString(),
      to: to.toISOString(),
      interval: 'day' as const,
      limit: 10,
      includeBots,
    };
    if (linkId) {
      return api.GET('/admin/collection/{collectionId}/links/{linkId}/analytics', {
        params: {
          path: { collectionId, linkId },
          query: { ...query, groupBy: groupBy === 'link' ? undefined : groupBy },
        },
      });
    }
    return api.GET('/admin/collection/{collectionId}/links/analytics', {
      params: {
        path: { collectionId },
        query: { ...query, groupBy: groupBy === 'route' ? undefined : groupBy },
      },
    });
  }, [api, collectionId, linkId, groupBy, days, includeBots, refreshed]);
  const data = analytics.data;
  const spec = useMemo(
    () =>
      data && {
        kind: 'time' as const,
        x: data.series.map((b) => Date.parse(b.start) / 1000),
        stepSeconds: 86_400,
        series: [
          { label: 'Clicks', values: data.series.map((b) => b.clicks), color: COLORS.primary },
          { label: 'Unique visitors', values: data.series.map((b) => b.uniques), color: COLORS.secondary },
        ],
      },
    [data],
  );
  // A link's own breakdown by the way each click was sent (an A/B split's variants); the collection's by link.
  const dimensions: (readonly [Dimension | 'link' | 'route', string])[] = linkId
    ? [...DIMENSIONS, ['route', 'Route (rule or A/B variant)']]
    : [['link', 'Link'], ...DIMENSIONS];
  const label = dimensions.find(([d]) => d === groupBy)?.[1] ?? groupBy;
  const rows = data?.breakdown
    ? [
        ...data.breakdown.items,
        ...(data.breakdown.other.clicks > 0 ? [{ value: '\u0000other', ...data.breakdown.other }] : []),
      ]
    : [];
  const widest = Math.max(1, ...rows.map((r) => r.clicks));
  return (
    <section aria-labelledby={linkId ? 'analytics-title' : 'collection-analytics-title'}>
      <h2 id={linkId ? 'analytics-title' : 'collection-analytics-title'}>
        {linkId ? 'Analytics' : 'Analytics of every link'}
      </h2>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          Break down by
          <select
            name="groupBy"
            value={groupBy}
            onChange={(e) => setGroupBy(e.currentTarget.value as Dimension | 'link' | 'route')}
          >
            {dimensions.map(([d, name]) => (
              <option key={d} value={d}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Window
          <select name="days" value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            {WINDOWS.map((d) => (
              <option key={d} value={String(d)}>
                Last {d} days
              </option>
            ))}
          </select>
        </label>
        <label class="check">
          <input
            name="includeBots"
            type="checkbox"
            checked={includeBots}
            onChange={(e) => setIncludeBots(e.currentTarget.checked)}
          />
          Include bots
        </label>
        <button type="button" onClick={() => setRefreshed(refreshed + 1)} aria-label="Refresh the analytics">
          Refresh
        </button>
      </form>
      <ErrorNote error={analytics.error} doing="read the analytics" />
      {analytics.loading && !data ? <Loading what="the analytics" /> : null}
      {data && spec ? (
        <>
          <p class="total" aria-live="polite">
            <strong data-analytics-clicks={data.totals.clicks}>{data.totals.clicks}</strong>{' '}
            {data.totals.clicks === 1 ? 'click' : 'clicks'},{' '}
            <strong data-analytics-uniques={data.totals.uniques}>{data.totals.uniques}</strong> unique{' '}
            {data.totals.uniques === 1 ? 'visitor' : 'visitors'} (counted once a day)
            {includeBots ? ', bots included' : ''}
          </p>
          <Figure
            title="Clicks and unique visitors per day"
            chart={<Chart spec={spec} label={`Clicks and unique visitors per day: ${data.totals.clicks} clicks`} />}
            table={
              <DataTable
                caption="Clicks and unique visitors per day (UTC)"
                class="series"
                rows={data.series}
                rowKey={(b) => b.bucket}
                columns={[
                  { label: 'Day', value: (b) => b.bucket },
                  { label: 'Clicks', value: (b) => b.clicks, numeric: true },
                  { label: 'Unique visitors', value: (b) => b.uniques, numeric: true },
                ]}
              />
            }
          />
          {rows.length === 0 ? (
            <Empty>No clicks in this window.</Empty>
          ) : (
            <DataTable
              class="bars"
              caption={`Clicks by ${label.toLowerCase()}`}
              rows={rows}
              rowKey={(r) => r.value}
              columns={[
                {
                  label,
                  value: (r) =>
                    r.value === '\u0000other' ? <em>other</em> : r.value === '' ? <em>{blankOf(groupBy)}</em> : r.value,
                },
                { label: 'Clicks', value: (r) => r.clicks, numeric: true },
                { label: 'Unique visitors', value: (r) => r.uniques, numeric: true },
                {
                  label: 'Share',
                  value: (r) => percent(r.clicks / Math.max(1, data.totals.clicks)),
                  numeric: true,
                },
                {
                  label: 'Bar',
                  value: (r) => (
                    <span class="bar" aria-hidden="true" style={{ width: `${(100 * r.clicks) / widest}%` }} />
                  ),
                },
              ]}
            />
          )}
          {['country', 'region', 'city'].includes(groupBy) && rows.some((r) => r.value === '') ? (
            <p class="meta geoip-hint">
              (unknown): no location for these clicks. Locations come from a GeoIP database (set <code>GEOIP_DB</code>{' '}
              to a GeoLite2 or GeoIP2 City <code>.mmdb</code> file) or from the geo headers of a proxy listed in{' '}
              <code>TRUSTED_PROXIES</code> (docs/links.md).
            </p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
