/**
 * The analytics answers compared with a brute-force computation on random data (issue
 * "Scale", item 4: answers stay exact whatever fast path serves them). For each seed, one
 * collection gets random events through the admin API (out of time order, versions, updates of
 * outcomes and journey ids, deletes and restores); test/helpers/analytics-oracle.ts keeps a
 * model of the stored rows and recomputes every answer from it: counts by outcome (plain and
 * dedupeLatest, every filter and window shape), funnel reports and stats (own mappings,
 * request overrides, random periods, both identities), and step recipients (ordered funnel,
 * a step taken on its own, a journey without steps). Then more events arrive (some earlier
 * than any before, a new entrant) and a journey's steps change, and everything is compared
 * again. Every answer must be exact the moment it is asked for: the derived tables are kept
 * in the writing transaction, and while a journey's progress is being rebuilt after a change
 * of steps the events answer (docs/journeys.md). A failure names the seed, the phase, the
 * request and the first difference.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import {
  countsByOutcome,
  definedSteps,
  EventModel,
  firstDifference,
  funnel,
  type IdField,
  type Mapping,
  type NewRow,
  type Period,
  type RecipientStatus,
  Rng,
  recipients,
  resolveSteps,
  stepNumbers,
} from './helpers/analytics-oracle.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';

const SEEDS = [20261124, 7, 4242];

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const B = Date.parse('2026-03-02T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

const TYPES = [
  { id: 'view', appId: 'shop' },
  { id: 'click', appId: 'shop' },
  { id: 'buy', appId: 'shop' },
  { id: 'signup', appId: 'blog' },
  { id: 'share', appId: 'blog' },
] as const;
const INTERACTIONS = TYPES.map((x) => x.id);
const APPS = ['shop', 'blog'];
const appOf = new Map<string, string>(TYPES.map((x) => [x.id, x.appId]));
const OUTCOMES = ['success', 'success', 'fail', 'paid', 'skip', null] as const;
const NAMED_OUTCOMES = ['success', 'fail', 'paid', 'skip'];
const STATUSES: RecipientStatus[] = ['entered', 'completed', 'pending'];
const ID_FIELDS: IdField[] = ['userId', 'contactId'];

/** Ids of letters and digits only, so that any collation sorts them as the oracle does. */
const USERS = Array.from({ length: 20 }, (_, i) => `u${String(i).padStart(2, '0')}`);
const CONTACTS = Array.from({ length: 12 }, (_, i) => `c${String(i).padStart(2, '0')}`);
/** Most users have one contact of their own: the same id as the user for even ones. */
const homeContact = (u: string) => (Number(u.slice(1)) % 2 === 0 ? u : `c${u.slice(1)}`);

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('analytics answers equal a brute-force computation on random data', () => {
  it.each(SEEDS)(
    'seed %i: counts by outcome, funnels, stats and recipients, before and after changes',
    async (seed) => {
      const s = new Scenario(seed, await t.createCollection());
      await s.setUp();
      await s.appendInitialEvents();
      await s.changeSomeEvents(30, 20);
      s.phase = 'initial data';
      await s.compareEverything();
      await s.appendMoreEvents();
      await s.changeSomeEvents(10, 8);
      await s.changeJourneySteps();
      s.phase = 'after more events and a change of steps';
      await s.compareEverything();
    },
  );
});

/** A journey as the test created it: its id and the data the service holds. */
interface Journey {
  id: string;
  data: Record<string, unknown>;
}

class Scenario {
  readonly rng: Rng;
  readonly model = new EventModel();
  phase = 'set-up';
  /** Four mapped steps, one with a non-default outcome, one named by `stepId`. */
  j!: Journey;
  /** Steps without config: counted through request mappings only. */
  j2!: Journey;
  /** Its second step has no mapping: recipients of the third are the step taken on its own. */
  j3!: Journey;
  /** No steps at all: a request's mappings are its steps. */
  j4!: Journey;
  private eventNo = 0;

  constructor(
    readonly seed: number,
    readonly c: TestCollection,
  ) {
    this.rng = new Rng(seed);
  }

  private url(path: string) {
    return `${t.config.basePath}/admin/collection/${this.c.id}${path}`;
  }

  private async call(method: 'POST' | 'PATCH', path: string, payload: object): Promise<unknown> {
    const res = await t.inject({ method, url: this.url(path), headers: this.c.auth, payload });
    if (res.statusCode !== 200) {
      throw new Error(
        `seed ${this.seed}, ${this.phase}: ${method} ${path} ${JSON.stringify(payload)} → ${res.statusCode} ${res.body}`,
      );
    }
    return res.json();
  }

  /** Asks once: the answer must equal the expected one at once, not after a while. */
  private async agree(what: string, payload: object, ask: () => Promise<unknown>, want: unknown) {
    const got = await ask();
    const diff = firstDifference(got, want);
    if (!diff) return;
    const clip = (v: unknown) => JSON.stringify(v).slice(0, 2000);
    throw new Error(
      `seed ${this.seed}, ${this.phase}: ${what} ${JSON.stringify(payload)}\n  ${diff}\n  got:  ${clip(got)}\n  want: ${clip(want)}`,
    );
  }

  // ------------------------------------------------------------------------------ data

  async setUp() {
    for (const type of TYPES) await this.call('POST', '/interactions', type);
    const journey = async (name: string, data: Record<string, unknown>): Promise<Journey> => {
      const created = (await this.call('POST', '/journeys', { name, journeyType: 'event_triggered', data })) as {
        id: string;
      };
      return { id: created.id, data };
    };
    this.j = await journey('J', {
      steps: [
        { id: 'j1', config: { interactionId: 'view' } },
        { stepId: 'j2', config: { interactionId: 'click', outcome: 'success' } },
        { id: 'j3', config: { interactionId: 'buy', outcome: 'paid' } },
        { id: 'j4', config: { interactionId: 'signup' } },
      ],
    });
    this.j2 = await journey('J2', { steps: [{ id: 'a' }, { id: 'b', type: 'email' }, { id: 'c' }] });
    this.j3 = await journey('J3', {
      steps: [
        { id: 'k1', config: { interactionId: 'view' } },
        { id: 'k2', type: 'wait', config: { hours: 2 } },
        { id: 'k3', config: { interactionId: 'buy', outcome: 'paid' } },
      ],
    });
    this.j4 = await journey('J4', {});
  }

  private identity(): { userId?: string; contactId?: string } {
    const u = this.rng.pick(USERS);
    if (this.rng.chance(0.1)) return { contactId: this.rng.chance(0.5) ? homeContact(u) : this.rng.pick(CONTACTS) };
    return this.identityOf(u);
  }

  /** An event of this user: its own contact mostly, sometimes another, sometimes none. */
  private identityOf(u: string): { userId?: string; contactId?: string } {
    const r = this.rng.next();
    if (r < 0.6) return { userId: u, contactId: homeContact(u) };
    if (r < 0.75) return { userId: u, contactId: this.rng.pick(CONTACTS) };
    return { userId: u };
  }

  /** A time in the ~10 days, sometimes on an hour boundary or on another event's instant. */
  private time(from = B, span = 10 * DAY): number {
    const r = this.rng.next();
    if (r < 0.1) return from + this.rng.int(Math.floor(span / HOUR)) * HOUR;
    if (r < 0.18 && this.model.rows.length > 0) return this.rng.pick(this.model.rows).at;
    return from + this.rng.int(span);
  }

  private outcome(): string | null {
    return this.rng.pick(OUTCOMES);
  }

  private newEvent(
    interactionId: string,
    who: { userId?: string; contactId?: string },
    at: number,
    outcome: string | null,
    journeyId: string | null = null,
  ): NewRow {
    // Some events take the eventId the service generates; the others are named, for versions.
    const eventId = this.rng.chance(0.2) ? '' : `e${this.seed}x${++this.eventNo}`;
    return { eventId, interactionId, appId: appOf.get(interactionId)!, at, ...who, outcome, journeyId };
  }

  /** Events for a journey entrant: the entry, then its steps' events in order, most of them. */
  private entrantEvents(u: string, journey: Journey, entryAt: number): NewRow[] {
    const out: NewRow[] = [];
    out.push(this.newEvent(this.rng.pick(INTERACTIONS), this.identityOf(u), entryAt, this.outcome(), journey.id));
    let at = entryAt;
    for (const step of definedSteps(journey.data)) {
      if (!step.interactionId) continue;
      if (!this.rng.chance(0.75)) break;
      // Now and then at the same instant as the step before, or before it (does not count).
      at = this.rng.chance(0.1)
        ? at
        : this.rng.chance(0.1)
          ? at - this.rng.int(6 * HOUR)
          : at + this.rng.int(36 * HOUR);
      const outcome = this.rng.chance(0.15) ? this.rng.pick(NAMED_OUTCOMES) : (step.outcome ?? 'success');
      out.push(this.newEvent(step.interactionId, this.identityOf(u), at, outcome));
    }
    return out;
  }

  private async append(rows: NewRow[]) {
    for (const r of rows) {
      const payload: Record<string, unknown> = {
        interactionId: r.interactionId,
        timestamp: iso(r.at),
        ...(r.eventId && { eventId: r.eventId }),
        ...(r.userId !== undefined && { userId: r.userId }),
        ...(r.contactId !== undefined && { contactId: r.contactId }),
        ...(r.outcome !== null && { outcome: r.outcome }),
        ...(r.journeyId !== null && { journeyId: r.journeyId }),
        ...(this.rng.chance(0.3) && { appId: r.appId }),
      };
      const res = (await this.call('POST', '/interactions/append', payload)) as { eventId: string };
      this.model.append({ ...r, eventId: res.eventId });
    }
  }

  /** Versions of stored events: the same eventId again, at the same or another instant. */
  private versions(n: number): NewRow[] {
    return Array.from({ length: n }, () => {
      const { eventId, interactionId, appId, userId, contactId, ...of } = this.rng.pick(this.model.rows);
      const at = this.rng.chance(0.3) ? of.at : of.at + this.rng.int(4 * HOUR) - 2 * HOUR;
      const journeyId = this.rng.chance(0.7) ? of.journeyId : null;
      return { eventId, interactionId, appId, userId, contactId, at, outcome: this.outcome(), journeyId };
    });
  }

  async appendInitialEvents() {
    const rows: NewRow[] = [];
    const journeys = [this.j, this.j2, this.j3, this.j4];
    for (let i = 0; i < 160; i++) {
      const journeyId = this.rng.chance(0.06) ? this.rng.pick(journeys).id : null;
      rows.push(this.newEvent(this.rng.pick(INTERACTIONS), this.identity(), this.time(), this.outcome(), journeyId));
    }
    for (const u of USERS) {
      // Some users enter J more than once; the first entry in the period counts.
      const times = this.rng.chance(0.7) ? (this.rng.chance(0.3) ? 2 : 1) : 0;
      for (let k = 0; k < times; k++) rows.push(...this.entrantEvents(u, this.j, this.time(B, 7 * DAY)));
      if (this.rng.chance(0.4)) rows.push(...this.entrantEvents(u, this.j3, this.time(B, 7 * DAY)));
      // J2 and J4 have no mapped steps: their entries only, completions come from the random events.
      for (const other of [this.j2, this.j4]) {
        if (this.rng.chance(0.3)) rows.push(...this.entrantEvents(u, other, this.time(B, 7 * DAY)));
      }
    }
    // Out of time order: the service must not rely on events arriving in order.
    await this.append(this.rng.shuffle(rows));
    await this.append(this.versions(20));
  }

  async appendMoreEvents() {
    const rows: NewRow[] = [];
    for (let i = 0; i < 60; i++) {
      // Some earlier than every event so far.
      const at = this.rng.chance(0.3) ? this.time(B - 2 * DAY, 2 * DAY) : this.time(B - DAY, 12 * DAY);
      const journeyId = this.rng.chance(0.1) ? this.rng.pick([this.j, this.j3]).id : null;
      rows.push(this.newEvent(this.rng.pick(INTERACTIONS), this.identity(), at, this.outcome(), journeyId));
    }
    // A new entrant of J, and an existing user entering again before anything else happened.
    rows.push(...this.entrantEvents('u90', this.j, this.time(B, 5 * DAY)));
    rows.push(...this.entrantEvents(this.rng.pick(USERS), this.j, B - DAY - this.rng.int(DAY)));
    await this.append(this.rng.shuffle(rows));
    await this.append(this.versions(8));
  }

  /**
   * Updates (outcome, sometimes the journey id) of the latest version of random events, then
   * deletes of random events and restores of some deleted ones, through both update routes.
   */
  async changeSomeEvents(updates: number, deletes: number) {
    const eventIds = () => [...new Set(this.model.rows.map((r) => r.eventId))];
    for (let i = 0; i < updates; i++) {
      const eventId = this.rng.pick(eventIds());
      const latest = this.model.latest(eventId)!;
      const changes: { outcome?: string | null; journeyId?: string | null } = { outcome: this.outcome() };
      if (this.rng.chance(0.15)) changes.journeyId = this.rng.chance(0.6) ? this.j.id : null;
      if (this.rng.chance(0.5)) {
        await this.call('PATCH', `/interactions/events/${eventId}`, changes);
      } else {
        const who = latest.userId !== undefined ? { userId: latest.userId } : { contactId: latest.contactId };
        await this.call('POST', '/interactions/events/update', {
          eventId,
          interactionId: latest.interactionId,
          ...who,
          ...changes,
        });
      }
      this.model.update(eventId, changes);
    }
    const setDeleted = async (eventId: string, deleted: boolean) => {
      const latest = this.model.latest(eventId)!;
      if (this.rng.chance(0.5)) {
        await this.call('PATCH', `/interactions/events/${eventId}`, { deleted });
      } else {
        const who = latest.userId !== undefined ? { userId: latest.userId } : { contactId: latest.contactId };
        await this.call('POST', '/interactions/events/update', {
          eventId,
          interactionId: latest.interactionId,
          ...who,
          status: deleted ? 'deleted' : 'active',
        });
      }
      this.model.setDeleted(eventId, deleted);
    };
    // Entries of J are deleted more often than the rest: the entry then moves to a later event.
    const entryIds = [...new Set(this.model.rows.filter((r) => r.journeyId === this.j.id).map((r) => r.eventId))];
    const deleted: string[] = [];
    for (let i = 0; i < deletes; i++) {
      const eventId = this.rng.chance(0.3) ? this.rng.pick(entryIds) : this.rng.pick(eventIds());
      await setDeleted(eventId, true);
      deleted.push(eventId);
    }
    for (const eventId of deleted) if (this.rng.chance(0.3)) await setDeleted(eventId, false);
  }

  /** J's steps replaced by a random 3 to 5 of them, in a random order, with random mappings. */
  async changeJourneySteps() {
    const ids = this.rng.shuffle(['j1', 'j2', 'j3', 'j4', 'j5', 'j6']).slice(0, 3 + this.rng.int(3));
    const steps = ids.map((id) => {
      const config: Record<string, string> = { interactionId: this.rng.pick(INTERACTIONS) };
      if (this.rng.chance(0.6)) config.outcome = this.rng.pick(NAMED_OUTCOMES);
      return this.rng.chance(0.3) ? { stepId: id, config } : { id, config };
    });
    const data = { steps };
    await this.call('PATCH', `/journeys/${this.j.id}`, { data });
    this.j = { id: this.j.id, data };
  }

  // ------------------------------------------------------------------------------ windows

  /**
   * An instant for a window edge: an event's own instant (an edge exactly on it tells
   * inclusive from exclusive), an hour boundary (the edges of hourly rollups), or any
   * millisecond. Counts take edges over the whole ~12 days; journeys over the days their
   * entrants arrive in, so that few periods are empty.
   */
  private edge(journeys = false): number {
    const [from, span] = journeys ? [B, 8 * DAY] : [B - DAY, 12 * DAY];
    const r = this.rng.next();
    if (r < 0.4) {
      // For journeys, entries' instants half of the time: the edge then decides an entry.
      const entry = journeys && r < 0.2;
      const inside = this.model.rows.filter(
        (x) => x.at >= from && x.at < from + span && (!entry || x.journeyId !== null),
      );
      return this.rng.pick(inside).at;
    }
    if (r < 0.5) return from + this.rng.int(span / HOUR) * HOUR;
    return from + this.rng.int(span);
  }

  /** A window of the given shape, start before end; now and then inside one hour. */
  private window(shape: 'none' | 'from' | 'to' | 'both', journeys = false): Period {
    if (shape === 'none') return {};
    if (shape === 'from') return { start: this.edge(journeys) };
    if (shape === 'to') return { end: this.edge(journeys) };
    const start = this.edge(journeys);
    if (this.rng.chance(journeys ? 0.05 : 0.2)) return { start, end: start + 1 + this.rng.int(HOUR) };
    const other = this.edge(journeys);
    return other > start
      ? { start, end: other }
      : other < start
        ? { start: other, end: start }
        : { start, end: start + 1 };
  }

  private randomWindow(journeys = true): Period {
    return this.window(this.rng.pick(['none', 'from', 'to', 'both'] as const), journeys);
  }

  // ------------------------------------------------------------------------------ comparisons

  async compareEverything() {
    await this.compareCounts();
    await this.compareJourneyJ();
    await this.compareOtherJourneys();
    await this.compareRecipientsOfJ();
  }

  private async counts(q: Record<string, unknown>, want: Map<string | null, number>, limit?: number) {
    const payload = { ...q, ...(limit !== undefined && { limit }) };
    // Biggest first is documented; the order among equal counts is not, so rows are compared as
    // a set. Under a limit that cuts through equal counts, which of the tied outcomes come back
    // is not documented either: those are compared by their counts only.
    const all = [...want].sort((x, y) => y[1] - x[1]);
    const kept = limit === undefined ? all : all.slice(0, limit);
    const cut = limit !== undefined && limit < all.length ? all[limit][1] : undefined;
    const tied = new Set(all.filter(([, n]) => n === cut).map(([outcome]) => String(outcome)));
    const shape = (rows: [string, number][], ordered: boolean) => ({
      ordered,
      rows: rows.length,
      byOutcome: Object.fromEntries(rows.filter(([o]) => !tied.has(o))),
      tiedCounts: rows.filter(([o]) => tied.has(o)).map(([, n]) => n),
    });
    const ask = async () => {
      const rows = (await this.call('POST', '/interactions/counts-by-outcome', payload)) as {
        outcome: string | null;
        count: number;
      }[];
      const ordered = rows.every((r, i) => i === 0 || rows[i - 1].count >= r.count);
      return shape(
        rows.map((r) => [String(r.outcome), r.count]),
        ordered,
      );
    };
    const expected = shape(
      kept.map(([o, n]) => [String(o), n]),
      true,
    );
    await this.agree('counts-by-outcome', payload, ask, expected);
  }

  async compareCounts() {
    // Two of the five types and one of the two apps, not all of them: the whole matrix for each
    // would double the file's time; seeds and phases pick different ones.
    const filters: { interactionId?: string; appId?: string }[] = [
      {},
      ...this.rng
        .shuffle([...INTERACTIONS])
        .slice(0, 2)
        .map((interactionId) => ({ interactionId })),
      { appId: this.rng.pick(APPS) },
    ];
    for (const filter of filters) {
      for (const dedupeLatest of [false, true]) {
        for (const idField of ID_FIELDS) {
          for (const shape of ['none', 'from', 'to', 'both'] as const) {
            const w = this.window(shape);
            const q = {
              ...filter,
              ...(w.start !== undefined && { from: iso(w.start) }),
              ...(w.end !== undefined && { to: iso(w.end) }),
              // Defaults left out now and then: dedupeLatest false, idField userId.
              ...((dedupeLatest || this.rng.chance(0.5)) && { dedupeLatest }),
              ...((idField === 'contactId' || this.rng.chance(0.5)) && { idField }),
            };
            const want = countsByOutcome(this.model.rows, {
              ...filter,
              from: w.start,
              to: w.end,
              dedupeLatest,
              idField,
            });
            await this.counts(q, want);
          }
        }
      }
    }
    for (const dedupeLatest of [false, true]) {
      const w = this.randomWindow(false);
      const q = {
        dedupeLatest,
        ...(w.start !== undefined && { from: iso(w.start) }),
        ...(w.end !== undefined && { to: iso(w.end) }),
      };
      const want = countsByOutcome(this.model.rows, { from: w.start, to: w.end, dedupeLatest, idField: 'userId' });
      for (const limit of [1, 2, 3]) await this.counts(q, want, limit);
    }
  }

  /** Request mappings over some of a journey's steps, in every form the docs list. */
  private overrides(journey: Journey): Mapping[] {
    const stepIds = resolveSteps(journey.data, []).map((s) => s.stepId);
    const mappings: Mapping[] = [];
    for (const stepId of stepIds) {
      if (!this.rng.chance(0.45)) continue;
      const r = this.rng.next();
      if (r < 0.2) mappings.push({ stepId });
      else if (r < 0.45) mappings.push({ stepId, outcome: this.rng.pick(NAMED_OUTCOMES) });
      else if (r < 0.7) mappings.push({ stepId, interactionId: this.rng.pick(INTERACTIONS) });
      else
        mappings.push({ stepId, interactionId: this.rng.pick(INTERACTIONS), outcome: this.rng.pick(NAMED_OUTCOMES) });
    }
    return this.rng.shuffle(mappings);
  }

  /** A mapping with an interaction for each step: for steps that have none of their own. */
  private fullMappings(stepIds: string[]): Mapping[] {
    return stepIds.map((stepId) =>
      this.rng.chance(0.5)
        ? { stepId, interactionId: this.rng.pick(INTERACTIONS) }
        : { stepId, interactionId: this.rng.pick(INTERACTIONS), outcome: this.rng.pick(NAMED_OUTCOMES) },
    );
  }

  private async funnelReport(journey: Journey, w: Period, idField: IdField, mappings: Mapping[], sendIdField = true) {
    const payload = {
      stepMappings: mappings,
      ...(sendIdField && { idField }),
      ...(w.start !== undefined && { periodStart: iso(w.start) }),
      ...(w.end !== undefined && { periodEnd: iso(w.end) }),
    };
    const steps = resolveSteps(journey.data, mappings);
    const f = funnel(this.model.rows, journey.id, steps, idField, w);
    const want = {
      journeyId: journey.id,
      periodStart: w.start === undefined ? null : iso(w.start),
      periodEnd: w.end === undefined ? null : iso(w.end),
      idField,
      steps: steps.map((s, k) => {
        const n = stepNumbers(f.steps[k]);
        return {
          ...s,
          enteredCount: n.entered,
          completedCount: n.completed,
          conversionRate: n.entered === 0 ? 0 : n.completed / n.entered,
          avgTimeToComplete: n.avgSeconds,
        };
      }),
    };
    await this.agree(
      `funnel-report of ${journey.id}`,
      payload,
      () => this.call('POST', `/journeys.analytics/${journey.id}/funnel-report`, payload),
      want,
    );
  }

  private async stats(journey: Journey, w: Period, idField: IdField, mappings: Mapping[] | undefined) {
    const stepIds = resolveSteps(journey.data, mappings ?? []).map((s) => s.stepId);
    const finalStepId = this.rng.chance(0.7) ? this.rng.pick(stepIds) : undefined;
    const outcome = this.rng.chance(0.3) ? this.rng.pick(NAMED_OUTCOMES) : undefined;
    const payload = {
      idField,
      ...(mappings !== undefined && { stepMappings: mappings }),
      ...(finalStepId !== undefined && { finalStepId }),
      ...(outcome !== undefined && { outcome }),
      ...(w.start !== undefined && { from: iso(w.start) }),
      ...(w.end !== undefined && { to: iso(w.end) }),
    };
    const steps = resolveSteps(journey.data, mappings ?? [], outcome);
    const f = funnel(this.model.rows, journey.id, steps, idField, w);
    const stepStats = steps.map((s, k) => {
      const n = stepNumbers(f.steps[k]);
      return { stepId: s.stepId, entered: n.entered, completed: n.completed, pending: n.entered - n.completed };
    });
    const want: Record<string, unknown> = { journeyId: journey.id, totalEntered: f.totalEntered, stepStats };
    if (finalStepId !== undefined) {
      const completed = stepStats.find((x) => x.stepId === finalStepId)!.completed;
      Object.assign(want, { completed, currentlyActive: f.totalEntered - completed });
    }
    const ask = async () => {
      const { lastUpdated, ...rest } = (await this.call(
        'POST',
        `/journeys.analytics/${journey.id}/stats`,
        payload,
      )) as Record<string, unknown>;
      return {
        ...rest,
        lastUpdatedIsAnInstant: typeof lastUpdated === 'string' && !Number.isNaN(Date.parse(lastUpdated)),
      };
    };
    await this.agree(`stats of ${journey.id}`, payload, ask, { ...want, lastUpdatedIsAnInstant: true });
  }

  private async recipients(
    journey: Journey,
    stepId: string,
    q: { status: RecipientStatus; idField: IdField; interactionId?: string; outcome?: string; limit?: number },
    w: Period,
  ) {
    const payload = {
      ...q,
      ...(w.start !== undefined && { from: iso(w.start) }),
      ...(w.end !== undefined && { to: iso(w.end) }),
    };
    const want = recipients(this.model.rows, journey.id, journey.data, stepId, { ...q, ...w, limit: q.limit ?? 1000 });
    await this.agree(
      `recipients of ${journey.id} step ${stepId}`,
      payload,
      () => this.call('POST', `/journeys.analytics/${journey.id}/steps/${stepId}/recipients`, payload),
      want,
    );
  }

  /** Unwindowed, then random periods of each shape; own mappings and random overrides; both identities. */
  async compareJourneyJ() {
    const periods: Period[] = [{}, this.window('from', true), this.window('to', true), this.window('both', true)];
    for (const w of periods) {
      for (const idField of ID_FIELDS) {
        await this.funnelReport(this.j, w, idField, [], idField === 'contactId' || this.rng.chance(0.5));
        await this.funnelReport(this.j, w, idField, this.overrides(this.j));
        await this.stats(this.j, w, idField, this.rng.chance(0.5) ? undefined : []);
        await this.stats(this.j, w, idField, this.overrides(this.j));
      }
    }
  }

  async compareOtherJourneys() {
    for (const idField of ID_FIELDS) {
      for (const w of [this.randomWindow(), this.randomWindow()]) {
        // J2: steps without config, every one mapped by the request.
        await this.funnelReport(this.j2, w, idField, this.fullMappings(['a', 'b', 'c']));
        await this.stats(this.j2, w, idField, this.fullMappings(['a', 'b', 'c']));
        // J4: no steps; the request's mappings, in their order, are the steps.
        const bare = this.fullMappings(this.rng.shuffle(['p', 'q', 'r']).slice(0, 1 + this.rng.int(3)));
        await this.funnelReport(this.j4, w, idField, bare);
        await this.recipients(
          this.j4,
          'solo',
          { status: this.rng.pick(STATUSES), idField, interactionId: this.rng.pick(INTERACTIONS) },
          w,
        );
        // J3: its unmapped second step mapped by the request for the funnel.
        await this.funnelReport(this.j3, w, idField, this.fullMappings(['k2']));
        await this.recipients(this.j3, 'k1', { status: this.rng.pick(STATUSES), idField }, w);
        await this.recipients(this.j3, 'k2', { status: 'entered', idField }, w);
      }
      // J3 step 3, after a step without a mapping: taken on its own, with its own mapping or the request's.
      for (const status of STATUSES) {
        for (const over of [
          {},
          { outcome: this.rng.pick(NAMED_OUTCOMES) },
          { interactionId: this.rng.pick(INTERACTIONS) },
          { interactionId: this.rng.pick(INTERACTIONS), outcome: this.rng.pick(NAMED_OUTCOMES) },
        ]) {
          await this.recipients(this.j3, 'k3', { status, idField, ...over }, this.randomWindow());
        }
      }
    }
  }

  async compareRecipientsOfJ() {
    const stepIds = resolveSteps(this.j.data, []).map((s) => s.stepId);
    for (const stepId of stepIds) {
      for (const status of STATUSES) {
        for (const idField of ID_FIELDS) {
          await this.recipients(this.j, stepId, { status, idField, limit: 10_000 }, {});
          await this.recipients(this.j, stepId, { status, idField, limit: 1 + this.rng.int(4) }, this.randomWindow());
        }
      }
      // The step's mapping taken from the request, over its own.
      const over = this.rng.chance(0.5)
        ? { outcome: this.rng.pick(NAMED_OUTCOMES) }
        : { interactionId: this.rng.pick(INTERACTIONS), outcome: this.rng.pick(NAMED_OUTCOMES) };
      await this.recipients(this.j, stepId, { status: this.rng.pick(STATUSES), idField: 'userId', ...over }, {});
    }
  }
}
