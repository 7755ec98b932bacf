/**
 * Which funnel options maintained progress can answer, and the reading of it: a journey's
 * ordered funnel with at most a whole-funnel window (journeys.periods.repository.ts has the
 * rule by which a progress row answers for its recipient). Its trends are counted per bucket
 * in the database; its report, people and exports take the rows as walked recipients. Step
 * windows, exclusions, other orderings, breakdowns (the events' properties) and ad-hoc or link
 * funnels need each recipient's events, and are walked as before; so are the recipients a row
 * cannot answer for.
 */
import type { Queryable } from '../../db/index.ts';
import type { IdField } from '../interactions/index.ts';
import type { Walked, WalkSpec } from './funnels.engine.ts';
import { keptChains, keptTrendBuckets, type TrendBuckets } from './journeys.periods.repository.ts';
import * as progressRepo from './journeys.progress.repository.ts';
import { followsKept } from './journeys.steps.ts';

/** The funnel as funnels.service.ts defines it (`FunnelDef`), what this file reads of it. */
interface FunnelDef {
  journeyId?: string;
  steps: { stepId: string; interactionId: string; outcome: string | null }[];
}

/** The request's scope (funnels.service.ts `FunnelScope`), what this file reads of it. */
interface FunnelScope {
  idField: IdField;
  start?: string;
  end?: string;
  breakdown?: unknown;
}

/** The ready progress version that answers for the funnel's options, if one does. */
async function keptVersion(
  tx: Queryable,
  collectionId: string,
  def: FunnelDef,
  spec: WalkSpec,
): Promise<{ journeyId: string; version: number } | undefined> {
  const plain =
    spec.journey &&
    !spec.fromClick &&
    spec.ordering === 'ordered' &&
    spec.exclusions.length === 0 &&
    spec.stepWindowMs.every((w) => w === undefined);
  if (!plain || def.journeyId === undefined || def.steps.some((s) => s.outcome === null)) return undefined;
  const steps = def.steps.map((s) => ({ stepId: s.stepId, interactionId: s.interactionId, outcome: s.outcome ?? '' }));
  const state = await progressRepo.findProgressState(tx, collectionId, def.journeyId);
  return followsKept(state, steps) ? { journeyId: def.journeyId, version: state.version } : undefined;
}

/**
 * The trends' counts of one period from progress rows, and the recipients left to walk;
 * undefined when progress cannot answer (the options, the steps, or no ready version).
 */
export async function keptTrend(
  tx: Queryable,
  collectionId: string,
  def: FunnelDef,
  scope: FunnelScope & { start: string; end: string },
  spec: WalkSpec,
  interval: 'day' | 'week',
  shiftMs: number,
): Promise<TrendBuckets | undefined> {
  const kept = await keptVersion(tx, collectionId, def, spec);
  if (!kept) return undefined;
  return keptTrendBuckets(tx, collectionId, {
    ...kept,
    idField: scope.idField,
    start: scope.start,
    end: scope.end,
    stepCount: def.steps.length,
    windowMs: spec.windowMs,
    interval,
    shiftMs,
  });
}

/**
 * The period's recipients as walked, from progress rows: a row whose chain (cut at the
 * period's end) fits in the window of its first step-1 event is its recipient's best attempt,
 * as the walk would find it; the rest (chains beyond the window, and the straddlers) are left
 * to walk. Undefined when progress cannot answer; never with a breakdown (values are the
 * events').
 */
export async function keptWalked(
  tx: Queryable,
  collectionId: string,
  def: FunnelDef,
  scope: FunnelScope,
  spec: WalkSpec,
): Promise<{ rows: Walked[]; walk: string[] } | undefined> {
  if (scope.breakdown) return undefined;
  const kept = await keptVersion(tx, collectionId, def, spec);
  if (!kept) return undefined;
  const rows: Walked[] = [];
  const walk: string[] = [];
  const windowMs = spec.windowMs;
  const { ready, straddlers } = await keptChains(
    tx,
    collectionId,
    { ...kept, idField: scope.idField, start: scope.start, end: scope.end, stepCount: def.steps.length },
    (batch) => {
      for (const c of batch) {
        const m = c.completed.length;
        if (m > 0 && windowMs !== undefined && c.completed[m - 1] - c.completed[0] > windowMs) walk.push(c.rid);
        else {
          rows.push({
            rid: c.rid,
            counted: true,
            reached: m,
            enteredAt: c.entered,
            times: c.completed,
            first: null,
            last: null,
          });
        }
      }
    },
  );
  if (!ready) return undefined;
  return { rows, walk: [...walk, ...straddlers] };
}
