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
 * - queueName: jobs of one named queue (per collection) run in order, `concurrency` at a time
 *   (default 1), at most `ratePerSecond`, not while paused (queues.repository.ts).
 * - attempt / maxAttempts: a throwing handler is retried with exponential backoff.
 * - lock timeout: a job whose worker stopped heart-beating is claimed again.
 * - events: `job.completed` / `job.failed` of visible tasks' jobs, published in the transaction
 *   of their final state once `JobsService.publishEventsTo` is given the webhooks service.
 * - app task: a task a collection declares (`app_tasks`, POST .../tasks) for its own workers;
 *   its jobs are enqueued as any job's, in the `app` lane, which no engine of ours claims
 *   (app-tasks.service.ts).
 * - lease: an app's worker takes due jobs of its tasks over HTTP (POST .../jobs/lease), under a
 *   lease id per job, for the task's leaseSeconds unless a heartbeat extends it; it then
 *   completes or fails them. An expired lease goes back to the queue by the engine's sweep
 *   (leases.service.ts, docs/workers.md).
 * Life cycle, guarantees and config keys: engine.ts (and its parts in engine/) and docs/jobs.md.
 */
import { defineModule, SERVING, WORKING } from '../../platform/module.ts';
import type { TaskDefinition } from '../../platform/tasks.ts';
import { appTasksRoutes } from './app-tasks.routes.ts';
import { AppTasksService } from './app-tasks.service.ts';
import { JobEngine } from './engine.ts';
import { jobEvents } from './jobs.events.ts';
import { jobsMetrics } from './jobs.metrics.ts';
import { jobsRoutes } from './jobs.routes.ts';
import { JobsService, toJob } from './jobs.service.ts';
import { JOBS_LANES, jobsSettings, laneSettings } from './jobs.settings.ts';
import { LeaseWaits } from './lease-waits.ts';
import { leasesRoutes } from './leases.routes.ts';
import { LeasesService } from './leases.service.ts';
import { queuesRoutes } from './queues.routes.ts';

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
  tables: { owns: ['jobs', 'job_queues', 'app_tasks'], reads: ['collections'] },
  create: ({ db, log, metrics }, settings) => {
    const registry = new Map<string, TaskDefinition>();
    const engines = JOBS_LANES.map(
      (lane) =>
        new JobEngine(db, laneSettings(settings, lane), log, { lane, registry, housekeeping: lane === 'default' }),
    );
    // Every lane's runs counted; the backlog read through the default lane's engine (the port's).
    const observer = jobsMetrics(metrics, () => engines[0].backlog());
    for (const e of engines) e.observe(observer);
    const tasks = new AppTasksService(db, (name) => registry.get(name), settings.maxAttempts);
    const leases = new LeasesService(db, engines[0], tasks, new LeaseWaits(db, log), toJob);
    leases.observe(observer);
    return new JobsService(db, engines, { tasks, leases });
  },
  routes: (service) => [
    ...jobsRoutes(service),
    ...queuesRoutes(service.queues, service),
    ...appTasksRoutes(service.app.tasks),
    ...leasesRoutes(service.app.leases),
  ],
  // Published through the webhooks service, set after it is built (JobsService.publishEventsTo).
  events: jobEvents,
  // The platform's job queue (Platform.queue): every module enqueues on the default lane's engine.
  provides: { queue: (service) => service.engine },
  background: (service) => [
    // Workers run in ROLE=all and ROLE=worker; stop() releases what it could not finish.
    { roles: WORKING, start: () => service.start(), stop: () => service.stop() },
    // Waiting leases (long polls) wake on the jobs' NOTIFY, and end as soon as the process stops.
    {
      roles: SERVING,
      start: () => service.app.leases.waits.start(),
      closing: () => service.app.leases.waits.closing(),
      stop: () => service.app.leases.waits.stop(),
    },
  ],
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
