import { Type } from 'typebox';
import { inCollection } from '../../platform/routes.ts';
import { Closed, Instant, Nullable, OpenObject, Page, pageQuery, ref, Timestamp } from '../../platform/schemas.ts';
import { JOB_STATUSES } from './jobs.repository.ts';

export const JobStatus = Type.Unsafe<(typeof JOB_STATUSES)[number]>(
  Type.Union(
    JOB_STATUSES.map((s) => Type.Literal(s)),
    {
      $id: 'JobStatus',
      description:
        'queued (waiting), running, errored (an attempt failed; will retry), completed, failed (attempts exhausted), cancelled',
    },
  ),
);

export const JobProgress = Closed({
  done: Type.Number(),
  total: Type.Optional(Type.Number()),
  message: Type.Optional(Type.String()),
});

export const Job = Closed(
  {
    id: Type.Integer(),
    task: Type.String(),
    payload: Type.Unknown({ description: 'As enqueued' }),
    priority: Type.Integer({ description: 'Higher runs first' }),
    runAt: Timestamp,
    createdAt: Timestamp,
    attempts: Type.Integer({ description: 'Attempts started so far' }),
    maxAttempts: Type.Integer(),
    lastError: Nullable(Type.String()),
    lockedAt: Nullable(Timestamp),
    key: Nullable(Type.String()),
    queueName: Nullable(Type.String()),
    status: ref(JobStatus),
    progress: Nullable(JobProgress),
    result: Type.Unknown({ description: 'What the task returned; null until completed' }),
    finishedAt: Nullable(Timestamp),
  },
  { $id: 'Job' },
);
export type Job = Type.Static<typeof Job>;

export const JobsPage = Page(Job, { $id: 'JobsPage' });

export const JobTask = Closed(
  {
    name: Type.String({ description: 'What POST .../async/jobs takes as `task`' }),
    description: Type.String(),
    payloadSchema: Type.Unknown({ description: 'The JSON Schema its payload is checked against' }),
    example: Type.Unknown({ description: 'A payload that works as written: a template to start from' }),
    source: Type.Optional(
      Type.Union([Type.Literal('service'), Type.Literal('app')], {
        description:
          'service: run by the service; app: declared by the collection (POST .../tasks), run by its workers',
      }),
    ),
  },
  { $id: 'JobTask' },
);
export type JobTask = Type.Static<typeof JobTask>;

export const JobTasks = Closed({ items: Type.Array(ref(JobTask)) }, { $id: 'JobTasks' });

const Name = (description: string) => Type.String({ minLength: 1, maxLength: 200, description });

export const EnqueueAsyncJobRequest = Closed(
  {
    task: Type.String({ minLength: 1, maxLength: 100, description: 'A registered visible task' }),
    payload: Type.Optional(OpenObject({ description: 'Task input; checked by the task' })),
    runAt: Type.Optional(Instant('Not before this time; default now')),
    priority: Type.Optional(
      Type.Integer({
        minimum: -1000,
        maximum: 1000,
        default: 0,
        description: "Higher runs first, among this collection's jobs",
      }),
    ),
    key: Type.Optional(Name('Idempotency key: a pending job with this key is updated instead of duplicated')),
    queueName: Type.Optional(
      Name(
        "Jobs of one named queue run in enqueue order, one at a time unless PATCH .../queues/{queueName} says more; no ':' (the service's own queues)",
      ),
    ),
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 25 })),
  },
  { $id: 'EnqueueAsyncJobRequest' },
);
export type EnqueueAsyncJobRequest = Type.Static<typeof EnqueueAsyncJobRequest>;

// `key` is optional in the original's response type: absent when the enqueue named none.
export const EnqueueAsyncJobResponse = Closed(
  { id: Type.Integer(), task: Type.String(), runAt: Timestamp, key: Type.Optional(Type.String()) },
  { $id: 'EnqueueAsyncJobResponse' },
);
export type EnqueueAsyncJobResponse = Type.Static<typeof EnqueueAsyncJobResponse>;

export const JobsQuery = Closed({
  state: Type.Optional(ref(JobStatus)),
  task: Type.Optional(Type.String({ maxLength: 100 })),
  from: Type.Optional(Instant('Created at or after')),
  to: Type.Optional(Instant('Created before', 'end')),
  ...pageQuery(100, 20, 100_000),
});
export type JobsQuery = Type.Static<typeof JobsQuery>;

export { CollectionParams } from '../../platform/routes.ts';
export const JobParams = inCollection({
  jobId: Type.String({ pattern: '^[0-9]{1,15}$', maxLength: 15, description: 'Numeric job id' }),
});

/** The most jobs one bulk enqueue takes. */
export const MAX_BULK_JOBS = 1000;

export const EnqueueJobsRequest = Closed(
  {
    jobs: Type.Array(ref(EnqueueAsyncJobRequest), {
      minItems: 1,
      maxItems: MAX_BULK_JOBS,
      description: `1 to ${MAX_BULK_JOBS} jobs, each as POST .../async/jobs takes it; all are queued or none`,
    }),
  },
  { $id: 'EnqueueJobsRequest' },
);
export type EnqueueJobsRequest = Type.Static<typeof EnqueueJobsRequest>;

export const EnqueueJobsResponse = Closed(
  { items: Type.Array(ref(EnqueueAsyncJobResponse), { description: 'In the order given' }) },
  { $id: 'EnqueueJobsResponse' },
);
