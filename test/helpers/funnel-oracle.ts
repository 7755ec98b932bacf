/**
 * A brute-force computation of the funnel options of issue 29, written from docs/journeys.md
 * ("Precise semantics") over the stored events, independently of the service's walk: each
 * rule as the docs state it, by filtering and taking minima over all of a recipient's events
 * rather than by scanning indexes. test/funnels-property.test.ts compares every number of the
 * service's answers with it.
 */

export interface OEvent {
  id: number;
  t: number;
  user: string | null;
  contact: string | null;
  interaction: string;
  outcome: string | null;
  journey: string | null;
  app: string | null;
  source: string;
  metadata: Record<string, unknown> | null;
  deleted: boolean;
  clickId?: string | null;
}

/** A click of the link a funnel starts at. */
export interface OClick {
  id: number;
  t: number;
  clickId: string | null;
  country: string | null;
}

export interface OStep {
  stepId: string;
  interactionId: string;
  /** null: any outcome. */
  outcome: string | null;
}

export interface OQuery {
  journeyId?: string;
  steps: OStep[];
  idField: 'userId' | 'contactId';
  start?: number;
  end?: number;
  ordering: 'ordered' | 'strict' | 'unordered';
  windowMs?: number;
  stepWindowMs: (number | undefined)[];
  exclusions: { interactionId: string; outcome: string | null; from: number; to: number }[];
  breakdown?: { property: string; attribution: 'first' | 'last'; limit: number };
  /** A funnel from a link's clicks: steps[0] is the link step; these are its clicks. */
  clicks?: OClick[];
}

export interface OPerson {
  rid: string;
  reached: number;
  enteredAt: number;
  times: number[];
  first: string | null;
  last: string | null;
  /** A click without a click id: completes step 1, enters no further step. */
  untracked?: boolean;
}

const earlier = (a: OEvent, b: OEvent) => a.t < b.t || (a.t === b.t && a.id < b.id);
const earliest = (evs: OEvent[]): OEvent | undefined =>
  evs.reduce<OEvent | undefined>((m, e) => (!m || earlier(e, m) ? e : m), undefined);
const latest = (evs: OEvent[]): OEvent | undefined =>
  evs.reduce<OEvent | undefined>((m, e) => (!m || earlier(m, e) ? e : m), undefined);
const fits = (from: number, to: number, ms: number | undefined) => ms === undefined || to - from <= ms;

export function propertyOf(e: OEvent, property: string): string | null {
  if (property === 'appId') return e.app;
  if (property === 'outcome') return e.outcome;
  if (property === 'source') return e.source;
  if (property === 'interactionId') return e.interaction;
  const v = e.metadata?.[property.slice('metadata.'.length)];
  if (v === undefined || v === null) return null;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

interface Attempt {
  anchor: OEvent;
  completing: OEvent[];
}

/** Every counted recipient of the funnel, with its best attempt. */
export function people(all: OEvent[], q: OQuery): OPerson[] {
  if (q.clicks) return clickPeople(all, q);
  const ridOf = (e: OEvent) => (q.idField === 'contactId' ? e.contact : e.user);
  const live = all.filter(
    (e) =>
      !e.deleted &&
      ridOf(e) !== null &&
      (q.start === undefined || e.t >= q.start) &&
      (q.end === undefined || e.t < q.end),
  );
  const byRid = new Map<string, OEvent[]>();
  for (const e of live) {
    const r = ridOf(e) as string;
    byRid.set(r, [...(byRid.get(r) ?? []), e]);
  }
  const out: OPerson[] = [];
  for (const [rid, evsAll] of byRid) {
    let entry: OEvent | undefined;
    let evs = evsAll;
    if (q.journeyId !== undefined) {
      entry = earliest(evsAll.filter((e) => e.journey === q.journeyId));
      if (!entry) continue;
      const E = entry.t;
      evs = evsAll.filter((e) => e.t >= E);
    }
    const p = person(rid, evs, entry, undefined, q);
    if (p) out.push(p);
  }
  return out;
}

/**
 * A funnel from a link's clicks: each click in the period is a recipient; its identity is that
 * of its first event carrying its click id; its events are those at or after it, before the
 * period's end, carrying its click id or of its identity. The click is the only anchor.
 */
function clickPeople(all: OEvent[], q: OQuery): OPerson[] {
  const ridOf = (e: OEvent) => (q.idField === 'contactId' ? e.contact : e.user);
  const out: OPerson[] = [];
  for (const c of q.clicks ?? []) {
    if ((q.start !== undefined && c.t < q.start) || (q.end !== undefined && c.t >= q.end)) continue;
    const after = all.filter((e) => !e.deleted && e.t >= c.t && (q.end === undefined || e.t < q.end));
    const ident =
      c.clickId === null ? null : (earliest(after.filter((e) => e.clickId === c.clickId && ridOf(e) !== null)) ?? null);
    const identity = ident ? ridOf(ident) : null;
    const mine =
      c.clickId === null
        ? []
        : after.filter((e) => e.clickId === c.clickId || (identity !== null && ridOf(e) === identity));
    const click: OEvent = {
      id: -1,
      t: c.t,
      user: null,
      contact: null,
      interaction: q.steps[0].interactionId,
      outcome: null,
      journey: null,
      app: null,
      source: '',
      metadata: null,
      deleted: false,
      clickId: c.clickId,
    };
    const p = person(String(c.id), [click, ...mine], undefined, { click, country: c.country }, q);
    if (p) out.push(c.clickId === null ? { ...p, untracked: true } : p);
  }
  return out;
}

/** One recipient's best attempt over its events (at or after its entry). */
function person(
  rid: string,
  evs: OEvent[],
  entry: OEvent | undefined,
  link: { click: OEvent; country: string | null } | undefined,
  q: OQuery,
): OPerson | undefined {
  const matchesStep = (e: OEvent, k: number) =>
    e.interaction === q.steps[k].interactionId && (q.steps[k].outcome === null || e.outcome === q.steps[k].outcome);
  const matchesAnyStep = (e: OEvent) => q.steps.some((_, k) => matchesStep(e, k));
  const matchesExcl = (e: OEvent, i: number) =>
    e.interaction === q.exclusions[i].interactionId &&
    (q.exclusions[i].outcome === null || e.outcome === q.exclusions[i].outcome);
  const n = q.steps.length;
  const sorted = [...evs].sort((a, b) => (earlier(a, b) ? -1 : 1));
  const attempts: Attempt[] = [];
  for (const a of sorted) {
    // From a link, the click is the only anchor.
    const isAnchor = link ? a === link.click : q.ordering === 'unordered' ? matchesAnyStep(a) : matchesStep(a, 0);
    if (!isAnchor) continue;
    if (entry && !fits(entry.t, a.t, q.stepWindowMs[0])) continue;
    let completing: OEvent[] = [];
    if (q.ordering === 'ordered') {
      completing = [a];
      for (let k = 1; k < n; k++) {
        const prev = completing[k - 1].t;
        const c = earliest(sorted.filter((e) => matchesStep(e, k) && e.t >= prev));
        if (!c || !fits(a.t, c.t, q.windowMs) || !fits(prev, c.t, q.stepWindowMs[k])) break;
        completing.push(c);
      }
    } else if (q.ordering === 'strict') {
      const funnel = sorted.filter(matchesAnyStep);
      completing = [a];
      for (let k = 1; k < n; k++) {
        const prevEv = completing[k - 1];
        const next = funnel[funnel.indexOf(prevEv) + 1];
        if (!next || !matchesStep(next, k)) break;
        if (!fits(a.t, next.t, q.windowMs) || !fits(prevEv.t, next.t, q.stepWindowMs[k])) break;
        completing.push(next);
      }
    } else {
      const firsts: OEvent[] = [];
      for (let k = 0; k < n; k++) {
        const c = earliest(sorted.filter((e) => matchesStep(e, k) && e.t >= a.t && fits(a.t, e.t, q.windowMs)));
        if (c) firsts.push(c);
      }
      // Completion times are the sorted times; which event is "the k-th" matters only for the
      // last touch, the latest of them all.
      completing = firsts.sort((x, y) => x.t - y.t);
    }
    // Exclusions: cut at the first step (f < j ≤ g) completed at or after the exclusion.
    let reached = completing.length;
    q.exclusions.forEach((x, i) => {
      if (x.from >= completing.length) return;
      const tf = completing[x.from].t;
      const ex = earliest(sorted.filter((e) => matchesExcl(e, i) && e.t >= tf));
      if (!ex) return;
      for (let j = x.from + 1; j <= x.to && j < completing.length; j++) {
        if (completing[j].t >= ex.t) {
          reached = Math.min(reached, j);
          return;
        }
      }
    });
    attempts.push({ anchor: a, completing: completing.slice(0, reached) });
  }
  const best = attempts.reduce<Attempt | undefined>(
    (m, at) => (!m || at.completing.length > m.completing.length ? at : m),
    undefined,
  );
  if (!best && !entry) return undefined;
  const clickLevel = q.breakdown?.property === 'country' || q.breakdown?.property === 'deviceType';
  const prop = (e: OEvent | undefined) => {
    if (!q.breakdown || !e) return null;
    // A click's own property is the click's, whatever the attribution; the click has no event's.
    if (link)
      return clickLevel
        ? q.breakdown.property === 'country'
          ? link.country
          : null
        : e === link.click
          ? null
          : propertyOf(e, q.breakdown.property);
    return propertyOf(e, q.breakdown.property);
  };
  const reached = best?.completing.length ?? 0;
  return {
    rid,
    reached,
    enteredAt: entry ? entry.t : (best as Attempt).anchor.t,
    times: best ? best.completing.map((e) => e.t).sort((x, y) => x - y) : [],
    first: prop(entry ?? best?.anchor),
    last: prop(reached > 0 ? latest(best?.completing ?? []) : entry),
  };
}

const BOUNDS = [0, 60, 300, 900, 3600, 21600, 86400, 259200, 604800, 1209600, 2592000];

export function figures(ps: OPerson[], n: number, journey: boolean) {
  return Array.from({ length: n }, (_, k) => {
    const entered = ps.filter((p) => (k === 0 ? journey || p.reached > 0 : p.reached >= k && !p.untracked));
    const done = entered.filter((p) => p.reached > k);
    const secs = done.map((p) => (p.times[k] - (k === 0 ? p.enteredAt : p.times[k - 1])) / 1000).sort((x, y) => x - y);
    const rank = (p: number) => (secs.length === 0 ? null : secs[Math.max(1, Math.ceil(p * secs.length)) - 1]);
    return {
      enteredCount: entered.length,
      completedCount: done.length,
      conversionRate: entered.length === 0 ? 0 : done.length / entered.length,
      avgTimeToComplete: secs.length === 0 ? null : secs.reduce((s, x) => s + x, 0) / secs.length,
      medianTimeToComplete: rank(0.5),
      p90TimeToComplete: rank(0.9),
      timeToCompleteHistogram: BOUNDS.map((from, i) => ({
        from,
        to: BOUNDS[i + 1] ?? null,
        count: secs.filter((s) => s >= from && (i + 1 === BOUNDS.length || s < BOUNDS[i + 1])).length,
      })),
    };
  });
}

/** Breakdown groups: top `limit` values by recipients (value ascending, missing last), then "other". */
export function groups(ps: OPerson[], b: NonNullable<OQuery['breakdown']>) {
  const values = [...new Set(ps.map((p) => (b.attribution === 'last' ? p.last : p.first)))];
  const members = (v: string | null) => ps.filter((p) => (b.attribution === 'last' ? p.last : p.first) === v);
  values.sort((x, y) => {
    const d = members(y).length - members(x).length;
    if (d !== 0) return d;
    if (x === null) return 1;
    if (y === null) return -1;
    return x < y ? -1 : 1;
  });
  const top = values.slice(0, b.limit).map((value) => ({ value, other: false, members: members(value) }));
  const rest = values.slice(b.limit).flatMap(members);
  if (rest.length > 0) top.push({ value: null, other: true, members: rest });
  return top;
}
