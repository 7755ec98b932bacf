/**
 * Funnel options (issue 29): conversion windows, ordering modes, exclusions, breakdowns, time
 * to convert, trends and people, for a journey's funnel or an ad-hoc one (steps in the
 * request). The rules are in docs/journeys.md ("Precise semantics"); the walk that applies
 * them is funnels.engine.ts, the statement that gathers the events
 * journeys.funnels.repository.ts. Every request is checked here first: a client's mistake is a
 * 400 naming the field, before anything is read.
 */
import type { Analytics, Queryable, ReadSignal } from '../../db/index.ts';
import type { AnalyticsSource } from '../../platform/analytics.ts';
import { badRequest } from '../../platform/errors.ts';
import type { IdField } from '../interactions/index.ts';
import { type Walked, type WalkRecipient, type WalkSpec, walk } from './funnels.engine.ts';
import {
  attributed,
  type BreakdownGroup,
  breakdownGroups,
  bucketStart,
  enteredStep,
  FigureAccumulator,
  rankValues,
  type StepFigures,
} from './funnels.figures.ts';
import { keptFigures, keptTrend, keptWalked } from './funnels.kept.ts';
import {
  eventProperty,
  funnelEvents,
  linkFunnelEvents,
  type Matcher,
  type PropertyRef,
} from './journeys.funnels.repository.ts';
import { linkOfStep } from './journeys.link-steps.ts';
import type { ConversionWindow, FunnelOptions } from './journeys.schema.ts';

const UNIT_MS = { minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 } as const;
const MAX_WINDOW_MS = 366 * UNIT_MS.day;
/** Steps a walk follows (bit masks in an int); the routes bound ad-hoc steps to it too. */
export const MAX_OPTION_STEPS = 20;

/** A funnel to compute: a journey's (entry at its first event) or ad-hoc. */
export interface FunnelDef {
  journeyId?: string;
  steps: { stepId: string; interactionId: string; outcome: string | null }[];
}

export interface FunnelScope extends FunnelOptions {
  idField: IdField;
  start?: string;
  end?: string;
}

/** Whether the request gives any option (only then does the options' path answer). */
export const hasOptions = (q: FunnelOptions): boolean =>
  q.conversionWindow !== undefined ||
  q.stepWindows !== undefined ||
  q.ordering !== undefined ||
  q.exclusions !== undefined ||
  q.breakdown !== undefined;

function windowMs(w: ConversionWindow, field: string): number {
  const ms = w.value * UNIT_MS[w.unit];
  if (ms > MAX_WINDOW_MS) {
    throw badRequest(`${field} is longer than 366 days: send a smaller value or unit`, { field });
  }
  return ms;
}

function propertyRef(property: string, fromClick: boolean): PropertyRef {
  const ofEvent = eventProperty(property);
  if (ofEvent) return ofEvent;
  if (property === 'country' || property === 'deviceType') {
    if (!fromClick) {
      throw badRequest(`breakdown.property "${property}" is a click's: only for a funnel whose first step is a link`, {
        field: 'breakdown.property',
      });
    }
    return { click: property === 'country' ? 'country' : 'device_type' };
  }
  throw badRequest(
    `breakdown.property "${property}" is not one of appId, outcome, source, interactionId, metadata.<key>, country, deviceType`,
    { field: 'breakdown.property' },
  );
}

/** A request's funnel as the walk takes it, with what its statement reads. */
interface Prepared {
  spec: WalkSpec;
  exclusions: Matcher[];
  property?: PropertyRef;
  linkId?: string;
}

/** Checks the options against the funnel's steps and turns them into a walk's spec. */
function prepare(def: FunnelDef, q: FunnelScope): Prepared {
  const n = def.steps.length;
  if (n > MAX_OPTION_STEPS) {
    throw badRequest(`A funnel with options has at most ${MAX_OPTION_STEPS} steps; this one has ${n}`, {
      field: 'steps',
    });
  }
  if (q.start && q.end && Date.parse(q.start) >= Date.parse(q.end)) {
    throw badRequest('The period start must be before its end', { field: 'periodStart' });
  }
  // A funnel from a link's clicks (journeys.link-steps.ts): its first step only may be a link.
  const linkId = n > 0 ? linkOfStep(def.steps[0].interactionId) : undefined;
  const later = def.steps.slice(1).find((s) => linkOfStep(s.interactionId) !== undefined);
  if (later) {
    throw badRequest(`Step "${later.stepId}" is a link step: only the first step of a funnel may be one`, {
      field: 'steps',
      stepId: later.stepId,
    });
  }
  // Recipients enter at the journey entry, or at the first step's event (ad-hoc, a click).
  const journey = def.journeyId !== undefined && linkId === undefined;
  const index = new Map(def.steps.map((s, k) => [s.stepId, k]));
  const stepIndex = (id: string, field: string) => {
    const k = index.get(id);
    if (k === undefined) throw badRequest(`${field} names step "${id}", which is not a step of this funnel`, { field });
    return k;
  };
  const ordering = q.ordering ?? 'ordered';
  const stepWindowMs: (number | undefined)[] = new Array(n).fill(undefined);
  for (const [i, w] of (q.stepWindows ?? []).entries()) {
    const field = `stepWindows[${i}]`;
    if (ordering === 'unordered') {
      throw badRequest('stepWindows do not apply to an unordered funnel: use conversionWindow', { field });
    }
    const k = stepIndex(w.stepId, `${field}.stepId`);
    if (stepWindowMs[k] !== undefined) throw badRequest(`${field} names step "${w.stepId}" twice`, { field });
    if (k === 0 && !journey) {
      throw badRequest(
        `${field}: the first step of an ad-hoc funnel or of a funnel from a link's clicks has nothing before it to be timed from; remove its window`,
        { field },
      );
    }
    stepWindowMs[k] = windowMs(w, field);
  }
  const exclusions: Matcher[] = [];
  const excl: WalkSpec['exclusions'] = [];
  for (const [i, x] of (q.exclusions ?? []).entries()) {
    const field = `exclusions[${i}]`;
    if (ordering === 'unordered') {
      throw badRequest('exclusions do not apply to an unordered funnel (its steps have no order to be between)', {
        field,
      });
    }
    const from = stepIndex(x.fromStepId, `${field}.fromStepId`);
    const to = stepIndex(x.toStepId, `${field}.toStepId`);
    if (from >= to) {
      throw badRequest(`${field}: fromStepId must be a step before toStepId`, { field });
    }
    exclusions.push({ interactionId: x.interactionId, outcome: x.outcome ?? null });
    excl.push({ from, to });
  }
  return {
    spec: {
      stepCount: n,
      ordering,
      windowMs: q.conversionWindow ? windowMs(q.conversionWindow, 'conversionWindow') : undefined,
      stepWindowMs,
      exclusions: excl,
      journey,
      fromClick: linkId !== undefined,
    },
    exclusions,
    property: q.breakdown ? propertyRef(q.breakdown.property, linkId !== undefined) : undefined,
    linkId,
  };
}

/**
 * The recipients of the funnel in the scope (only `rids`, when given: those maintained
 * progress left; none read when it left none) walked from their events, a batch at a time as
 * the cursor hands them over: only the walks are kept.
 */
async function walkEvents(
  tx: Queryable,
  collectionId: string,
  def: FunnelDef,
  q: FunnelScope,
  { spec, exclusions, property, linkId }: Prepared,
  rids?: string[],
): Promise<Walked[]> {
  if (rids?.length === 0) return [];
  const input = {
    idField: q.idField,
    journeyId: def.journeyId,
    steps: def.steps.map((s) => ({ interactionId: s.interactionId, outcome: s.outcome })),
    exclusions,
    property,
    // First touch is the journey entry's value or the click's: the step events' are not read.
    eventValues: !(q.breakdown?.attribution !== 'last' && (spec.journey || spec.fromClick)),
    start: q.start,
    end: q.end,
    rids,
  };
  const rows: Walked[] = [];
  const each = (batch: WalkRecipient[]) => {
    for (const r of batch) {
      const w = walk(r, spec);
      if (w.counted) rows.push(w);
    }
  };
  await (linkId === undefined
    ? funnelEvents(tx, collectionId, input, each)
    : linkFunnelEvents(tx, collectionId, linkId, input, each));
  return rows;
}

export interface PeopleQuery extends FunnelScope {
  stepId?: string;
  status?: 'entered' | 'completed' | 'dropped';
  breakdownValue?: string | null;
  other?: boolean;
}

export interface FunnelResult {
  ordering: 'ordered' | 'strict' | 'unordered';
  steps: StepFigures[];
  breakdown?: { value: string | null; other?: true; steps: StepFigures[] }[];
  /** Whether maintained progress answered (funnels.kept.ts), or only the events. */
  source: AnalyticsSource;
}

export class FunnelsService {
  constructor(private readonly analytics: Analytics) {}

  /**
   * Every recipient of the funnel in the scope, walked. `signal` (on every read of this
   * service): the request's, which stops the read when its client goes away.
   */
  async walked(
    collectionId: string,
    def: FunnelDef,
    q: FunnelScope,
    signal?: ReadSignal,
  ): Promise<{ spec: WalkSpec; rows: Walked[]; source: AnalyticsSource }> {
    const prepared = prepare(def, q);
    // On a read replica that fails part-way the walk is run again on the primary: from nothing.
    return this.analytics.read(
      collectionId,
      async (tx) => {
        const spec = prepared.spec;
        // A journey's ordered funnel: its progress rows, and the recipients they cannot answer for walked.
        const kept = await keptWalked(tx, collectionId, def, q, spec);
        const walked = await walkEvents(tx, collectionId, def, q, prepared, kept?.walk);
        if (!kept) return { spec, rows: walked, source: 'events' as const };
        return { spec, rows: [...kept.rows, ...walked], source: 'maintained' as const };
      },
      signal,
    );
  }

  /**
   * The funnel's figures per step, and per breakdown value when asked. A journey's ordered
   * funnel reads its progress rows' chains straight into the figures (funnels.kept.ts), and
   * walks only the recipients they cannot answer for; any other funnel walks everyone.
   */
  async report(collectionId: string, def: FunnelDef, q: FunnelScope, signal?: ReadSignal): Promise<FunnelResult> {
    const prepared = prepare(def, q);
    const { spec } = prepared;
    const attribution = q.breakdown?.attribution ?? 'first';
    // On a read replica that fails part-way the read is run again on the primary: from nothing.
    const { groups, source } = await this.analytics.read(
      collectionId,
      async (tx) => {
        const kept = await keptFigures(tx, collectionId, def, q, spec);
        const groups = kept?.groups ?? new Map<string | null, FigureAccumulator>();
        for (const w of await walkEvents(tx, collectionId, def, q, prepared, kept?.walk)) {
          if (!w.counted) continue;
          const value = q.breakdown ? attributed(w, attribution) : null;
          FigureAccumulator.of(groups, value, spec.stepCount, spec.journey).add(
            w.reached,
            w.enteredAt,
            w.times,
            w.untracked,
          );
        }
        return { groups, source: kept ? ('maintained' as const) : ('events' as const) };
      },
      signal,
    );
    const merged = (accs: FigureAccumulator[]) => {
      const all = new FigureAccumulator(spec.stepCount, spec.journey);
      for (const a of accs) all.addAll(a);
      return all;
    };
    const result: FunnelResult = {
      ordering: spec.ordering,
      steps: merged([...groups.values()]).figures(),
      source,
    };
    if (q.breakdown) {
      const sizes = new Map([...groups].map(([v, a]) => [v, a.recipients]));
      const { top, rest } = rankValues(sizes, q.breakdown.limit ?? 10);
      result.breakdown = top.map((value) => ({ value, steps: (groups.get(value) as FigureAccumulator).figures() }));
      if (rest.length > 0) {
        const steps = merged(rest.map((v) => groups.get(v) as FigureAccumulator)).figures();
        result.breakdown.push({ value: null, other: true, steps });
      }
    }
    return result;
  }

  /**
   * Conversion by entry bucket over a period (≤ 366 days), and the previous period of the same
   * length with its buckets in the same positions. A journey's ordered funnel is counted from
   * maintained progress where it can be (funnels.kept.ts): only the recipients its rows cannot
   * answer for are walked.
   */
  async trends(
    collectionId: string,
    def: FunnelDef,
    q: FunnelScope & { start: string; end: string; interval?: 'day' | 'week'; compare?: boolean },
    signal?: ReadSignal,
  ) {
    const start = Date.parse(q.start);
    const end = Date.parse(q.end);
    if (start >= end) throw badRequest('The period start must be before its end', { field: 'periodStart' });
    if (end - start > MAX_WINDOW_MS) {
      throw badRequest('A trends period is at most 366 days long', { field: 'periodEnd' });
    }
    const prepared = prepare(def, q);
    const interval = q.interval ?? 'day';
    const length = end - start;
    const starts: number[] = [];
    for (let b = bucketStart(start, interval); b < end; b += UNIT_MS[interval]) starts.push(b);
    const bucketsOf = async (from: number, shift: number) => {
      const scope = { ...q, start: new Date(from).toISOString(), end: new Date(from + length).toISOString() };
      const counts = starts.map(() => ({ entered: 0, completed: 0 }));
      // Buckets are consecutive: the last one starting at or before the (shifted) entry.
      const add = (at: number, entered: number, completed: number) => {
        let i = starts.length - 1;
        while (i >= 0 && starts[i] > at) i--;
        if (i < 0) return;
        counts[i].entered += entered;
        counts[i].completed += completed;
      };
      const kept = await this.analytics.read(
        collectionId,
        async (tx) => {
          // On a read replica that fails part-way the count is run again on the primary: from nothing.
          for (const c of counts) c.entered = c.completed = 0;
          const fromRows = await keptTrend(tx, collectionId, def, scope, prepared.spec, interval, shift);
          const walked = await walkEvents(tx, collectionId, def, scope, prepared, fromRows?.walk);
          for (const b of fromRows?.buckets ?? []) add(b.start, b.entered, b.completed);
          for (const w of walked) add(w.enteredAt + shift, 1, w.reached === prepared.spec.stepCount ? 1 : 0);
          return fromRows !== undefined;
        },
        signal,
      );
      const buckets = counts.map((c, i) => ({
        start: new Date(starts[i] - shift).toISOString(),
        entered: c.entered,
        completed: c.completed,
        conversionRate: c.entered === 0 ? 0 : c.completed / c.entered,
      }));
      return { buckets, kept };
    };
    // The previous period is an independent statement: both run at once (two connections).
    const [current, previous] = await Promise.all([
      bucketsOf(start, 0),
      q.compare ? bucketsOf(start - length, length) : undefined,
    ]);
    type Buckets = Awaited<ReturnType<typeof bucketsOf>>['buckets'];
    const answer: {
      interval: 'day' | 'week';
      periodStart: string;
      periodEnd: string;
      buckets: Buckets;
      previous?: { periodStart: string; periodEnd: string; buckets: Buckets };
    } = {
      interval,
      periodStart: new Date(start).toISOString(),
      periodEnd: new Date(end).toISOString(),
      buckets: current.buckets,
    };
    if (previous) {
      answer.previous = {
        periodStart: new Date(start - length).toISOString(),
        periodEnd: new Date(start).toISOString(),
        buckets: previous.buckets,
      };
    }
    // Maintained when progress's rows counted the entrants (only the rest walked from events).
    const source: AnalyticsSource = current.kept && (previous?.kept ?? true) ? 'maintained' : 'events';
    return { answer, source };
  }

  /**
   * The people a request selects (a step's entered, completed or dropped recipients, of one
   * breakdown group when asked; everyone counted without a step), ascending by id, with the
   * breakdown value each is counted under.
   */
  async selected(
    collectionId: string,
    def: FunnelDef,
    q: PeopleQuery,
    signal?: ReadSignal,
  ): Promise<{ spec: WalkSpec; rows: (Walked & { value?: string | null })[] }> {
    if (def.steps.length > 0 && linkOfStep(def.steps[0].interactionId) !== undefined) {
      throw badRequest('People are not answered for a funnel from a link’s clicks (its recipients are clicks)', {
        field: 'steps',
      });
    }
    const k = q.stepId === undefined ? -1 : def.steps.findIndex((s) => s.stepId === q.stepId);
    if (q.stepId !== undefined && k < 0) {
      throw badRequest(`stepId "${q.stepId}" is not a step of this funnel`, { field: 'stepId' });
    }
    const grouped = q.breakdownValue !== undefined || q.other === true;
    if (grouped && !q.breakdown) {
      throw badRequest('breakdownValue and other need a breakdown: send breakdown too', { field: 'breakdown' });
    }
    if (q.breakdownValue !== undefined && q.other === true) {
      throw badRequest('Send breakdownValue or other: true, not both', { field: 'other' });
    }
    const { spec, rows } = await this.walked(collectionId, def, q, signal);
    let members: (Walked & { value?: string | null })[] = rows;
    if (q.breakdown) {
      const groups: BreakdownGroup[] = breakdownGroups(
        rows,
        q.breakdown.attribution ?? 'first',
        q.breakdown.limit ?? 10,
      );
      const chosen = grouped
        ? groups.filter((x) => (q.other ? x.other : !x.other && x.value === q.breakdownValue))
        : groups;
      members = chosen.flatMap((g) => g.members.map((w) => ({ ...w, value: g.other ? null : g.value })));
    }
    if (k >= 0) {
      const status = q.status ?? 'completed';
      const entered = (w: Walked) => enteredStep(w, k, spec.journey);
      members = members.filter((w) =>
        status === 'entered' ? entered(w) : status === 'completed' ? w.reached > k : entered(w) && w.reached <= k,
      );
    }
    members.sort((x, y) => (x.rid < y.rid ? -1 : x.rid > y.rid ? 1 : 0));
    return { spec, rows: members };
  }

  /** Recipients of one step (entered, completed or dropped), ascending, a page after `cursor`. */
  async people(
    collectionId: string,
    def: FunnelDef,
    q: PeopleQuery & { stepId: string; limit?: number; cursor?: string },
    signal?: ReadSignal,
  ): Promise<{ items: string[]; nextCursor: string | null }> {
    const { rows } = await this.selected(collectionId, def, q, signal);
    const ids = rows.map((w) => w.rid).filter((rid) => q.cursor === undefined || rid > q.cursor);
    const limit = q.limit ?? 1000;
    const items = ids.slice(0, limit);
    return { items, nextCursor: ids.length > limit ? items[items.length - 1] : null };
  }
}
