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
import { defineModule } from '../../platform/module.ts';
import { JobEngine, jobsSettings } from './engine.ts';
import { jobsRoutes } from './jobs.routes.ts';
import { JobsService } from './jobs.service.ts';

export {
  type EngineLogger,
  type EnqueueOptions,
  JOBS_CHANNEL,
  JobEngine,
  type JobsSettings,
  jobsSettings,
} from './engine.ts';
export { JobsService };

/**
 * The service is the API's face (JobsService) holding the engine: other modules take it to
 * enqueue in their own transactions, and buildApp registers every module's tasks on it.
 */
export const jobsModule = defineModule({
  name: 'jobs',
  needs: [],
  settings: (env, { shutdownTimeoutMs }) => jobsSettings(env, shutdownTimeoutMs),
  create: ({ db, log }, settings) => new JobsService(db, new JobEngine(db, settings, log)),
  routes: jobsRoutes,
  // Workers run in ROLE=all and ROLE=worker; stop() releases what it could not finish.
  lifecycle: (service, role) =>
    role === 'api' ? undefined : { start: () => service.engine.start(), stop: () => service.engine.stop() },
});
