import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { Job, JobParams } from './jobs.schema.ts';
import type { JobsService } from './jobs.service.ts';
import * as S from './queues.schema.ts';
import type { QueuesService } from './queues.service.ts';

/** A queue action answering the queue: pause, resume. */
const queueAction = (queues: QueuesService, action: 'pause' | 'resume', summary: string) =>
  defineRoute({
    method: 'POST',
    url: `/admin/collection/:collectionId/queues/:queueName/${action}`,
    operationId: `jobs_${action}Queue`,
    tags: ['jobs'],
    summary,
    guard: guard.admin,
    params: S.QueueParams,
    response: S.Queue,
    handler: ({ scope }) => queues[action](scope.collectionId, scope.queueName),
  });

/** Named queues' flow control, and retries of finished jobs. */
export const queuesRoutes = (queues: QueuesService, jobs: JobsService) => [
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/queues',
    operationId: 'jobs_listQueues',
    tags: ['jobs'],
    summary: 'The collection’s named queues (with jobs or settings), by name: depth, running, throughput, settings',
    guard: guard.admin,
    params: S.CollectionParams,
    query: S.QueuesQuery,
    response: S.QueuesPage,
    handler: ({ scope, query }) => queues.list(scope.collectionId, query),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/queues/:queueName',
    operationId: 'jobs_getQueue',
    tags: ['jobs'],
    summary: 'One named queue (404 while it has neither jobs nor settings)',
    guard: guard.admin,
    params: S.QueueParams,
    response: S.Queue,
    handler: ({ scope }) => queues.get(scope.collectionId, scope.queueName),
  }),
  defineRoute({
    method: 'PATCH',
    url: '/admin/collection/:collectionId/queues/:queueName',
    operationId: 'jobs_configureQueue',
    tags: ['jobs'],
    summary: 'Set a queue’s concurrency and rate limit (it may have no jobs yet); fields left out keep their value',
    guard: guard.admin,
    params: S.QueueParams,
    body: S.QueueSettingsRequest,
    response: S.Queue,
    handler: ({ scope, body }) => queues.configure(scope.collectionId, scope.queueName, body),
  }),
  queueAction(queues, 'pause', 'Pause a queue: none of its jobs starts until resumed (running ones finish)'),
  queueAction(queues, 'resume', 'Resume a paused queue'),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/jobs/retry',
    operationId: 'jobs_retryJobs',
    tags: ['jobs'],
    summary: 'Queue again up to 1,000 failed (or cancelled) jobs matching a filter; `more` says whether to call again',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.RetryJobsRequest,
    response: S.RetryJobsResponse,
    handler: ({ scope, body }) => jobs.retryMany(scope.collectionId, body),
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/jobs/:jobId/retry',
    operationId: 'jobs_retryJob',
    tags: ['jobs'],
    summary: 'Queue a failed or cancelled job again as new; 409 for any other state',
    guard: guard.admin,
    params: JobParams,
    response: Job,
    conflict: 'The job is not failed or cancelled, or a pending job holds its key',
    handler: ({ scope }) => jobs.retry(scope.collectionId, scope.jobId),
  }),
];
