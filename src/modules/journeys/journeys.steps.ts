/**
 * A journey's steps as analytics count them: the steps its `data.steps` define (with the
 * mappings their config carries), resolved under a request's `stepMappings` into fully mapped
 * steps, and the steps maintained progress follows (journeys.progress.ts). The rules are
 * written out in docs/journeys.md (Steps and mappings).
 */
import { AppError, badRequest } from '../../platform/errors.ts';
import { isObject } from '../../platform/schemas.ts';
import { eventProperty } from './journeys.funnels.repository.ts';
import { beginsWithLink } from './journeys.link-steps.ts';
import type * as progressRepo from './journeys.progress.repository.ts';
import type * as repo from './journeys.repository.ts';
import type { StepMapping } from './journeys.schema.ts';

/** The outcome of a mapping that names none. */
export const DEFAULT_OUTCOME = 'success';

export interface DefinedStep {
  stepId: string;
  interactionId?: string;
  outcome?: string;
}

/** The journey's own steps in order, with the mappings their config carries. */
export function definedSteps(data: Record<string, unknown>): DefinedStep[] {
  if (!Array.isArray(data.steps)) return [];
  const steps: DefinedStep[] = [];
  for (const s of data.steps) {
    if (!isObject(s)) continue;
    const id = typeof s.id === 'string' ? s.id : typeof s.stepId === 'string' ? s.stepId : undefined;
    if (!id) continue;
    const config = isObject(s.config) ? s.config : {};
    steps.push({
      stepId: id,
      interactionId: typeof config.interactionId === 'string' ? config.interactionId : undefined,
      outcome: typeof config.outcome === 'string' ? config.outcome : undefined,
    });
  }
  return steps;
}

/**
 * The ordered, fully mapped steps of an analytics request: the journey's steps (in order)
 * with a request mapping overriding a step's own; a journey without steps takes the request's
 * mappings in their order. A step that ends up with no interaction is a 400 naming it.
 * A request mapping's interactionId is optional (the original types it so): one that names an
 * interaction brings its own outcome (default success); one that names only an outcome, or
 * nothing, keeps the step's interaction (and its outcome unless it names one).
 */
export function resolveSteps(
  data: Record<string, unknown>,
  mappings: StepMapping[] | undefined,
  defaultOutcome = DEFAULT_OUTCOME,
  untilStepId?: string,
): repo.ResolvedStep[] {
  const given = new Map<string, StepMapping>();
  for (const m of mappings ?? []) {
    if (given.has(m.stepId)) throw badRequest(`stepMappings names step "${m.stepId}" twice`);
    given.set(m.stepId, m);
  }
  const defined = definedSteps(data);
  let order: DefinedStep[];
  if (defined.length > 0) {
    const known = new Set(defined.map((s) => s.stepId));
    for (const id of given.keys()) {
      if (!known.has(id)) throw badRequest(`stepMappings names step "${id}", which is not a step of this journey`);
    }
    order = defined;
  } else {
    order = (mappings ?? []).map((m) => ({ stepId: m.stepId }));
  }
  if (order.length === 0) throw badRequest('The journey has no steps: define data.steps or send stepMappings');
  if (untilStepId !== undefined) order = order.slice(0, order.findIndex((s) => s.stepId === untilStepId) + 1);
  return order.map((s) => {
    const m = given.get(s.stepId);
    const interactionId = m?.interactionId ?? s.interactionId;
    if (!interactionId) {
      throw badRequest(
        `Step "${s.stepId}" has no interaction mapping (data.steps[].config.interactionId or stepMappings)`,
      );
    }
    const outcome = m?.interactionId !== undefined ? m.outcome : (m?.outcome ?? s.outcome);
    return { stepId: s.stepId, interactionId, outcome: outcome ?? defaultOutcome };
  });
}

/** The steps maintained progress follows: the journey's own, fully mapped; null when it cannot. */
export function keptSteps(data: Record<string, unknown>): progressRepo.KeptStep[] | null {
  try {
    const steps = resolveSteps(data, undefined);
    // A journey from a link's clicks is counted from the clicks, never kept by the events' triggers.
    if (beginsWithLink(steps)) return null;
    return steps.map((s) => ({ interactionId: s.interactionId, outcome: s.outcome }));
  } catch (err) {
    if (err instanceof AppError) return null;
    throw err;
  }
}

/** Breakdown properties a journey may declare (`data.breakdownProperties`). */
export const MAX_KEPT_PROPERTIES = 5;
/** The longest metadata key a journey may declare. */
const MAX_KEPT_KEY = 200;

/**
 * The breakdown properties whose first- and last-touch values maintained progress keeps for
 * the journey (`data.breakdownProperties`: at most 5 distinct names of appId, outcome, source,
 * interactionId or metadata.<key>), in the order given. Throws a 400 naming the field when the
 * value is not such a list; `lenient` (journeys stored before the rule) keeps none instead.
 */
export function keptProperties(data: Record<string, unknown>, lenient = false): string[] {
  const given = data.breakdownProperties;
  if (given === undefined) return [];
  const field = 'data.breakdownProperties';
  const refuse = (why: string) => {
    if (lenient) return [];
    throw badRequest(`${field} ${why}`, { field });
  };
  if (!Array.isArray(given)) return refuse('must be an array of property names');
  if (given.length > MAX_KEPT_PROPERTIES) {
    return refuse(`holds at most ${MAX_KEPT_PROPERTIES} properties; this one has ${given.length}`);
  }
  for (const p of given) {
    const ref = typeof p === 'string' ? eventProperty(p) : undefined;
    if (!ref || ('metadataKey' in ref && ref.metadataKey.length > MAX_KEPT_KEY)) {
      return refuse(`names ${JSON.stringify(p)}: each must be appId, outcome, source, interactionId or metadata.<key>`);
    }
  }
  if (new Set(given).size !== given.length) return refuse('names a property twice');
  return given as string[];
}

/** Whether `steps` are the first steps kept by `state` (and it is ready to answer). */
export function followsKept(
  state: progressRepo.ProgressState | undefined,
  steps: repo.ResolvedStep[],
): state is KeptState {
  if (!state?.ready || !state.steps || steps.length > state.steps.length) return false;
  const kept = state.steps;
  return steps.every((s, k) => s.interactionId === kept[k].interactionId && s.outcome === kept[k].outcome);
}
export type KeptState = progressRepo.ProgressState & { steps: progressRepo.KeptStep[] };
