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
 * - milestone: a recipient completing a step (`journey.step.completed`) or the last one
 *   (`journey.completed`) as maintained progress sees it: noted by its triggers in the event's
 *   transaction, published to the webhooks outbox just after (journeys.milestones.ts).
 */
import { defineModule, WORKING } from '../../platform/module.ts';
import { webhooksModule } from '../webhooks/index.ts';
import { peopleExportTask } from './funnels.export.ts';
import { journeyEvents } from './journeys.events.ts';
import { MilestonePublisher } from './journeys.milestones.ts';
import { progressTask } from './journeys.progress.ts';
import { journeysRoutes } from './journeys.routes.ts';
import { JourneysService } from './journeys.service.ts';
import { journeysSettings } from './journeys.settings.ts';

export { JourneysService } from './journeys.service.ts';
export { type JourneysSettings, journeysSettings } from './journeys.settings.ts';
export { definedSteps, resolveSteps } from './journeys.steps.ts';

export const journeysModule = defineModule({
  name: 'journeys',
  needs: [webhooksModule],
  settings: journeysSettings,
  // journeys reads interaction events and keeps its progress by triggers on them: the columns it
  // reads are the interactions module's documented contract (its index.ts).
  tables: {
    owns: [
      'journeys',
      'journey_progress_state',
      'journey_progress',
      'journey_progress_counts',
      'journey_progress_dirty',
      'journey_milestones',
      'funnel_exports',
      'funnel_export_chunks',
    ],
    // link_clicks: a journey may begin with a link's clicks (journeys.link-steps.ts).
    reads: ['collections', 'interaction_events', 'link_clicks'],
  },
  // Progress rebuilds queue on the job queue; milestones are published through the webhooks outbox.
  create: ({ db, log, queue, analytics }, settings, deps) =>
    new JourneysService(
      db,
      analytics,
      queue,
      log,
      new MilestonePublisher(db, deps.webhooks, log, settings.milestonesPollMs),
    ),
  routes: journeysRoutes,
  events: journeyEvents,
  tasks: (service) => [
    progressTask(service.analytics),
    peopleExportTask(service.funnels, service.reports.exportFunnel),
  ],
  // Journeys stored before progress was kept are adopted once, and milestones published, by
  // the processes that run jobs.
  background: (service) => [
    {
      roles: WORKING,
      start: async () => {
        // In the background: a database that is down at start must not stop the process.
        void service.adoptJourneys();
        await service.milestones.start();
      },
      stop: () => service.milestones.stop(),
    },
  ],
});
