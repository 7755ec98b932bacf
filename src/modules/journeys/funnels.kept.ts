/**
 * Which funnel options maintained progress can answer, and the reading of it: the trends of a
 * journey's ordered funnel with at most a whole-funnel window (journeys.periods.repository.ts
 * has the rule by which a progress row answers for its recipient). Breakdowns do not change
 * the trends' counts; step windows, exclusions, other orderings and ad-hoc or link funnels
 * need each recipient's events, and are walked as before.
 */
import type { Queryable } from '../../db/index.ts';
import type { WalkSpec } from './funnels.engine.ts';
import type { FunnelDef, FunnelScope } from './funnels.service.ts';
import { keptTrendBuckets, type TrendBuckets } from './journeys.periods.repository.ts';
import * as progressRepo from './journeys.progress.repository.ts';
import { followsKept } from './journeys.steps.ts';

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
  const plain =
    spec.journey &&
    !spec.fromClick &&
    spec.ordering === 'ordered' &&
    spec.exclusions.length === 0 &&
    spec.stepWindowMs.every((w) => w === undefined);
  if (!plain || def.journeyId === undefined) return undefined;
  const steps = def.steps.map((s) => ({ stepId: s.stepId, interactionId: s.interactionId, outcome: s.outcome ?? '' }));
  if (def.steps.some((s) => s.outcome === null)) return undefined;
  const state = await progressRepo.findProgressState(tx, collectionId, def.journeyId);
  if (!followsKept(state, steps)) return undefined;
  return keptTrendBuckets(tx, collectionId, {
    journeyId: def.journeyId,
    idField: scope.idField,
    version: state.version,
    start: scope.start,
    end: scope.end,
    stepCount: def.steps.length,
    windowMs: spec.windowMs,
    interval,
    shiftMs,
  });
}
