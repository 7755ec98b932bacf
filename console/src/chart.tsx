/**
 * Charts with uPlot (about 50 KB, 22 KB gzipped; canvas, fast with thousands of points),
 * loaded on first use so the first page (sign-in) does not carry it. Two shapes cover the
 * console: bars over time (clicks per hour or day, cases per week) and bars per category
 * (funnel steps, statuses, priorities), with one series drawn over another for "of which";
 * a series may be a line instead (a funnel's conversion trend beside the previous period's).
 */

import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlot from 'uplot';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  color: string;
  /** Bar width as a share of a slot; a narrower series drawn later sits inside a wider one. */
  width?: number;
  /** Drawn as a line with points instead of bars (a trend beside another); `dash` for a dashed one. */
  line?: boolean;
  dash?: number[];
}

export type ChartSpec =
  | {
      kind: 'time';
      /** Each bucket's start, in seconds. */
      x: number[];
      stepSeconds: number;
      series: ChartSeries[];
      /**
       * The time axis, in seconds: the window asked for, so that a window with one busy bucket
       * still reads as that window. Default: the data's first and last bucket.
       */
      window?: [number, number];
    }
  | {
      kind: 'category';
      labels: string[];
      xLabel: string;
      series: ChartSeries[];
      /** Written after the count axis's numbers (`%` for rates); default none. */
      unit?: string;
    };

export const COLORS = { primary: '#2563eb', secondary: '#16a34a', muted: '#94a3b8' };

let library: Promise<typeof uPlot> | undefined;
const loadLibrary = () => {
  library ??= Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([m]) => m.default);
  return library;
};

/** Whole numbers only on the count axis: a click or a case is never 2.5. */
const COUNT_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7];

function optionsFor(U: typeof uPlot, spec: ChartSpec, width: number): uPlot.Options {
  const bars = (size: number) => U.paths.bars!({ size: [size, 80], gap: 1 });
  const series: uPlot.Series[] = [
    spec.kind === 'time'
      ? {
          label: 'From (UTC)',
          value: (_u, v) =>
            v === null ? '' : new Date((v - spec.stepSeconds / 2) * 1000).toISOString().slice(0, 16).replace('T', ' '),
        }
      : { label: spec.xLabel, value: (_u, i) => (i === null ? '' : (spec.labels[i] ?? '')) },
    ...spec.series.map((s) =>
      s.line
        ? { label: s.label, stroke: s.color, width: 2, dash: s.dash, points: { show: true, size: 6, fill: s.color } }
        : {
            label: s.label,
            stroke: s.color,
            fill: `${s.color}cc`,
            width: 0,
            paths: bars(s.width ?? 0.7),
            points: { show: false },
          },
    ),
  ];
  const unit = spec.kind === 'category' && spec.unit ? ` ${spec.unit}` : '';
  const yAxis: uPlot.Axis = {
    incrs: COUNT_STEPS,
    values: (_u, splits) => splits.map((v) => `${v.toLocaleString('en')}${unit}`),
  };
  // uPlot's own legend shows "--" until hovered and its time axis reads 12-hour: the legend
  // is drawn under the chart instead (Legend), and the axis reads 24-hour UTC like the tables.
  const legend = { show: false };
  if (spec.kind === 'time') {
    const [first, last] = spec.window ?? [spec.x[0] ?? 0, (spec.x.at(-1) ?? 0) + spec.stepSeconds];
    return {
      width,
      height: 240,
      series,
      // Every time the console shows is UTC, as the service's buckets are.
      tzDate: (ts) => U.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: {
        x: { time: true, range: () => [first, last] },
        y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
      },
      axes: [
        { label: 'UTC', labelSize: 16, values: (_u, splits, _i, _space, step) => splits.map((t) => utcTick(t, step)) },
        yAxis,
      ],
      legend,
    };
  }
  const n = spec.labels.length;
  return {
    width,
    height: 240,
    series,
    legend,
    scales: {
      x: { time: false, range: () => [-0.5, n - 0.5] },
      y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
    },
    axes: [
      {
        splits: () => spec.labels.map((_, i) => i),
        values: (_u, splits) => splits.map((i) => spec.labels[i] ?? ''),
        gap: 6,
      },
      yAxis,
    ],
  };
}

const two = (n: number) => String(n).padStart(2, '0');

/**
 * A time axis tick in UTC, 24-hour: the hour where ticks are hours apart (the day, MM-DD, at
 * midnight), the day where they are days apart.
 */
export function utcTick(seconds: number, step: number): string {
  const d = new Date(seconds * 1000);
  const dayOf = `${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
  if (step >= 86_400) return dayOf;
  const hm = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}`;
  return hm === '00:00' ? dayOf : hm;
}

function dataFor(spec: ChartSpec): uPlot.AlignedData {
  // A bar is drawn centred on its x: a bucket's bar sits in the middle of the bucket.
  const x = spec.kind === 'time' ? spec.x.map((t) => t + spec.stepSeconds / 2) : spec.labels.map((_, i) => i);
  return [x, ...spec.series.map((s) => s.values)];
}

/**
 * The chart itself. Its numbers are in the table next to it (Figure), so the canvas is
 * hidden from assistive technology; `label` says what it shows.
 */
export function Chart({ spec, label }: { spec: ChartSpec; label: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState<string | undefined>();
  useEffect(() => {
    let plot: uPlot | undefined;
    let observer: ResizeObserver | undefined;
    let gone = false;
    loadLibrary().then(
      (U) => {
        const el = host.current;
        if (gone || !el) return;
        const width = () => Math.max(280, el.clientWidth);
        plot = new U(optionsFor(U, spec, width()), dataFor(spec), el);
        el.dataset.drawn = 'true';
        observer = new ResizeObserver(() => plot?.setSize({ width: width(), height: 240 }));
        observer.observe(el);
      },
      (err: unknown) => setFailed(err instanceof Error ? err.message : String(err)),
    );
    return () => {
      gone = true;
      observer?.disconnect();
      plot?.destroy();
    };
  }, [spec]);
  if (failed) return <p class="error">The chart could not be drawn ({failed}); the table below has its data.</p>;
  return (
    <>
      <div class="chart" ref={host} aria-label={label} role="img" />
      <ul class="legend" aria-hidden="true">
        {spec.series.map((s) => (
          <li key={s.label}>
            <span class={s.dash ? 'swatch dashed' : 'swatch'} style={{ background: s.color }} />
            {s.label}
          </li>
        ))}
      </ul>
    </>
  );
}
