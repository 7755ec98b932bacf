/**
 * The funnel drawn: one bar per step with its count and conversion written on it, and the
 * drop-off beside it; and each step's time to convert (median, 90th percentile) with the
 * histogram of the buckets the service counts.
 *
 * The bars are HTML, not a canvas: their words are on them, so they read the same to a screen
 * reader, zoom with the page and need no table beside them.
 */
import { useMemo, useState } from 'preact/hooks';
import { Chart, COLORS } from '../chart.tsx';
import { DataTable, duration, Figure, percent } from '../ui.tsx';
import { count, type FunnelStep } from './funnel-report.tsx';

/**
 * Step k's bar is its completions, as a share of those who entered step 1 (the whole
 * funnel); its pale rest up to step k's entries is who reached step k and dropped off there.
 */
export function FunnelBars({ steps }: { steps: FunnelStep[] }) {
  const base = steps[0]?.enteredCount ?? 0;
  const share = (n: number) => (base ? n / base : 0);
  return (
    <figure class="chart-figure">
      <figcaption>Conversion per step</figcaption>
      <ol class="funnel-bars">
        {steps.map((s, k) => {
          const dropped = s.enteredCount - s.completedCount;
          return (
            <li key={s.stepId} data-step={s.stepId}>
              <div class="step-name">
                <strong>
                  {k + 1}. {s.stepId}
                </strong>{' '}
                <span class="meta">
                  {s.interactionId} · {s.outcome}
                </span>
              </div>
              <div class="track">
                <span class="done" style={{ width: `${100 * share(s.completedCount)}%` }} />
                <span class="dropped" style={{ width: `${100 * share(dropped)}%` }} />
                <span class="on-bar">
                  <strong>{count(s.completedCount)}</strong> · {percent(share(s.completedCount))} of all ·{' '}
                  {percent(s.conversionRate)} {k === 0 ? 'of entered' : 'from the step before'}
                </span>
              </div>
              <div class="drop meta">
                {count(dropped)} of {count(s.enteredCount)} dropped off (
                {percent(s.enteredCount ? dropped / s.enteredCount : 0)})
              </div>
            </li>
          );
        })}
      </ol>
    </figure>
  );
}

/** A histogram bucket's bound in words: 60 → 1 min, 86400 → 1 d. */
function span(seconds: number): string {
  if (seconds === 0) return '0';
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}
export const bucketLabel = (b: { from: number; to: number | null }) =>
  b.to === null ? `≥ ${span(b.from)}` : `${span(b.from)}–${span(b.to)}`;

type Bucket = NonNullable<FunnelStep['timeToCompleteHistogram']>[number];

export function TimeToConvert({ steps }: { steps: FunnelStep[] }) {
  // Step 1's time is from the journey's entry to its first event; step 2's is usually the question.
  const [stepId, setStepId] = useState((steps[1] ?? steps[0]).stepId);
  const step = steps.find((s) => s.stepId === stepId) ?? steps[0];
  const buckets = step.timeToCompleteHistogram ?? [];
  const spec = useMemo(
    () => ({
      kind: 'category' as const,
      labels: buckets.map(bucketLabel),
      xLabel: 'Time to convert',
      series: [
        {
          label: `Recipients who completed ${step.stepId}`,
          values: buckets.map((b) => b.count),
          color: COLORS.primary,
        },
      ],
    }),
    [step],
  );
  return (
    <section aria-labelledby="time-title">
      <h3 id="time-title">Time to convert</h3>
      <DataTable<FunnelStep>
        caption="Time to convert per step"
        rows={steps}
        rowKey={(s) => s.stepId}
        columns={[
          { label: 'Step', value: (s) => s.stepId },
          { label: 'Completed', value: (s) => count(s.completedCount), numeric: true },
          { label: 'Average', value: (s) => duration(s.avgTimeToComplete), numeric: true },
          { label: 'Median', value: (s) => duration(s.medianTimeToComplete), numeric: true },
          { label: '90th percentile', value: (s) => duration(s.p90TimeToComplete), numeric: true },
        ]}
      />
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          Histogram of step
          <select name="histogramStep" value={step.stepId} onChange={(e) => setStepId(e.currentTarget.value)}>
            {steps.map((s) => (
              <option key={s.stepId} value={s.stepId}>
                {s.stepId}
              </option>
            ))}
          </select>
        </label>
      </form>
      {buckets.length === 0 ? (
        <p class="empty">The service answered no histogram for this funnel.</p>
      ) : (
        <div data-histogram={step.stepId}>
          <Figure
            title={`Time to complete ${step.stepId}`}
            chart={
              <Chart
                spec={spec}
                label={`Time to complete ${step.stepId}: ${buckets.map((b) => `${bucketLabel(b)} ${b.count}`).join('; ')}`}
              />
            }
            table={
              <DataTable<Bucket>
                caption={`Time to complete ${step.stepId}, by bucket`}
                rows={buckets}
                rowKey={(b) => b.from}
                columns={[
                  { label: 'Time to convert', value: bucketLabel },
                  { label: 'Recipients', value: (b) => count(b.count), numeric: true },
                  {
                    label: 'Share',
                    value: (b) => percent(step.completedCount ? b.count / step.completedCount : 0),
                    numeric: true,
                  },
                ]}
              />
            }
          />
        </div>
      )}
    </section>
  );
}
