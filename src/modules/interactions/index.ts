/**
 * Interactions: what users do, recorded as events and counted.
 * - interaction type: a definition (id, appId, permissions, data) events refer to.
 * - permissions: who may submit (allowPublicSubmit, allowAnonymousSubmit, requireAuth,
 *   allowedOrigins, startAt/endAt), how often (uniquePerUser, uniquePerAnonId, their windows,
 *   uniqueOutcome), and who may read (allowOwnRead, allowPublicSummary, allowAuthenticatedSummary).
 * - event: one row of interaction_events; `eventId` groups versions of one logical event.
 * - append (admin, no checks) vs submit (public, every permission enforced).
 * - dedupeLatest: count only each identity's latest event per interaction.
 * - export: the `interactions.export` job task, its file streamed by the download route.
 */

import { defineModule } from '../../platform/module.ts';
import { exportTask } from './interactions.export.ts';
import { interactionsRoutes } from './interactions.routes.ts';
import { InteractionsService } from './interactions.service.ts';
import { interactionsSettings } from './interactions.settings.ts';

export { EXPORT_TASK } from './interactions.export.ts';
export { originAllowed } from './interactions.origins.ts';
export { toEventRow } from './interactions.present.ts';
export { IdField } from './interactions.schema.ts';
export { InteractionsService } from './interactions.service.ts';
export { type InteractionsSettings, interactionsSettings } from './interactions.settings.ts';

export const interactionsModule = defineModule({
  name: 'interactions',
  needs: [],
  settings: interactionsSettings,
  create: ({ db, log }, settings) => new InteractionsService(db, settings, log),
  routes: interactionsRoutes,
  tasks: () => [exportTask()],
  // Counter compaction in worker processes (any number of them may run it at once).
  lifecycle: (service, role) => ({
    start: () => {
      if (role !== 'api') service.startHousekeeping();
    },
    stop: () => service.close(),
  }),
});
