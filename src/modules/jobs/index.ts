/**
 * Jobs: durable background work shared by every module.
 * - job: one unit of work of a `task` for a collection, with a JSON payload and result.
 * - task: a named handler registered with `JobEngine.registerTask`; `visible` tasks can be
 *   enqueued and listed through the API, internal ones (deliveries, housekeeping) cannot.
 * - worker: a JobEngine started in a process (ROLE=all or worker) claiming due jobs.
 * - key: idempotent enqueue; a pending job with the same key is updated, not duplicated.
 * - queueName: jobs of one named queue (per collection) run one at a time, in order.
 * - attempt / maxAttempts: a throwing handler is retried with exponential backoff.
 * - lock timeout: a job whose worker stopped heart-beating is claimed again.
 * Life cycle, guarantees and config keys: engine.ts and docs/jobs.md.
 */
export {
  type EngineLogger,
  type EnqueueOptions,
  JOBS_CHANNEL,
  JobEngine,
  type JobsConfig,
  jobsConfig,
  type TaskContext,
  type TaskDefinition,
} from './engine.ts';
export { jobsRoutes } from './jobs.routes.ts';
export { JobsService } from './jobs.service.ts';
