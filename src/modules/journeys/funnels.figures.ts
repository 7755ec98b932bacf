/**
 * What is counted of walked recipients (funnels.engine.ts) and of progress rows' chains
 * (funnels.kept.ts): per-step figures (entrants, completions, time to complete: mean, nearest
 * ranks and histogram), the breakdown's groups and the trends' buckets, as docs/journeys.md
 * ("Precise semantics") defines them. Pure.
 */
import type { Walked } from './funnels.engine.ts';

/** Histogram bucket lower bounds, seconds (docs: "Time to complete"). */
export const HISTOGRAM_BOUNDS = [0, 60, 300, 900, 3600, 21600, 86400, 259200, 604800, 1209600, 2592000];

export interface StepFigures {
  enteredCount: number;
  completedCount: number;
  conversionRate: number;
  avgTimeToComplete: number | null;
  medianTimeToComplete: number | null;
  p90TimeToComplete: number | null;
  timeToCompleteHistogram: { from: number; to: number | null; count: number }[];
}

/** Whether a walked recipient entered step k (0-based). */
export const enteredStep = (w: Walked, k: number, journey: boolean): boolean =>
  k === 0 ? journey || w.reached > 0 : w.reached >= k && !w.untracked;

/**
 * Per-step figures gathered one recipient at a time, from walked rows or straight from
 * progress rows' chains (funnels.kept.ts), so that a million recipients need no object
 * each: counts, sums, and each step's durations in a growing typed array, whose nearest ranks
 * are taken by selection (`figures`).
 */
export class FigureAccumulator {
  /** Recipients added. */
  recipients = 0;
  private readonly entered: number[];
  private readonly completed: number[];
  private readonly sums: number[];
  private readonly durations: Float64Array[];

  constructor(
    readonly stepCount: number,
    readonly journey: boolean,
  ) {
    this.entered = new Array(stepCount).fill(0);
    this.completed = new Array(stepCount).fill(0);
    this.sums = new Array(stepCount).fill(0);
    this.durations = Array.from({ length: stepCount }, () => new Float64Array(64));
  }

  /** One counted recipient: `reached` steps, completed at `times` (ms), entered at `enteredAt`. */
  add(reached: number, enteredAt: number, times: ArrayLike<number>, untracked = false): void {
    this.recipients++;
    for (let k = 0; k < this.stepCount; k++) {
      // enteredStep's rule, on the figures alone.
      if (!(k === 0 ? this.journey || reached > 0 : reached >= k && !untracked)) continue;
      this.entered[k]++;
      if (reached > k) {
        const d = (times[k] - (k === 0 ? enteredAt : times[k - 1])) / 1000;
        this.push(k, d);
        this.sums[k] += d;
      }
    }
  }

  /** `count` counted recipients that completed no step (their entry time changes nothing). */
  addUnreached(count: number): void {
    this.recipients += count;
    if (this.journey && this.stepCount > 0) this.entered[0] += count;
  }

  /** The accumulator of `value` in `groups`, added when there is none yet. */
  static of<V>(groups: Map<V, FigureAccumulator>, value: V, stepCount: number, journey: boolean): FigureAccumulator {
    let acc = groups.get(value);
    if (!acc) {
      acc = new FigureAccumulator(stepCount, journey);
      groups.set(value, acc);
    }
    return acc;
  }

  /** Adds another accumulator's recipients (of the same funnel). */
  addAll(other: FigureAccumulator): void {
    this.recipients += other.recipients;
    for (let k = 0; k < this.stepCount; k++) {
      this.entered[k] += other.entered[k];
      this.sums[k] += other.sums[k];
      const n = other.completed[k];
      const need = this.completed[k] + n;
      if (need > this.durations[k].length) {
        const grown = new Float64Array(Math.max(need, this.durations[k].length * 2));
        grown.set(this.durations[k].subarray(0, this.completed[k]));
        this.durations[k] = grown;
      }
      this.durations[k].set(other.durations[k].subarray(0, n), this.completed[k]);
      this.completed[k] = need;
    }
  }

  private push(k: number, d: number): void {
    let buf = this.durations[k];
    if (this.completed[k] === buf.length) {
      const grown = new Float64Array(buf.length * 2);
      grown.set(buf);
      this.durations[k] = buf = grown;
    }
    buf[this.completed[k]++] = d;
  }

  /** The figures of each step. Reorders the durations kept (ranks are taken in place). */
  figures(): StepFigures[] {
    return this.durations.map((buf, k) => figuresOf(buf.subarray(0, this.completed[k]), this.entered[k], this.sums[k]));
  }
}

/**
 * The k-th smallest (0-based) of `a[lo..hi]`, moved to `a[k]` with nothing larger before it
 * and nothing smaller after it (Hoare's selection): the nearest ranks without sorting, which
 * took a sixth of a report's time at a million recipients.
 */
function select(a: Float64Array, k: number, lo: number, hi: number): number {
  while (hi > lo) {
    const x = a[lo];
    const y = a[(lo + hi) >>> 1];
    const z = a[hi];
    // The median of the three.
    const pivot = Math.max(Math.min(x, y), Math.min(Math.max(x, y), z));
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i++] = a[j];
        a[j--] = t;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k];
}

/** One step's figures from its durations (seconds; reordered), entrants and the durations' sum. */
function figuresOf(durations: Float64Array, entered: number, sum: number): StepFigures {
  const n = durations.length;
  const histogram = HISTOGRAM_BOUNDS.map((from, i) => ({
    from,
    to: i + 1 < HISTOGRAM_BOUNDS.length ? HISTOGRAM_BOUNDS[i + 1] : null,
    count: 0,
  }));
  // A duration's bucket: the bounds above the first it reaches (below 60 s, bucket 0).
  for (let i = 0; i < n; i++) {
    const d = durations[i];
    let b = 0;
    while (b + 1 < HISTOGRAM_BOUNDS.length && d >= HISTOGRAM_BOUNDS[b + 1]) b++;
    histogram[b].count++;
  }
  // Nearest ranks: of the durations sorted ascending, the one at position ⌈p·n⌉ (1-based); the
  // larger is taken among what selecting the smaller left after it.
  const rank = (p: number) => Math.max(1, Math.ceil(p * n)) - 1;
  const median = n === 0 ? null : select(durations, rank(0.5), 0, n - 1);
  const p90 = n === 0 ? null : select(durations, rank(0.9), rank(0.5), n - 1);
  return {
    enteredCount: entered,
    completedCount: n,
    conversionRate: entered === 0 ? 0 : n / entered,
    avgTimeToComplete: n === 0 ? null : sum / n,
    medianTimeToComplete: median,
    p90TimeToComplete: p90,
    timeToCompleteHistogram: histogram,
  };
}

/**
 * The breakdown's groups by recipients: the top `limit` values (then by value, missing last),
 * and the rest, which form one "other" group.
 */
export function rankValues<V extends string | null>(sizes: Map<V, number>, limit: number): { top: V[]; rest: V[] } {
  const ranked = [...sizes.entries()].sort((x, y) => {
    if (y[1] !== x[1]) return y[1] - x[1];
    if (x[0] === null) return 1;
    if (y[0] === null) return -1;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0;
  });
  return { top: ranked.slice(0, limit).map(([v]) => v), rest: ranked.slice(limit).map(([v]) => v) };
}

export interface BreakdownGroup {
  value: string | null;
  other?: true;
  members: Walked[];
}

/** A walked recipient's breakdown value under first- or last-touch attribution. */
export const attributed = (w: Walked, attribution: 'first' | 'last'): string | null =>
  attribution === 'last' ? w.last : w.first;

/**
 * Groups counted recipients by their breakdown value: the top `limit` values by recipients
 * (then by value, missing last), and the rest as one "other" group.
 */
export function breakdownGroups(rows: Walked[], attribution: 'first' | 'last', limit: number): BreakdownGroup[] {
  const by = new Map<string | null, Walked[]>();
  for (const w of rows) {
    if (!w.counted) continue;
    const v = attributed(w, attribution);
    const g = by.get(v);
    if (g) g.push(w);
    else by.set(v, [w]);
  }
  const { top, rest } = rankValues(new Map([...by].map(([v, m]) => [v, m.length])), limit);
  const groups: BreakdownGroup[] = top.map((value) => ({ value, members: by.get(value) as Walked[] }));
  const others = rest.flatMap((v) => by.get(v) as Walked[]);
  if (others.length > 0) groups.push({ value: null, other: true, members: others });
  return groups;
}

/** Start of the UTC day or week (from Monday) holding `t`. */
export function bucketStart(t: number, interval: 'day' | 'week'): number {
  const DAY = 86_400_000;
  const day = Math.floor(t / DAY) * DAY;
  if (interval === 'day') return day;
  // 1970-01-01 was a Thursday: days since the Monday before it.
  const dow = (Math.floor(t / DAY) + 3) % 7;
  return day - dow * DAY;
}
