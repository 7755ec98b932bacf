/**
 * The funnel options of issue 29 (conversion windows, ordering modes, exclusions, breakdowns,
 * time-to-convert distributions, trends, people) computed from each recipient's events, as
 * docs/journeys.md ("Funnel options", "Precise semantics") defines them. Pure: the SQL that
 * gathers the events is journeys.funnels.repository.ts; this file walks them, and
 * funnels.figures.ts counts what the walks give.
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
