/**
 * A brute-force model of interaction events and of the analytics answered from them, for
 * test/analytics-exact.test.ts. Every answer is recomputed from the plain list of stored rows
 * the slow, obvious way (filter, group, take the minimum), following the documented semantics
 * (docs/interactions.md "Counts by outcome", docs/journeys.md "Semantics" and "Step
 * recipients"), so that faster implementations in the service (rollups, derived tables kept by
 * triggers) can be checked against it on random data. It reads nothing of the service.
 */

/** A small seeded PRNG (mulberry32): the same seed gives the same data set on every run. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let x = this.state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }
}

export type IdField = 'userId' | 'contactId';

/** One stored row of interaction_events, as the service keeps it. */
export interface Row {
  /** Insertion order: the row id, which breaks ties of time (dedupeLatest, an event's latest version). */
  seq: number;
  eventId: string;
  interactionId: string;
  appId: string;
  at: number;
  userId?: string;
  contactId?: string;
  outcome: string | null;
  journeyId: string | null;
  deleted: boolean;
}

export type NewRow = Omit<Row, 'seq' | 'deleted'>;

/**
 * The rows, changed as the service changes them: an append adds a row (a version, when its
 * eventId is taken); an update changes the event's latest version (latest by time, then
 * insertion) in place; delete and restore flag every version of the event. Counts and funnels
 * read rows, so every version counts.
 */
export class EventModel {
  readonly rows: Row[] = [];

  append(r: NewRow): Row {
    const row = { ...r, seq: this.rows.length, deleted: false };
    this.rows.push(row);
    return row;
  }

  latest(eventId: string): Row | undefined {
    let best: Row | undefined;
    for (const r of this.rows) if (r.eventId === eventId && (!best || later(r, best))) best = r;
    return best;
  }

  update(eventId: string, changes: { outcome?: string | null; journeyId?: string | null }): void {
    const row = this.latest(eventId);
    if (!row) throw new Error(`model: no event ${eventId}`);
    if (changes.outcome !== undefined) row.outcome = changes.outcome;
    if (changes.journeyId !== undefined) row.journeyId = changes.journeyId;
  }

  setDeleted(eventId: string, deleted: boolean): void {
    for (const r of this.rows) if (r.eventId === eventId) r.deleted = deleted;
  }
}

const later = (a: Row, b: Row) => a.at > b.at || (a.at === b.at && a.seq > b.seq);
const ridOf = (r: Row, idField: IdField) => (idField === 'userId' ? r.userId : r.contactId);

// ---------------------------------------------------------------------------------------------
// Counts by outcome

export interface CountsQuery {
  interactionId?: string;
  appId?: string;
  /** Inclusive. */
  from?: number;
  /** Exclusive. */
  to?: number;
  dedupeLatest: boolean;
  idField: IdField;
}

/**
 * Live rows matching the filters, counted by outcome (null is an outcome of its own). With
 * dedupeLatest, only each (interaction, identity)'s latest matching row, rows without the
 * identity left out. Outcomes with no rows are absent.
 */
export function countsByOutcome(rows: readonly Row[], q: CountsQuery): Map<string | null, number> {
  let kept = rows.filter(
    (r) =>
      !r.deleted &&
      (q.interactionId === undefined || r.interactionId === q.interactionId) &&
      (q.appId === undefined || r.appId === q.appId) &&
      (q.from === undefined || r.at >= q.from) &&
      (q.to === undefined || r.at < q.to),
  );
  if (q.dedupeLatest) {
    const latest = new Map<string, Row>();
    for (const r of kept) {
      const rid = ridOf(r, q.idField);
      if (rid === undefined) continue;
      const key = JSON.stringify([r.interactionId, rid]);
      const seen = latest.get(key);
      if (!seen || later(r, seen)) latest.set(key, r);
    }
    kept = [...latest.values()];
  }
  const counts = new Map<string | null, number>();
  for (const r of kept) counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1);
  return counts;
}

// ---------------------------------------------------------------------------------------------
// Journeys

export interface Mapping {
  stepId: string;
  interactionId?: string;
  outcome?: string;
}

export interface Step {
  stepId: string;
  interactionId: string;
  outcome: string;
}

export interface DefinedStep {
  stepId: string;
  interactionId?: string;
  outcome?: string;
}

const DEFAULT_OUTCOME = 'success';
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `data.steps` in order: `{id or stepId, config: {interactionId, outcome}}`. */
export function definedSteps(data: Record<string, unknown>): DefinedStep[] {
  if (!Array.isArray(data.steps)) return [];
  const steps: DefinedStep[] = [];
  for (const s of data.steps) {
    if (!isObject(s)) continue;
    const stepId = typeof s.id === 'string' ? s.id : typeof s.stepId === 'string' ? s.stepId : undefined;
    if (!stepId) continue;
    const config = isObject(s.config) ? s.config : {};
    steps.push({
      stepId,
      interactionId: typeof config.interactionId === 'string' ? config.interactionId : undefined,
      outcome: typeof config.outcome === 'string' ? config.outcome : undefined,
    });
  }
  return steps;
}

/**
 * The steps a request counts (docs/journeys.md, "Steps and mappings"): the journey's, a
 * request mapping over a step's own (one naming an interaction brings its own outcome, else
 * the default); a journey without steps takes the mappings in their order. The test only
 * sends requests that resolve (no step left without an interaction).
 */
export function resolveSteps(
  data: Record<string, unknown>,
  mappings: readonly Mapping[],
  defaultOutcome = DEFAULT_OUTCOME,
): Step[] {
  const given = new Map(mappings.map((m) => [m.stepId, m]));
  const defined = definedSteps(data);
  const order = defined.length > 0 ? defined : mappings.map((m) => ({ stepId: m.stepId }) as DefinedStep);
  return order.map((s) => {
    const m = given.get(s.stepId);
    const interactionId = m?.interactionId ?? s.interactionId;
    if (!interactionId) throw new Error(`oracle: step ${s.stepId} has no interaction`);
    const outcome = m?.interactionId !== undefined ? m.outcome : (m?.outcome ?? s.outcome);
    return { stepId: s.stepId, interactionId, outcome: outcome ?? defaultOutcome };
  });
}

export interface Period {
  /** Inclusive. */
  start?: number;
  /** Exclusive. */
  end?: number;
}

const inPeriod = (at: number, p: Period) =>
  (p.start === undefined || at >= p.start) && (p.end === undefined || at < p.end);

/** Each recipient's first live event carrying the journey id, in the period. */
export function entries(rows: readonly Row[], journeyId: string, idField: IdField, p: Period): Map<string, number> {
  const entered = new Map<string, number>();
  for (const r of rows) {
    const rid = ridOf(r, idField);
    if (r.deleted || r.journeyId !== journeyId || rid === undefined || !inPeriod(r.at, p)) continue;
    const seen = entered.get(rid);
    if (seen === undefined || r.at < seen) entered.set(rid, r.at);
  }
  return entered;
}

/** Who entered a step and when, and who completed it and when. */
export interface StepProgress {
  entered: Map<string, number>;
  completed: Map<string, number>;
}

/**
 * The ordered funnel: step 1 entered on entry, step k on completing step k−1; a step
 * completed at the recipient's first live event of its interaction and outcome at or after
 * entering it, before the period's end.
 */
export function funnel(
  rows: readonly Row[],
  journeyId: string,
  steps: readonly Step[],
  idField: IdField,
  p: Period,
): { totalEntered: number; steps: StepProgress[] } {
  const entry = entries(rows, journeyId, idField, p);
  const progress: StepProgress[] = [];
  let entered = entry;
  for (const step of steps) {
    const completed = new Map<string, number>();
    for (const [rid, since] of entered) {
      let first: number | undefined;
      for (const r of rows) {
        if (r.deleted || ridOf(r, idField) !== rid || r.interactionId !== step.interactionId) continue;
        if (r.outcome !== step.outcome || r.at < since || (p.end !== undefined && r.at >= p.end)) continue;
        if (first === undefined || r.at < first) first = r.at;
      }
      if (first !== undefined) completed.set(rid, first);
    }
    progress.push({ entered, completed });
    entered = completed;
  }
  return { totalEntered: entry.size, steps: progress };
}

export interface StepNumbers {
  entered: number;
  completed: number;
  /** Mean seconds from entering to completing; null when none completed. */
  avgSeconds: number | null;
}

export function stepNumbers(s: StepProgress): StepNumbers {
  let sum = 0;
  for (const [rid, at] of s.completed) sum += at - s.entered.get(rid)!;
  return {
    entered: s.entered.size,
    completed: s.completed.size,
    avgSeconds: s.completed.size === 0 ? null : sum / s.completed.size / 1000,
  };
}

export type RecipientStatus = 'entered' | 'completed' | 'pending';

export interface RecipientsQuery extends Period {
  status: RecipientStatus;
  idField: IdField;
  interactionId?: string;
  outcome?: string;
  limit: number;
}

function pick(s: StepProgress, status: RecipientStatus): string[] {
  if (status === 'entered') return [...s.entered.keys()];
  if (status === 'completed') return [...s.completed.keys()];
  return [...s.entered.keys()].filter((rid) => !s.completed.has(rid));
}

/** Ids in the order the API sorts them (ORDER BY on text); the test's ids are ASCII letters and digits. */
const sorted = (ids: string[]) => ids.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));

/**
 * A step's recipients (docs/journeys.md, "Step recipients"): the step's mapping is the
 * request's over its own; when every earlier step has a mapping, the ordered funnel through
 * them; when one has none, the step on its own (entered = entered the journey; completed =
 * also has a matching live event in the period, before or after the entry; pending = has
 * none); a journey without steps: the step as its only one. The test only sends requests
 * that resolve (a mapping wherever completed/pending needs one).
 */
export function recipients(
  rows: readonly Row[],
  journeyId: string,
  data: Record<string, unknown>,
  stepId: string,
  q: RecipientsQuery,
): string[] {
  const defined = definedSteps(data);
  const index = defined.findIndex((s) => s.stepId === stepId);
  const own = index >= 0 ? defined[index] : undefined;
  const interactionId = q.interactionId ?? own?.interactionId;
  const outcome = (q.interactionId !== undefined ? q.outcome : (q.outcome ?? own?.outcome)) ?? DEFAULT_OUTCOME;
  const earlier = defined.slice(0, Math.max(index, 0));
  const done = (ids: string[]) => sorted(ids).slice(0, q.limit);
  if (earlier.some((s) => !s.interactionId)) {
    const entered = entries(rows, journeyId, q.idField, q);
    if (q.status === 'entered') return done([...entered.keys()]);
    if (!interactionId) throw new Error('oracle: completed/pending of a step taken on its own needs an interaction');
    const matched = new Set<string>();
    for (const r of rows) {
      const rid = ridOf(r, q.idField);
      if (rid === undefined || r.deleted || !entered.has(rid) || !inPeriod(r.at, q)) continue;
      if (r.interactionId === interactionId && r.outcome === outcome) matched.add(rid);
    }
    const ids = [...entered.keys()].filter((rid) => matched.has(rid) === (q.status === 'completed'));
    return done(ids);
  }
  const chain: Step[] = earlier.map((s) => ({
    stepId: s.stepId,
    interactionId: s.interactionId!,
    outcome: s.outcome ?? DEFAULT_OUTCOME,
  }));
  if (!interactionId) {
    if (q.status !== 'entered') throw new Error('oracle: completed/pending of an unmapped step needs an interaction');
    // Entered this step = completed the one before (or entered the journey, for the first).
    if (chain.length === 0) return done([...entries(rows, journeyId, q.idField, q).keys()]);
    const f = funnel(rows, journeyId, chain, q.idField, q);
    return done(pick(f.steps[f.steps.length - 1], 'completed'));
  }
  chain.push({ stepId, interactionId, outcome });
  const f = funnel(rows, journeyId, chain, q.idField, q);
  return done(pick(f.steps[f.steps.length - 1], q.status));
}

// ---------------------------------------------------------------------------------------------
// Comparing answers

/**
 * The first difference between an answer and the expected value, as `path: got … want …`, or
 * undefined when they agree. Numbers agree within a relative 1e-9 (averages of seconds are
 * floating point on both sides; counts are integers far apart at that tolerance). A key absent
 * on one side and present on the other is a difference, as is any extra array item.
 */
export function firstDifference(got: unknown, want: unknown, path = '$'): string | undefined {
  if (typeof got === 'number' && typeof want === 'number') {
    const scale = Math.max(Math.abs(got), Math.abs(want));
    return Math.abs(got - want) <= 1e-9 * scale ? undefined : `${path}: got ${got}, want ${want}`;
  }
  if (Array.isArray(got) && Array.isArray(want)) {
    for (let i = 0; i < Math.max(got.length, want.length); i++) {
      if (i >= got.length) return `${path}: missing item ${i} ${JSON.stringify(want[i])} (got ${got.length} items)`;
      if (i >= want.length) return `${path}: extra item ${i} ${JSON.stringify(got[i])} (want ${want.length} items)`;
      const d = firstDifference(got[i], want[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (isObject(got) && isObject(want)) {
    for (const key of new Set([...Object.keys(want), ...Object.keys(got)])) {
      if (!Object.hasOwn(got, key)) return `${path}.${key}: absent, want ${JSON.stringify(want[key])}`;
      if (!Object.hasOwn(want, key)) return `${path}.${key}: got ${JSON.stringify(got[key])}, want it absent`;
      const d = firstDifference(got[key], want[key], `${path}.${key}`);
      if (d) return d;
    }
    return undefined;
  }
  return Object.is(got, want) ? undefined : `${path}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`;
}
