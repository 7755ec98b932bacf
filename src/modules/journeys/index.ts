/**
 * Journeys: named sequences of steps a recipient goes through, and their analytics.
 * - journey: {name, journeyType, active, data}; `data.steps` orders the steps.
 * - step mapping: {stepId, interactionId, outcome (default success)}: the interaction event
 *   that completes a step; from the step's `config` or from a request's `stepMappings`.
 * - recipient: one identity (userId, or contactId with idField) followed through the steps.
 * - entry: a recipient's first event carrying `journeyId`; funnel, stats and recipients all
 *   follow CONTRACT section 6 (docs/journeys.md has a worked example).
 */
import { defineModule } from '../../platform/module.ts';
import { interactionsSettings } from '../interactions/index.ts';
import { journeysRoutes } from './journeys.routes.ts';
import { JourneysService } from './journeys.service.ts';

export { definedSteps, JourneysService, resolveSteps } from './journeys.service.ts';

export const journeysModule = defineModule({
  name: 'journeys',
  needs: [],
  // The funnel queries run with the interactions module's analytics work_mem.
  settings: interactionsSettings,
  create: ({ db }, settings) => new JourneysService(db, settings),
  routes: journeysRoutes,
});
