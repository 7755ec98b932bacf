/**
 * Which funnel options maintained progress can answer, and the reading of it: a journey's
 * ordered funnel with at most a whole-funnel window, broken down at most by a property the
 * journey declares (`data.breakdownProperties`: its rows keep those values, migration 0920).
 * journeys.periods.repository.ts has the rule by which a progress row answers for its
 * recipient. Its trends are counted per bucket in the database; its report reads the rows'
 * chains packed per breakdown value into figures (no object per recipient); people and
 * exports take the rows as walked recipients. Step windows, exclusions, other orderings,
 * breakdowns by other properties and ad-hoc or link funnels need each recipient's events, and
 * are walked as before; so are the recipients a row cannot answer for.
 */
import type { Queryable } from '../../db/index.ts';
import type { IdField } from '../interactions/index.ts';
import type { Walked, WalkSpec } from './funnels.engine.ts';
import { FigureAccumulator } from './funnels.figures.ts';
import {
  eachPackedChain,
  keptChains,
  keptPacked,
  keptTrendBuckets,
  type TouchValue,
  type TrendBuckets,
} from './journeys.periods.repository.ts';
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
  breakdown?: { property: string; attribution?: 'first' | 'last' };
}

/**
 * The ready progress version that answers for the funnel's options, if one does, with where
 * the breakdown's values are in its rows.
 */
async function keptVersion(
  tx: Queryable,
  collectionId: string,
  def: FunnelDef,
  spec: WalkSpec,
  breakdown?: FunnelScope['breakdown'],
): Promise<{ journeyId: string; version: number; touch?: TouchValue } | undefined> {
  const plain =
    spec.journey &&
    !spec.fromClick &&
    spec.ordering === 'ordered' &&
    spec.exclusions.length === 0 &&
    spec.stepWindowMs.every((w) => w === undefined);
  if (!plain || def.journeyId === undefined || def.steps.some((s) => s.outcome === null)) return undefined;
  const steps = def.steps.map((s) => ({ stepId: s.stepId, interactionId: s.interactionId, outcome: s.outcome ?? '' }));
  const state = await progressRepo.findProgressState(tx, collectionId, def.journeyId);
  if (!followsKept(state, steps)) return undefined;
  if (!breakdown) return { journeyId: def.journeyId, version: state.version };
  const index = state.props?.indexOf(breakdown.property) ?? -1;
  if (index < 0) return undefined;
  const touch = { index, of: state.props?.length ?? 0, attribution: breakdown.attribution ?? 'first' };
  return { journeyId: def.journeyId, version: state.version, touch };
}

/**
 * A row's value of the breakdown's property at chain position `position` (0: the entry, first
 * touch; k: last touch after k steps): migration 0920's layout, whose positions after the last
 * stored one repeat it.
 */
function touchAt(touch: (string | null)[] | null | undefined, t: TouchValue, position: number): string | null {
  if (!touch) return null;
  return touch[Math.min(position, touch.length / t.of - 1) * t.of + t.index] ?? null;
}

/**
 * The funnel report's figures from progress rows, per breakdown value (one group, value null,
 * without a breakdown), and the recipients left to walk (chains beyond the window, the
 * straddlers); undefined when progress cannot answer.
 */
export async function keptFigures(
  tx: Queryable,
  collectionId: string,
  def: FunnelDef,
  scope: FunnelScope,
  spec: WalkSpec,
): Promise<{ groups: Map<string | null, FigureAccumulator>; walk: string[] } | undefined> {
  const kept = await keptVersion(tx, collectionId, def, spec, scope.breakdown);
  if (!kept) return undefined;
  const stepCount = def.steps.length;
  const packed = await keptPacked(tx, collectionId, {
    ...kept,
    idField: scope.idField,
    start: scope.start,
    end: scope.end,
    stepCount,
    windowMs: spec.windowMs,
  });
  if (!packed) return undefined;
  const groups = new Map<string | null, FigureAccumulator>();
  for (const g of packed.groups) {
    const into = FigureAccumulator.of(groups, g.value, stepCount, spec.journey);
    into.addUnreached(g.unreached);
    eachPackedChain(g.chains, stepCount, packed.endUs, (entered, times, reached) => into.add(reached, entered, times));
  }
  return { groups, walk: packed.walk };
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
 * to walk. Undefined when progress cannot answer (a breakdown by a property the journey does
 * not declare among them).
 */
export async function keptWalked(
  tx: Queryable,
  collectionId: string,
  def: FunnelDef,
  scope: FunnelScope,
  spec: WalkSpec,
): Promise<{ rows: Walked[]; walk: string[] } | undefined> {
  const kept = await keptVersion(tx, collectionId, def, spec, scope.breakdown);
  if (!kept) return undefined;
  const touch = kept.touch;
  const rows: Walked[] = [];
  const walk: string[] = [];
  const windowMs = spec.windowMs;
  const { ready, straddlers } = await keptChains(
    tx,
    collectionId,
    {
      ...kept,
      idField: scope.idField,
      start: scope.start,
      end: scope.end,
      stepCount: def.steps.length,
      touch: touch !== undefined,
    },
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
            first: touch ? touchAt(c.touch, touch, 0) : null,
            last: touch ? touchAt(c.touch, touch, m) : null,
          });
        }
      }
    },
  );
  if (!ready) return undefined;
  return { rows, walk: [...walk, ...straddlers] };
}
