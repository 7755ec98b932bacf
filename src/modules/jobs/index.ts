/**
 * Jobs: durable background work shared by every module.
 * - job: one unit of work of a `task` for a collection, with a JSON payload and result.
 * - task: a named handler registered with `JobEngine.registerTask`; `visible` tasks can be
 *   enqueued and listed through the API, internal ones (deliveries, housekeeping) cannot.
 * - worker: the JobEngines started in a process (ROLE=all or worker) claiming due jobs, one
 *   per lane.
 * - lane: the slots a task's jobs run in; each lane has its own in every worker (`default`,
 *   and `deliveries` for webhook deliveries), and each collection a share of them.
 * - key: idempotent enqueue; a pending job with the same key is updated, not duplicated.
 * - queueName: jobs of one named queue (per collection) run one at a time, in order.
 * - attempt / maxAttempts: a throwing handler is retried with exponential backoff.
 * - lock timeout: a job whose worker stopped heart-beating is claimed again.
 * - events: `job.completed` / `job.failed` of visible tasks' jobs, published in the transaction
 *   of their final state once `JobsService.publishEventsTo` is given the webhooks service.
 * Life cycle, guarantees and config keys: engine.ts (and its parts in engine/) and docs/jobs.md.
 */
import { defineModule, WORKING } from '../../platform/module.ts';
import type { TaskDefinition } from '../../platform/tasks.ts';
import { JobEngine } from './engine.ts';
import { jobEvents } from './jobs.events.ts';
import { jobsRoutes } from './jobs.routes.ts';
import { JobsService } from './jobs.service.ts';
import { JOBS_LANES, jobsSettings, laneSettings } from './jobs.settings.ts';

export { type EngineLogger, type EnqueueOptions, JOBS_CHANNEL, JobEngine } from './engine.ts';
export { APP_LANE, JOBS_LANES, type JobsSettings, jobsSettings } from './jobs.settings.ts';
export { JobsService };

/**
 * The service is the API's face (JobsService) holding the engines, one per lane, that share
 * one task registry: other modules take `engine` to enqueue in their own transactions (any
 * task, whatever its lane), and buildApp registers every module's tasks on it.
 */
export const jobsModule = defineModule({
  name: 'jobs',
  needs: [],
  settings: (env, { shutdownTimeoutMs }) => jobsSettings(env, shutdownTimeoutMs),
  tables: { owns: ['jobs'], reads: ['collections'] },
  create: ({ db, log }, settings) => {
    const registry = new Map<string, TaskDefinition>();
    const engines = JOBS_LANES.map(
      (lane) =>
        new JobEngine(db, laneSettings(settings, lane), log, { lane, registry, housekeeping: lane === 'default' }),
    );
    return new JobsService(db, engines);
  },
  routes: jobsRoutes,
  // Published through the webhooks service, set after it is built (JobsService.publishEventsTo).
  events: jobEvents,
  // The platform's job queue (Platform.queue): every module enqueues on the default lane's engine.
  provides: { queue: (service) => service.engine },
  // Workers run in ROLE=all and ROLE=worker; stop() releases what it could not finish.
  background: (service) => [{ roles: WORKING, start: () => service.start(), stop: () => service.stop() }],
  // Retention once a minute in one worker of the deployment (a system schedule); the engines
  // keep the lock-timeout reclaim on every poll (engine/housekeeping.ts).
  housekeeping: (service) => [
    {
      name: 'jobs.retention',
      cron: '* * * * *',
      description: 'Deletes finished jobs older than JOBS_RETENTION_HOURS (and reclaims expired claims)',
      run: () => service.engine.sweep(),
    },
  ],
});
