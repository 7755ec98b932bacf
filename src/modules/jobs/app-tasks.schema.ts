/** The shapes of an app's own tasks (POST/GET/DELETE .../tasks) and of their leases (.../jobs/lease, …). */
import { Type } from 'typebox';
import { inCollection } from '../../platform/routes.ts';
import { Closed, Instant, Nullable, OpenObject, ref, Timestamp } from '../../platform/schemas.ts';

/** An app task's name: what POST .../async/jobs takes as `task`. */
export const APP_TASK_NAME = '^[A-Za-z][A-Za-z0-9_.:-]{0,99}$';
export const AppTaskName = (description = 'A task the collection declared (POST .../tasks)') =>
  Type.String({ pattern: APP_TASK_NAME, minLength: 1, maxLength: 100, description });

/** The bounds of an app task and of its leases (docs/workers.md, "Limits"). */
export const APP_TASK_LIMITS = {
  /** Declared tasks per collection. */
  tasks: 200,
  leaseSeconds: { min: 5, max: 3600, default: 60 },
  /** Tasks one lease asks for, and jobs it takes. */
  leaseTasks: 50,
  leaseMax: 100,
  waitSeconds: 30,
  /** A completion's result, as JSON. */
  resultBytes: 65_536,
  errorLength: 2000,
  descriptionLength: 2000,
  /** A lease's `leaseId` (`lease:` and a UUID). */
  leaseIdLength: 64,
};

const LeaseSeconds = (description: string) =>
  Type.Integer({ minimum: APP_TASK_LIMITS.leaseSeconds.min, maximum: APP_TASK_LIMITS.leaseSeconds.max, description });

export const DeclareAppTaskRequest = Closed(
  {
    name: AppTaskName(
      'Letters, digits and _ . : -, starting with a letter; not the name of one of the service’s tasks',
    ),
    description: Type.Optional(Type.String({ maxLength: APP_TASK_LIMITS.descriptionLength })),
    maxAttempts: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 25,
        description: 'Attempts before a job fails for good; default JOBS_MAX_ATTEMPTS',
      }),
    ),
    leaseSeconds: Type.Optional(
      LeaseSeconds(
        `How long a lease lasts unless extended (heartbeat, progress); default ${APP_TASK_LIMITS.leaseSeconds.default}`,
      ),
    ),
    payloadSchema: Type.Optional(
      Type.Union([OpenObject(), Type.Boolean()], {
        description:
          'A JSON Schema (draft-07; no pattern, patternProperties or $ref; at most 16 KiB, 16 levels) every enqueue’s payload is checked against',
      }),
    ),
    example: Type.Optional(
      OpenObject({ description: 'A payload that works as written (checked against payloadSchema)' }),
    ),
  },
  { $id: 'DeclareAppTaskRequest' },
);
export type DeclareAppTaskRequest = Type.Static<typeof DeclareAppTaskRequest>;

export const AppTask = Closed(
  {
    name: Type.String(),
    description: Type.String(),
    maxAttempts: Type.Integer(),
    leaseSeconds: Type.Integer(),
    payloadSchema: Type.Unknown({ description: 'The JSON Schema payloads are checked against; null: any object' }),
    example: Type.Unknown({ description: 'A payload to start from; null when none was given' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'AppTask' },
);
export type AppTask = Type.Static<typeof AppTask>;

export const AppTasks = Closed({ items: Type.Array(ref(AppTask)) }, { $id: 'AppTasks' });

export const AppTaskParams = inCollection({ name: AppTaskName('The task’s name') });

export const LeaseRequest = Closed(
  {
    tasks: Type.Array(AppTaskName(), {
      minItems: 1,
      maxItems: APP_TASK_LIMITS.leaseTasks,
      description: 'The tasks this worker runs; each one declared',
    }),
    max: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: APP_TASK_LIMITS.leaseMax,
        default: 1,
        description: 'The most jobs to lease',
      }),
    ),
    waitSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: APP_TASK_LIMITS.waitSeconds,
        default: 0,
        description: 'When no job is due, wait up to this long for one (long poll); 0 answers at once',
      }),
    ),
  },
  { $id: 'LeaseRequest' },
);
export type LeaseRequest = Type.Static<typeof LeaseRequest>;

const LeaseId = Type.String({
  minLength: 1,
  maxLength: APP_TASK_LIMITS.leaseIdLength,
  description: 'The `leaseId` the lease answered with',
});

export const LeasedJob = Closed(
  {
    id: Type.Integer(),
    task: Type.String(),
    payload: Type.Unknown({ description: 'As enqueued' }),
    attempt: Type.Integer({ description: 'This attempt, from 1' }),
    maxAttempts: Type.Integer(),
    priority: Type.Integer(),
    key: Nullable(Type.String()),
    lastError: Nullable(Type.String({ description: 'The error of the previous attempt' })),
    createdAt: Timestamp,
    leaseId: Type.String({ description: 'Names this lease in heartbeat, progress, complete and fail' }),
    leaseExpiresAt: Timestamp,
    leaseSeconds: Type.Integer(),
  },
  { $id: 'LeasedJob' },
);
export type LeasedJob = Type.Static<typeof LeasedJob>;

export const LeasedJobs = Closed(
  { items: Type.Array(ref(LeasedJob), { description: 'Empty when no job was due within waitSeconds' }) },
  { $id: 'LeasedJobs' },
);
export type LeasedJobs = Type.Static<typeof LeasedJobs>;

export const JobLease = Closed(
  { id: Type.Integer(), leaseId: Type.String(), leaseExpiresAt: Timestamp },
  { $id: 'JobLease' },
);
export type JobLease = Type.Static<typeof JobLease>;

export const HeartbeatRequest = Closed(
  {
    leaseId: LeaseId,
    leaseSeconds: Type.Optional(LeaseSeconds('Extend by this long from now; default the task’s leaseSeconds')),
  },
  { $id: 'HeartbeatRequest' },
);
export type HeartbeatRequest = Type.Static<typeof HeartbeatRequest>;

export const LeaseProgressRequest = Closed(
  {
    leaseId: LeaseId,
    done: Type.Number({ minimum: 0 }),
    total: Type.Optional(Type.Number({ minimum: 0 })),
    message: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { $id: 'LeaseProgressRequest' },
);
export type LeaseProgressRequest = Type.Static<typeof LeaseProgressRequest>;

export const CompleteRequest = Closed(
  {
    leaseId: LeaseId,
    result: Type.Optional(
      Type.Unknown({ description: `What the job produced: any JSON, at most ${APP_TASK_LIMITS.resultBytes} bytes` }),
    ),
  },
  { $id: 'CompleteRequest' },
);
export type CompleteRequest = Type.Static<typeof CompleteRequest>;

export const FailRequest = Closed(
  {
    leaseId: LeaseId,
    error: Type.String({ minLength: 1, maxLength: APP_TASK_LIMITS.errorLength, description: 'Why the attempt failed' }),
    retryAt: Type.Optional(
      Instant('Try again not before this time (default: the service’s backoff); ignored once attempts are spent'),
    ),
  },
  { $id: 'FailRequest' },
);
export type FailRequest = Type.Static<typeof FailRequest>;
