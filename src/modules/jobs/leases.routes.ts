import { guard } from '../../platform/auth.ts';
import { CollectionParams, defineRoute } from '../../platform/routes.ts';
import * as S from './app-tasks.schema.ts';
import { Job, JobParams } from './jobs.schema.ts';
import type { LeasesService } from './leases.service.ts';

const tags = ['jobs'];
const job = '/admin/collection/:collectionId/jobs/:jobId';
/** The 409 of a call that names a lease the job no longer has. */
const leaseLost =
  'The lease is not the job’s any more: it expired and the job was leased again or went back to the queue, or the job has finished (details.reason says which)';

export const leasesRoutes = (service: LeasesService) => [
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/jobs/lease',
    operationId: 'jobs_lease',
    tags,
    summary:
      'Lease due jobs of the app’s own tasks for a worker (running, under a lease id; long-polls up to waitSeconds when none is due)',
    guard: guard.admin,
    params: CollectionParams,
    body: S.LeaseRequest,
    response: S.LeasedJobs,
    handler: ({ scope, body, reply }) => {
      // A client that hangs up ends its wait; what was leased for it meanwhile goes back.
      const gone = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) gone.abort();
      });
      return service.lease(scope.collectionId, body, gone.signal);
    },
  }),
  defineRoute({
    method: 'POST',
    url: `${job}/heartbeat`,
    operationId: 'jobs_heartbeat',
    tags,
    summary: 'Extend a leased job’s lease (by leaseSeconds from now, default the task’s)',
    guard: guard.admin,
    params: JobParams,
    body: S.HeartbeatRequest,
    response: S.JobLease,
    conflict: leaseLost,
    handler: ({ scope, body }) => service.heartbeat(scope.collectionId, scope.jobId, body),
  }),
  defineRoute({
    method: 'POST',
    url: `${job}/progress`,
    operationId: 'jobs_progress',
    tags,
    summary: 'Report a leased job’s progress (shown with the job); extends the lease as a heartbeat does',
    guard: guard.admin,
    params: JobParams,
    body: S.LeaseProgressRequest,
    response: S.JobLease,
    conflict: leaseLost,
    handler: ({ scope, body }) => service.progress(scope.collectionId, scope.jobId, body),
  }),
  defineRoute({
    method: 'POST',
    url: `${job}/complete`,
    operationId: 'jobs_complete',
    tags,
    summary: 'Complete a leased job with its result (job.completed)',
    guard: guard.admin,
    params: JobParams,
    body: S.CompleteRequest,
    response: Job,
    conflict: leaseLost,
    tooLarge: `The result is over ${S.APP_TASK_LIMITS.resultBytes} bytes of JSON (or the body over the request limit)`,
    handler: ({ scope, body }) => service.complete(scope.collectionId, scope.jobId, body),
  }),
  defineRoute({
    method: 'POST',
    url: `${job}/fail`,
    operationId: 'jobs_fail',
    tags,
    summary:
      'Fail a leased job’s attempt: leased again at retryAt (default the service’s backoff), or failed for good once its attempts are spent (job.failed)',
    guard: guard.admin,
    params: JobParams,
    body: S.FailRequest,
    response: Job,
    conflict: leaseLost,
    handler: ({ scope, body }) => service.fail(scope.collectionId, scope.jobId, body),
  }),
];
