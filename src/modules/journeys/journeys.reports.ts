/**
 * A journey's analytics, and ad-hoc funnels: the funnel report and stats (from maintained
 * progress when it can answer, else from the events), a step's recipients, and the funnel
 * options' path (windows, ordering, exclusions, breakdowns, trends, people: funnels.service.ts).
 * The semantics are written out in docs/journeys.md.
 */
import type { Analytics, Db, Queryable, ReadSignal } from '../../db/index.ts';
import type { Analysed, AnalyticsSource } from '../../platform/analytics.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { openPeopleExport } from './funnels.export.ts';
import { type FunnelDef, type FunnelResult, type FunnelsService, hasOptions } from './funnels.service.ts';
import { beginsWithLink, linkFunnelCounts } from './journeys.link-steps.ts';
import * as periodsRepo from './journeys.periods.repository.ts';
import * as progressRepo from './journeys.progress.repository.ts';
import * as repo from './journeys.repository.ts';
import type {
  AdHocStep,
  FunnelPeopleRequest,
  FunnelPeopleResponse,
  FunnelQueryRequest,
  FunnelQueryResponse,
  FunnelTrendsRequest,
  FunnelTrendsResponse,
  JourneyFunnelReportRequest,
  JourneyFunnelReportResponse,
  JourneyPeopleRequest,
  JourneyStatsRequest,
  JourneyStatsResponse,
  JourneyStepRecipientsRequest,
  JourneyTrendsRequest,
  PeopleExportPayload,
  StepMapping,
} from './journeys.schema.ts';
import {
  DEFAULT_OUTCOME,
  type DefinedStep,
  definedSteps,
  followsKept,
  type KeptState,
  resolveSteps,
} from './journeys.steps.ts';

/** Each step's figures beside its id and mapping (outcome absent: any outcome). */
function withSteps(def: FunnelDef, figures: FunnelResult['steps']) {
  return def.steps.map((s, k) => ({
    stepId: s.stepId,
    interactionId: s.interactionId,
    ...(s.outcome !== null && { outcome: s.outcome }),
    ...figures[k],
  }));
}

/**
 * A request's funnel options as funnels.service.ts takes them: the id field defaulted, the
 * period as `start` and `end`.
 */
function optionsOf<Q extends { idField?: repo.FunnelInput['idField']; periodStart?: string; periodEnd?: string }>(
  q: Q,
) {
  const start: Q['periodStart'] = q.periodStart;
  const end: Q['periodEnd'] = q.periodEnd;
  return { ...q, idField: q.idField ?? ('userId' as const), start, end };
}

function checkWindow(start?: string, end?: string) {
  if (start && end && Date.parse(start) >= Date.parse(end)) throw badRequest('The window start must be before its end');
}

/** An ad-hoc funnel's steps: ids default to step1, step2, …; one id twice is a 400. */
function adHocDef(steps: AdHocStep[]): FunnelDef {
  const seen = new Set<string>();
  return {
    steps: steps.map((s, k) => {
      const stepId = s.stepId ?? `step${k + 1}`;
      if (seen.has(stepId))
        throw badRequest(`steps[${k}]: step id "${stepId}" is used twice`, { field: `steps[${k}]` });
      seen.add(stepId);
      return { stepId, interactionId: s.interactionId, outcome: s.outcome ?? null };
    }),
  };
}

export class JourneyReports {
  constructor(
    private readonly db: Db,
    /**
     * Funnel queries join and sort many rows: the platform's analytics transaction (a larger
     * work_mem, shared with the interaction queries over the same events).
     */
    private readonly analytics: Analytics,
    /** The funnel options' path (issue 29): windows, ordering, exclusions, breakdowns, trends, people. */
    private readonly funnels: FunnelsService,
  ) {}

  async funnelReport(
    collectionId: string,
    journeyId: string,
    q: JourneyFunnelReportRequest,
    signal?: ReadSignal,
  ): Promise<Analysed<JourneyFunnelReportResponse>> {
    const idField = q.idField ?? 'userId';
    if (hasOptions(q)) return this.optionsReport(collectionId, journeyId, q, signal);
    const { steps, counts, source } = await this.funnel(
      collectionId,
      journeyId,
      { stepMappings: q.stepMappings, idField, start: q.periodStart, end: q.periodEnd },
      undefined,
      signal,
    );
    const answer: JourneyFunnelReportResponse = {
      journeyId,
      periodStart: q.periodStart ? new Date(q.periodStart).toISOString() : null,
      periodEnd: q.periodEnd ? new Date(q.periodEnd).toISOString() : null,
      idField,
      steps: steps.map((s, k) => {
        const c = counts.steps[k];
        return {
          ...s,
          enteredCount: c.entered,
          completedCount: c.completed,
          conversionRate: c.entered === 0 ? 0 : c.completed / c.entered,
          avgTimeToComplete: c.avg_seconds,
        };
      }),
    };
    return { answer, source };
  }

  /** A journey's funnel under the request's options (funnels.service.ts). */
  private async optionsReport(
    collectionId: string,
    journeyId: string,
    q: JourneyFunnelReportRequest,
    signal?: ReadSignal,
  ): Promise<Analysed<JourneyFunnelReportResponse>> {
    const def = await this.journeyDef(collectionId, journeyId, q.stepMappings);
    const options = optionsOf(q);
    const r = await this.funnels.report(collectionId, def, options, signal);
    const answer: JourneyFunnelReportResponse = {
      journeyId,
      periodStart: q.periodStart ? new Date(q.periodStart).toISOString() : null,
      periodEnd: q.periodEnd ? new Date(q.periodEnd).toISOString() : null,
      idField: options.idField,
      ordering: r.ordering,
      steps: withSteps(def, r.steps) as JourneyFunnelReportResponse['steps'],
    };
    if (r.breakdown) {
      answer.breakdown = r.breakdown.map((g) => ({
        ...g,
        steps: withSteps(def, g.steps) as JourneyFunnelReportResponse['steps'],
      }));
    }
    return { answer, source: r.source };
  }

  /** A journey's steps under the request's mappings, as a funnel of the options' path. */
  private async journeyDef(collectionId: string, journeyId: string, mappings?: StepMapping[]): Promise<FunnelDef> {
    const journey = await this.row(collectionId, journeyId);
    return { journeyId, steps: resolveSteps(journey.data, mappings) };
  }

  /** An ad-hoc funnel (steps in the request, no journey). */
  async adHocQuery(collectionId: string, q: FunnelQueryRequest, signal?: ReadSignal): Promise<FunnelQueryResponse> {
    const def = adHocDef(q.steps);
    const options = optionsOf(q);
    const r = await this.funnels.report(collectionId, def, options, signal);
    const answer: FunnelQueryResponse = {
      periodStart: q.periodStart ? new Date(q.periodStart).toISOString() : null,
      periodEnd: q.periodEnd ? new Date(q.periodEnd).toISOString() : null,
      idField: options.idField,
      ordering: r.ordering,
      steps: withSteps(def, r.steps),
    };
    if (r.breakdown) answer.breakdown = r.breakdown.map((g) => ({ ...g, steps: withSteps(def, g.steps) }));
    return answer;
  }

  async journeyTrends(
    collectionId: string,
    journeyId: string,
    q: JourneyTrendsRequest,
    signal?: ReadSignal,
  ): Promise<Analysed<FunnelTrendsResponse>> {
    const def = await this.journeyDef(collectionId, journeyId, q.stepMappings);
    return this.funnels.trends(collectionId, def, optionsOf(q), signal);
  }

  async adHocTrends(
    collectionId: string,
    q: FunnelTrendsRequest,
    signal?: ReadSignal,
  ): Promise<Analysed<FunnelTrendsResponse>> {
    return this.funnels.trends(collectionId, adHocDef(q.steps), optionsOf(q), signal);
  }

  async journeyPeople(
    collectionId: string,
    journeyId: string,
    q: JourneyPeopleRequest,
    signal?: ReadSignal,
  ): Promise<FunnelPeopleResponse> {
    const def = await this.journeyDef(collectionId, journeyId, q.stepMappings);
    return this.funnels.people(collectionId, def, optionsOf(q), signal);
  }

  /** The funnel of a people export's payload: a journey's (404 when gone) or ad-hoc. */
  exportFunnel = (collectionId: string, p: PeopleExportPayload): Promise<FunnelDef> =>
    p.journeyId !== undefined
      ? this.journeyDef(collectionId, p.journeyId, p.stepMappings)
      : Promise.resolve(adHocDef(p.steps ?? []));

  /** A finished people export's file (journeys.peopleExport). */
  openPeopleExport(collectionId: string, jobId: number) {
    return openPeopleExport(this.db, collectionId, jobId);
  }

  async adHocPeople(collectionId: string, q: FunnelPeopleRequest, signal?: ReadSignal): Promise<FunnelPeopleResponse> {
    return this.funnels.people(collectionId, adHocDef(q.steps), optionsOf(q), signal);
  }

  async stats(
    collectionId: string,
    journeyId: string,
    q: JourneyStatsRequest,
    signal?: ReadSignal,
  ): Promise<Analysed<JourneyStatsResponse>> {
    let finalIndex = -1;
    const { steps, counts, source } = await this.funnel(
      collectionId,
      journeyId,
      { stepMappings: q.stepMappings, outcome: q.outcome, idField: q.idField ?? 'userId', start: q.from, end: q.to },
      (resolved) => {
        if (q.finalStepId === undefined) return;
        finalIndex = resolved.findIndex((s) => s.stepId === q.finalStepId);
        if (finalIndex < 0) throw badRequest(`finalStepId "${q.finalStepId}" is not a step of this journey`);
      },
      signal,
    );
    const res: JourneyStatsResponse = {
      journeyId,
      totalEntered: counts.totalEntered,
      lastUpdated: new Date().toISOString(),
      stepStats: steps.map((s, k) => ({
        stepId: s.stepId,
        entered: counts.steps[k].entered,
        completed: counts.steps[k].completed,
        pending: counts.steps[k].entered - counts.steps[k].completed,
      })),
    };
    if (finalIndex >= 0) {
      res.completed = counts.steps[finalIndex].completed;
      res.currentlyActive = counts.totalEntered - res.completed;
    }
    return { answer: res, source };
  }

  /**
   * The funnel of a journey over a window (funnel report and stats): the window checked, the
   * journey's steps under the request's mappings (`check` refuses what its caller cannot use,
   * before anything is counted), and their counts.
   */
  private async funnel(
    collectionId: string,
    journeyId: string,
    w: {
      stepMappings?: StepMapping[];
      outcome?: string;
      idField: repo.FunnelInput['idField'];
      start?: string;
      end?: string;
    },
    check?: (steps: repo.ResolvedStep[]) => void,
    signal?: ReadSignal,
  ): Promise<{
    steps: repo.ResolvedStep[];
    counts: Awaited<ReturnType<typeof repo.funnelCounts>>;
    source: AnalyticsSource;
  }> {
    checkWindow(w.start, w.end);
    const journey = await this.row(collectionId, journeyId);
    const steps = resolveSteps(journey.data, w.stepMappings, w.outcome ?? DEFAULT_OUTCOME);
    check?.(steps);
    if (beginsWithLink(steps)) {
      // A funnel from a link's clicks to conversions (journeys.link-steps.ts): from the clicks.
      const f = { journeyId, steps, idField: w.idField, start: w.start, end: w.end };
      const counts = await this.analytics.read(collectionId, (tx) => linkFunnelCounts(tx, collectionId, f), signal);
      return { steps, counts, source: 'events' };
    }
    const { answer: counts, source } = await this.funnelCounts(
      collectionId,
      { journeyId, steps, idField: w.idField, start: w.start, end: w.end },
      signal,
    );
    return { steps, counts, source };
  }

  /**
   * An answer from maintained progress when it can give one (the journey's own steps or the
   * first of them, progress ready, `kept` answers, and no period unless `periods` says the
   * kept answer takes one), else from the events.
   */
  private async keptOrEvents<T>(
    collectionId: string,
    f: repo.FunnelInput,
    kept: (state: KeptState) => Promise<T | undefined>,
    events: (tx: Queryable) => Promise<T>,
    { periods = false, signal }: { periods?: boolean; signal?: ReadSignal } = {},
  ): Promise<Analysed<T>> {
    if (periods || (f.start === undefined && f.end === undefined)) {
      const state = await progressRepo.findProgressState(this.db, collectionId, f.journeyId);
      if (followsKept(state, f.steps)) {
        const answer = await kept(state);
        if (answer) return { answer, source: 'maintained' };
      }
    }
    return { answer: await this.analytics.read(collectionId, events, signal), source: 'events' };
  }

  /**
   * Funnel counts, from maintained progress when it can answer: its counters without a period;
   * with one, its rows of the period's entrants (and the events of those who entered before
   * it and came back), in an analytics transaction like the events' read.
   */
  private funnelCounts(
    collectionId: string,
    f: repo.FunnelInput,
    signal?: ReadSignal,
  ): Promise<Analysed<{ totalEntered: number; steps: repo.StepCounts[] }>> {
    return this.keptOrEvents(
      collectionId,
      f,
      (state) =>
        f.start === undefined && f.end === undefined
          ? progressRepo.keptFunnelCounts(this.db, collectionId, f.journeyId, state.version, f.idField, f.steps.length)
          : this.analytics.read(
              collectionId,
              (tx) => periodsRepo.keptPeriodFunnelCounts(tx, collectionId, { ...f, version: state.version }),
              signal,
            ),
      (tx) => repo.funnelCounts(tx, collectionId, f),
      { periods: true, signal },
    );
  }

  /** stepRecipients, from maintained progress when it can answer. */
  private chainRecipients(
    collectionId: string,
    f: repo.FunnelInput,
    status: 'entered' | 'completed' | 'pending',
    limit: number,
    signal?: ReadSignal,
  ): Promise<Analysed<string[]>> {
    return this.keptOrEvents(
      collectionId,
      f,
      (state) =>
        progressRepo.keptRecipients(
          this.db,
          collectionId,
          f.journeyId,
          { version: state.version, stepCount: state.steps.length },
          f.idField,
          f.steps.length - 1,
          status,
          limit,
        ),
      (tx) => repo.stepRecipients(tx, collectionId, f, status, limit),
      { signal },
    );
  }

  /**
   * Recipient ids of one step. Its mapping is the request's `interactionId` / `outcome` over
   * the step's own; a request naming an interaction brings its own outcome (default success:
   * "for completed/pending, interactionId is required; outcome defaults to 'success'", as the
   * original documents the call). How the step is reached:
   * - every step before it has a mapping (or it is the first step, or the journey defines no
   *   steps and the request's step is taken as its only one): the ordered funnel, as stats and
   *   the funnel report count it;
   * - a step before it has no mapping: the chain cannot be followed, so the step is taken on
   *   its own (entered = entered the journey; completed = entered and has a matching event in
   *   the window; pending = entered and has none), which is all a client of the original sends.
   * `entered` needs no mapping of this step.
   */
  async recipients(
    collectionId: string,
    journeyId: string,
    stepId: string,
    q: JourneyStepRecipientsRequest,
    signal?: ReadSignal,
  ): Promise<Analysed<string[]>> {
    checkWindow(q.from, q.to);
    const journey = await this.row(collectionId, journeyId);
    const defined = definedSteps(journey.data);
    if (
      defined[0]?.interactionId &&
      beginsWithLink([{ stepId: defined[0].stepId, interactionId: defined[0].interactionId }])
    ) {
      throw badRequest(
        'Step recipients are not answered for a journey that begins with a link’s clicks (its recipients are clicks); use the funnel report or stats',
      );
    }
    const index = defined.findIndex((s) => s.stepId === stepId);
    if (defined.length > 0 && index < 0) throw notFound('Journey step');
    const own = defined[index] as DefinedStep | undefined;
    const status = q.status ?? 'completed';
    const interactionId = q.interactionId ?? own?.interactionId;
    const outcome = (q.interactionId !== undefined ? q.outcome : (q.outcome ?? own?.outcome)) ?? DEFAULT_OUTCOME;
    if (status !== 'entered' && !interactionId) {
      throw badRequest(`Step "${stepId}" has no interaction mapping; send interactionId`, { stepId });
    }
    const base = { journeyId, idField: q.idField ?? 'userId', start: q.from, end: q.to } as const;
    const limit = q.limit ?? 1000;
    const earlier = defined.slice(0, Math.max(index, 0));
    const chain: repo.ResolvedStep[] = [];
    for (const s of earlier) {
      if (!s.interactionId) {
        const match = interactionId ? { interactionId, outcome } : undefined;
        const answer = await this.analytics.read(
          collectionId,
          (tx) => repo.standaloneStepRecipients(tx, collectionId, { ...base, match }, status, limit),
          signal,
        );
        return { answer, source: 'events' };
      }
      chain.push({ stepId: s.stepId, interactionId: s.interactionId, outcome: s.outcome ?? DEFAULT_OUTCOME });
    }
    if (!interactionId) {
      // Entered this step = completed the one before it (or entered the journey, for the first).
      if (chain.length === 0) {
        const answer = await this.analytics.read(
          collectionId,
          (tx) => repo.standaloneStepRecipients(tx, collectionId, base, 'entered', limit),
          signal,
        );
        return { answer, source: 'events' };
      }
      return this.chainRecipients(collectionId, { ...base, steps: chain }, 'completed', limit, signal);
    }
    chain.push({ stepId, interactionId, outcome });
    return this.chainRecipients(collectionId, { ...base, steps: chain }, status, limit, signal);
  }

  private async row(collectionId: string, id: string): Promise<repo.JourneyRow> {
    const row = await repo.findJourney(this.db, collectionId, id);
    if (!row) throw notFound('Journey');
    return row;
  }
}
