/**
 * The funnel options of issue 29 (conversion windows, ordering modes, exclusions, breakdowns,
 * time-to-convert distributions, trends, people) computed from each recipient's events, as
 * docs/journeys.md ("Funnel options", "Precise semantics") defines them. Pure: the SQL that
 * gathers the events is journeys.funnels.repository.ts; this file walks them.
 *
 * Why a walk per recipient and not one SQL aggregate: "best attempt" (every first-step event
 * is a possible start, the attempt reaching most steps wins), strict sequences and exclusions
 * are sequential rules over one recipient's events; one statement gathers each recipient's
 * events of the funnel's interactions (already ordered and reduced to bit masks), and the walk
 * is linear in them per attempt.
 */

export type Ordering = 'ordered' | 'strict' | 'unordered';

/** One event of a recipient, in (time, storage id) order. */
export interface WalkEvent {
  /** occurred_at, epoch milliseconds. */
  t: number;
  /** Bit k set: the event matches step k (0-based). */
  steps: number;
  /** Bit i set: the event matches exclusion i. */
  excl: number;
  /** The breakdown property's value on this event (null: absent; undefined: no breakdown). */
  v?: string | null;
}

export interface WalkRecipient {
  rid: string;
  /** Journey funnels: the journey entry (time and its event's breakdown value). */
  entry?: { t: number; v?: string | null };
  events: WalkEvent[];
  /** A click without a click id: it completes step 1 and does not enter step 2 (link-steps.ts). */
  untracked?: boolean;
}

export interface WalkSpec {
  stepCount: number;
  ordering: Ordering;
  /** Whole-funnel window in ms, from the anchor (inclusive). */
  windowMs?: number;
  /** Per-step windows in ms (index k: from completing step k−1, or the entry for k = 0). */
  stepWindowMs: (number | undefined)[];
  /** 0-based step positions: an exclusion between step `from` and step `to`. */
  exclusions: { from: number; to: number }[];
  /** A journey funnel (recipients enter at `entry`) or an ad-hoc one (they enter at the anchor). */
  journey: boolean;
  /**
   * A funnel from a link's clicks: each recipient's first event is its click, the only anchor
   * (the attempt starts at the click, whatever the ordering).
   */
  fromClick?: boolean;
}

export interface Walked {
  rid: string;
  /** Whether the recipient is in the funnel at all (journey entrants; ad-hoc: has an anchor). */
  counted: boolean;
  /** Steps completed by the best attempt. */
  reached: number;
  /** Entering step 1: the journey entry, or the anchor. */
  enteredAt: number;
  /** Completion time of each reached step, ms. */
  times: number[];
  /** The breakdown value under first- and last-touch attribution. */
  first: string | null;
  last: string | null;
  /** Entered step 1 only (a click without a click id). */
  untracked?: boolean;
}

interface Attempt {
  reached: number;
  times: number[];
  /** Index of the latest (in event order) event that completed a step. */
  lastIdx: number;
}

const within = (from: number, to: number, ms: number | undefined) => ms === undefined || to - from <= ms;

/** The first index at or after `from` whose time is >= t (events sorted by time). */
function firstAtOrAfter(ev: WalkEvent[], t: number, from = 0): number {
  let i = from;
  while (i < ev.length && ev[i].t < t) i++;
  return i;
}

function orderedAttempt(ev: WalkEvent[], a: number, spec: WalkSpec): Attempt {
  const times = [ev[a].t];
  const idx = [a];
  for (let k = 1; k < spec.stepCount; k++) {
    const bit = 1 << k;
    const prev = times[k - 1];
    let j = firstAtOrAfter(ev, prev);
    while (j < ev.length && !(ev[j].steps & bit)) j++;
    if (j >= ev.length) break;
    if (!within(times[0], ev[j].t, spec.windowMs) || !within(prev, ev[j].t, spec.stepWindowMs[k])) break;
    times.push(ev[j].t);
    idx.push(j);
  }
  return { reached: times.length, times, lastIdx: Math.max(...idx) };
}

function strictAttempt(ev: WalkEvent[], a: number, spec: WalkSpec): Attempt {
  const times = [ev[a].t];
  let cur = a;
  for (let k = 1; k < spec.stepCount; k++) {
    let j = cur + 1;
    while (j < ev.length && ev[j].steps === 0) j++;
    if (j >= ev.length || !(ev[j].steps & (1 << k))) break;
    if (!within(times[0], ev[j].t, spec.windowMs) || !within(times[k - 1], ev[j].t, spec.stepWindowMs[k])) break;
    times.push(ev[j].t);
    cur = j;
  }
  return { reached: times.length, times, lastIdx: cur };
}

function unorderedAttempt(ev: WalkEvent[], a: number, spec: WalkSpec): Attempt {
  const t0 = ev[a].t;
  const found: { t: number; i: number }[] = [];
  const start = firstAtOrAfter(ev, t0);
  for (let k = 0; k < spec.stepCount; k++) {
    const bit = 1 << k;
    for (let j = start; j < ev.length; j++) {
      if (!within(t0, ev[j].t, spec.windowMs)) break;
      if (ev[j].steps & bit) {
        found.push({ t: ev[j].t, i: j });
        break;
      }
    }
  }
  found.sort((x, y) => x.t - y.t);
  return {
    reached: found.length,
    times: found.map((f) => f.t),
    lastIdx: found.reduce((m, f) => Math.max(m, f.i), -1),
  };
}

/** Cuts an attempt at the first step completed at or after an exclusion event (docs). */
function applyExclusions(ev: WalkEvent[], att: Attempt, spec: WalkSpec): number {
  let reached = att.reached;
  spec.exclusions.forEach((x, i) => {
    if (x.from >= att.reached) return;
    const bit = 1 << i;
    const tf = att.times[x.from];
    let xt: number | undefined;
    for (let j = firstAtOrAfter(ev, tf); j < ev.length; j++) {
      if (ev[j].excl & bit) {
        xt = ev[j].t;
        break;
      }
    }
    if (xt === undefined) return;
    for (let j = x.from + 1; j <= x.to && j < att.reached; j++) {
      if (att.times[j] >= xt) {
        reached = Math.min(reached, j);
        return;
      }
    }
  });
  return reached;
}

/** A recipient's best attempt (most steps, earliest anchor among equals). */
export function walk(r: WalkRecipient, spec: WalkSpec): Walked {
  const ev = r.events;
  const entryT = r.entry?.t;
  let best: (Attempt & { anchor: number }) | undefined;
  const anchorBits = spec.ordering === 'unordered' ? (1 << spec.stepCount) - 1 : 1;
  const anchors = spec.fromClick ? Math.min(1, ev.length) : ev.length;
  // In ordered mode an attempt depends on its anchor's time only (steps are found by time), and
  // without windows or exclusions the earliest anchor reaches furthest: later ones add nothing.
  const timeOnly = spec.ordering === 'ordered';
  const firstOnly =
    timeOnly &&
    spec.windowMs === undefined &&
    spec.exclusions.length === 0 &&
    spec.stepWindowMs.every((w, k) => w === undefined || k === 0);
  let lastTried: number | undefined;
  for (let a = 0; a < anchors; a++) {
    if (!(ev[a].steps & anchorBits)) continue;
    if (timeOnly && ev[a].t === lastTried) continue;
    if (entryT !== undefined && (ev[a].t < entryT || !within(entryT, ev[a].t, spec.stepWindowMs[0]))) continue;
    const att =
      spec.ordering === 'strict'
        ? strictAttempt(ev, a, spec)
        : spec.ordering === 'unordered'
          ? unorderedAttempt(ev, a, spec)
          : orderedAttempt(ev, a, spec);
    const reached = applyExclusions(ev, att, spec);
    if (reached < att.reached) {
      att.times = att.times.slice(0, reached);
      att.reached = reached;
      // The last touch is then the latest event among those that completed the kept steps.
      att.lastIdx = lastCompleting(ev, att, a, spec);
    }
    lastTried = ev[a].t;
    if (!best || att.reached > best.reached) best = { ...att, anchor: a };
    if (best.reached === spec.stepCount || firstOnly) break;
  }
  const entryV = r.entry?.v ?? null;
  if (!best) {
    return {
      rid: r.rid,
      counted: spec.journey,
      reached: 0,
      enteredAt: entryT ?? 0,
      times: [],
      first: entryV,
      last: entryV,
    };
  }
  const anchorV = ev[best.anchor].v ?? null;
  return {
    rid: r.rid,
    ...(r.untracked && { untracked: true }),
    counted: true,
    reached: best.reached,
    enteredAt: entryT ?? ev[best.anchor].t,
    times: best.times,
    first: spec.journey ? entryV : anchorV,
    last: ev[best.lastIdx].v ?? null,
  };
}

/** After a cut: recomputes which events completed the kept steps (exclusions are not taken with `unordered`). */
function lastCompleting(ev: WalkEvent[], att: Attempt, a: number, spec: WalkSpec): number {
  const kept = { ...spec, stepCount: att.reached };
  return (spec.ordering === 'strict' ? strictAttempt(ev, a, kept) : orderedAttempt(ev, a, kept)).lastIdx;
}

// ---------------------------------------------------------------------------------------------
// Aggregation

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

/**
 * Groups counted recipients by their breakdown value: the top `limit` values by recipients
 * (then by value, missing last), and the rest as one "other" group.
 */
export function breakdownGroups(rows: Walked[], attribution: 'first' | 'last', limit: number): BreakdownGroup[] {
  const by = new Map<string | null, Walked[]>();
  for (const w of rows) {
    if (!w.counted) continue;
    const v = attribution === 'last' ? w.last : w.first;
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
