/**
 * Journeys: named sequences of steps a recipient goes through, and their analytics.
 * - journey: {name, journeyType, active, data}; `data.steps` orders the steps.
 * - step mapping: {stepId, interactionId, outcome (default success)}: the interaction event
 *   that completes a step; from the step's `config` or from a request's `stepMappings`.
 * - recipient: one identity (userId, or contactId with idField) followed through the steps.
 * - entry: a recipient's first event carrying `journeyId`; funnel, stats and recipients all
 *   count from it: a recipient enters step 1 on entry and step k on completing step k−1,
 *   and completes a step at its first mapped event at or after entering it, in the period
 *   (docs/journeys.md, Semantics, has a worked example).
 * - maintained progress: per recipient, its entry and step completions, kept by triggers for
 *   journeys whose steps are all mapped, rebuilt by the `journeys.progress` task when the
 *   steps change; funnel, stats and recipients without a period read it once it is ready.
 * - a step taken on its own: recipients of a step after one with no mapping, where the chain
 *   cannot be followed: entered the journey, with or without a matching event in the period.
 */
import { defineModule } from '../../platform/module.ts';
import { interactionsSettings } from '../interactions/index.ts';
import type { JobsService } from '../jobs/index.ts';
import { progressTask } from './journeys.progress.ts';
import { journeysRoutes } from './journeys.routes.ts';
import { JourneysService } from './journeys.service.ts';

export { definedSteps, JourneysService, resolveSteps } from './journeys.service.ts';

export const journeysModule = defineModule({
  name: 'journeys',
  needs: ['jobs'],
  // The funnel queries run with the interactions module's analytics work_mem.
  settings: interactionsSettings,
  // Progress rebuilds queue on the job engine.
  create: ({ db, log }, settings, deps: { jobs: JobsService }) =>
    new JourneysService(db, settings, deps.jobs.engine, log),
  routes: journeysRoutes,
  tasks: (service) => [progressTask(service.analyticsWorkMemMb)],
  // Journeys stored before progress was kept are adopted once, by the processes that run jobs.
  lifecycle: (service, role) => ({
    start: () => {
      // In the background: a database that is down at start must not stop the process.
      if (role !== 'api') void service.adoptJourneys();
    },
    stop: async () => {},
  }),
});
