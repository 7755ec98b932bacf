/**
 * Reads a /metrics answer with a Prometheus text-format parser from npm (@platformatic/promotel's
 * `parse`, which answers every sample line as a series with its labels). That parser passes over
 * a line it cannot read, so `scrape` also checks that every sample line was read: a malformed
 * line fails the test instead of disappearing.
 */
import { parse } from '@platformatic/promotel';

/** A sample line whose value is NaN or an infinity: name, optional labels, value. */
const SPECIAL_VALUE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [+-]?(nan|inf)$/i;

export interface Sample {
  /** The sample's own name: a histogram's `_bucket`, `_sum`, `_count` included. */
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const series of parse(text).timeseries ?? []) {
    const labels: Record<string, string> = {};
    for (const l of series.labels ?? []) labels[String(l.name)] = String(l.value);
    const { __metric_name: family, __suffix: suffix, ...own } = labels;
    for (const s of series.samples ?? [])
      samples.push({ name: suffix ? `${family}_${suffix}` : family, labels: own, value: Number(s.value) });
  }
  const lines = text
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    // NaN and ±Inf are values Prometheus reads (Go's ParseFloat, any case: prom-client writes
    // `Nan` for an event-loop statistic not yet measured); this parser leaves them out.
    .filter((l) => !SPECIAL_VALUE.test(l));
  if (samples.length !== lines.length) {
    const unread = lines.filter((l) => (parse(l).timeseries ?? []).length !== 1);
    throw new Error(`The parser read ${samples.length} of ${lines.length} sample lines; not: ${unread.join(' | ')}`);
  }
  return samples;
}

/** The value of the one sample named `name` whose labels include `labels` (0 when none: not yet counted). */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}
