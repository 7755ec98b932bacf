/**
 * Schedules: recurring jobs on a cron (issue 27, item 4), and the service's own housekeeping.
 * - schedule: a collection's job request (task, payload, priority, attempts, queue) and a
 *   5-field cron read in an IANA time zone; each tick enqueues one job with the key
 *   `schedule:<id>:<tick ISO>`.
 * - tick: a time the cron names; `next_run_at` is the next one, recomputed on every write.
 * - catch-up: after the workers were down, `latest` (default) enqueues one job for the most
 *   recent missed tick, `none` none.
 * - scheduler: in every worker process; the due rows are taken FOR UPDATE SKIP LOCKED, so each
 *   tick is handled by exactly one of them.
 * - system schedule: a row without a collection for a module's declared housekeeping
 *   (platform/module.ts `Housekeeping`), run in the process that took its tick.
 * Design: scheduler.ts and docs/design/schedules.md; users: docs/schedules.md.
 */
import { defineModule, noSettings, WORKING } from '../../platform/module.ts';
import { jobsModule } from '../jobs/index.ts';
import { Scheduler } from './scheduler.ts';
import { schedulesRoutes } from './schedules.routes.ts';
import { SchedulesService } from './schedules.service.ts';

export { MISSED_AFTER_MS, Scheduler, systemId } from './scheduler.ts';
export { SchedulesService };

export const schedulesModule = defineModule({
  name: 'schedules',
  needs: [jobsModule],
  settings: noSettings,
  tables: { owns: ['schedules'], reads: ['collections'] },
  create: ({ db, log }, _settings, deps) => ({
    api: new SchedulesService(db, deps.jobs, log),
    scheduler: new Scheduler(db, deps.jobs, log),
  }),
  routes: (service) => schedulesRoutes(service.api),
  // buildModules hands the scheduler every module's housekeeping, as system schedules.
  provides: { housekeeping: (service) => service.scheduler },
  // A scheduler in every worker process; started after the job engine, stopped before it.
  background: (service) => [
    { roles: WORKING, start: () => service.scheduler.start(), stop: () => service.scheduler.stop() },
  ],
});
