/**
 * A funnel's conversion by entry day or week over the period shown, and the previous period of
 * the same length beside it (its buckets in the same positions), as two lines and a table.
 */
import { useMemo, useState } from 'preact/hooks';
import type { Schemas } from '../../../clients/typescript/src/index.ts';
import { Chart, COLORS } from '../chart.tsx';
import { DataTable, ErrorNote, Figure, Loading, percent, useAsync } from '../ui.tsx';
import { trendFields } from './funnel-options.tsx';
import { count, type FunnelScope } from './funnel-report.tsx';

type Bucket = Schemas['FunnelTrendsResponse']['buckets'][number];
const dayOf = (iso: string) => iso.slice(0, 10);
/** A bucket's conversion in percent; none (a gap in the line) when nobody entered in it. */
const rateOf = (b: Bucket | undefined) => (b && b.entered > 0 ? Math.round(b.conversionRate * 1000) / 10 : null);

export function Trends({ api, collectionId, journeyId, from, to, settings }: FunnelScope) {
  const [interval, pickInterval] = useState<'day' | 'week'>('day');
  const trends = useAsync(
    () =>
      api.POST('/admin/collection/{collectionId}/journeys.analytics/{journeyId}/trends', {
        params: { path: { collectionId, journeyId } },
        body: { periodStart: from, periodEnd: to, interval, compare: true, ...trendFields(settings) },
      }),
    [api, collectionId, journeyId, from, to, settings, interval],
  );
  const buckets = trends.data?.buckets ?? [];
  const previous = trends.data?.previous?.buckets ?? [];
  const rows = buckets.map((b, i) => ({ b, p: previous[i] }));
  const spec = useMemo(
    () => ({
      kind: 'category' as const,
      labels: buckets.map((b) =>
        interval === 'week' ? `week of ${dayOf(b.start).slice(5)}` : dayOf(b.start).slice(5),
      ),
      xLabel: interval === 'week' ? 'Week (UTC, from Monday)' : 'Day (UTC)',
      unit: '%',
      series: [
        { label: 'This period', values: buckets.map(rateOf), color: COLORS.primary, line: true },
        {
          label: 'Previous period',
          values: rows.map((r) => rateOf(r.p)),
          color: COLORS.muted,
          line: true,
          dash: [6, 4],
        },
      ],
    }),
    [trends.data],
  );
  return (
    <section aria-labelledby="trends-title">
      <h3 id="trends-title">Conversion over time</h3>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          By entry
          <select
            name="interval"
            value={interval}
            onChange={(e) => pickInterval(e.currentTarget.value as 'day' | 'week')}
          >
            <option value="day">day</option>
            <option value="week">week</option>
          </select>
        </label>
      </form>
      <ErrorNote error={trends.error} doing="read the trend" />
      {trends.loading && !trends.data ? <Loading what="the trend" /> : null}
      {trends.data ? (
        <div data-trend-buckets={buckets.length} data-previous-buckets={previous.length}>
          <p class="meta">
            This period: {dayOf(trends.data.periodStart)} to {dayOf(trends.data.periodEnd)} (excluded)
            {trends.data.previous
              ? `; the previous: ${dayOf(trends.data.previous.periodStart)} to ${dayOf(trends.data.previous.periodEnd)} (excluded)`
              : ''}
            . A recipient counts in the {interval} it entered; converted = completed the last step.
          </p>
          <Figure
            title="Conversion by entry, this period and the previous one"
            chart={
              <Chart
                spec={spec}
                label={`Conversion by ${interval}: ${rows
                  .map(
                    (r) =>
                      `${dayOf(r.b.start)} ${percent(r.b.conversionRate)}, before ${r.p ? percent(r.p.conversionRate) : '—'}`,
                  )
                  .join('; ')}`}
              />
            }
            table={
              <DataTable<{ b: Bucket; p: Bucket | undefined }>
                caption="Conversion by entry"
                rows={rows}
                rowKey={(r) => r.b.start}
                columns={[
                  { label: interval === 'week' ? 'Week of' : 'Day', value: (r) => dayOf(r.b.start) },
                  { label: 'Entered', value: (r) => count(r.b.entered), numeric: true },
                  { label: 'Converted', value: (r) => count(r.b.completed), numeric: true },
                  { label: 'Conversion', value: (r) => percent(r.b.conversionRate), numeric: true },
                  { label: 'Previous: from', value: (r) => (r.p ? dayOf(r.p.start) : '—') },
                  { label: 'Previous: entered', value: (r) => count(r.p?.entered ?? 0), numeric: true },
                  { label: 'Previous: converted', value: (r) => count(r.p?.completed ?? 0), numeric: true },
                  { label: 'Previous: conversion', value: (r) => percent(r.p?.conversionRate ?? 0), numeric: true },
                ]}
              />
            }
          />
        </div>
      ) : null}
    </section>
  );
}
