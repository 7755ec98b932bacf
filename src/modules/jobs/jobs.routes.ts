import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import * as S from './jobs.schema.ts';
import type { JobsService } from './jobs.service.ts';

/** A job read by id: the same read under the `async` API and the `jobs` API. */
const readJob = (service: JobsService, tag: string, path: string, op: string, summary: string) =>
  defineRoute({
    method: 'GET',
    url: `/admin/collection/:collectionId${path}`,
    operationId: `${tag}_${op}`,
    tags: [tag],
    summary,
    guard: guard.admin,
    params: S.JobParams,
    response: S.Job,
    handler: ({ scope }) => service.get(scope.collectionId, scope.jobId),
  });

export const jobsRoutes = (service: JobsService) => [
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/async/jobs',
    operationId: 'async_enqueueAsyncJob',
    tags: ['async'],
    summary: 'Enqueue a background job (202); unknown tasks are refused naming the known ones',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.EnqueueAsyncJobRequest,
    response: S.EnqueueAsyncJobResponse,
    status: 202,
    handler: ({ scope, body }) => service.submit(scope.collectionId, body),
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/async/jobs/bulk',
    operationId: 'async_enqueueAsyncJobs',
    tags: ['async'],
    summary: `Enqueue up to ${S.MAX_BULK_JOBS} jobs in one statement (202, ids in the order given); one bad item refuses them all, naming it`,
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.EnqueueJobsRequest,
    response: S.EnqueueJobsResponse,
    status: 202,
    handler: ({ scope, body }) => service.submitMany(scope.collectionId, body.jobs),
  }),
  readJob(
    service,
    'async',
    '/async/jobs/:jobId',
    'getAsyncJobStatus',
    'Get a job’s status (404 once retention has removed it)',
  ),
  readJob(service, 'jobs', '/jobs/:jobId', 'getJob', 'Get a single job'),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/jobs',
    operationId: 'jobs_listJobs',
    tags: ['jobs'],
    summary: 'List the collection’s visible jobs, newest first',
    guard: guard.admin,
    params: S.CollectionParams,
    query: S.JobsQuery,
    response: S.JobsPage,
    handler: ({ scope, query }) => service.list(scope.collectionId, query),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/job-tasks',
    operationId: 'jobs_listTasks',
    tags: ['jobs'],
    summary: 'The tasks POST .../async/jobs takes: each with its payload’s JSON Schema and an example payload',
    guard: guard.admin,
    params: S.CollectionParams,
    response: S.JobTasks,
    handler: ({ scope }) => service.tasks(scope.collectionId),
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/jobs/:jobId/cancel',
    operationId: 'jobs_cancelJob',
    tags: ['jobs'],
    summary: 'Cancel a queued job (or one waiting for a retry); 409 once it runs or has finished',
    guard: guard.admin,
    params: S.JobParams,
    response: S.Job,
    conflict: 'The job is running or finished',
    handler: ({ scope }) => service.cancel(scope.collectionId, scope.jobId),
  }),
];
