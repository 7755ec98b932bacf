import { Type } from 'typebox';
import { IdParam, inCollection } from '../../platform/routes.ts';
import { Closed, Nullable, OpenObject, ref, Timestamp } from '../../platform/schemas.ts';

export const SCHEDULE_LIMITS = {
  /** Schedules per collection: each is a row every worker looks at when it is due. */
  perCollection: 100,
  nameLength: 100,
  cronLength: 200,
  timezoneLength: 64,
};

const Name = Type.String({
  minLength: 1,
  maxLength: SCHEDULE_LIMITS.nameLength,
  description: 'Unique in the collection',
});
// No minLength: a short cron gets the cron check's message (how many fields, an example),
// not the validator's "must NOT have fewer than 9 characters".
const CronExpression = Type.String({
  minLength: 1,
  maxLength: SCHEDULE_LIMITS.cronLength,
  description:
    'Five fields: minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5" (docs/schedules.md); read in `timezone`',
});
const Timezone = (options: { default?: string } = {}) =>
  Type.String({
    minLength: 1,
    maxLength: SCHEDULE_LIMITS.timezoneLength,
    description: 'An IANA time zone the cron is read in, e.g. "Europe/Berlin"',
    ...options,
  });
const Task = Type.String({ minLength: 1, maxLength: 100, description: 'A task POST .../async/jobs takes' });
const Payload = OpenObject({ description: 'The job’s payload, checked by the task when the schedule is saved' });
// The jobs API's bounds (EnqueueAsyncJobRequest), so that a schedule's job is one the API takes.
const Priority = (options: { default?: number } = {}) =>
  Type.Integer({ minimum: -1000, maximum: 1000, description: 'Of each job; higher runs first', ...options });
const MaxAttempts = Type.Integer({ minimum: 1, maximum: 25, description: 'Of each job; default the task’s' });
const QueueName = Type.String({
  minLength: 1,
  maxLength: 200,
  description: "Each job goes on this named queue (one at a time, in order); no ':'",
});
const CatchUp = (options: { default?: string } = {}) =>
  Type.Union([Type.Literal('latest'), Type.Literal('none')], {
    description:
      'After a time when no worker ran: `latest` enqueues one job for the most recent missed tick, `none` skips missed ticks (a tick is missed when it is more than a minute old)',
    ...options,
  });

export const CreateScheduleRequest = Closed(
  {
    name: Name,
    cron: CronExpression,
    timezone: Type.Optional(Timezone({ default: 'UTC' })),
    task: Task,
    payload: Type.Optional(Payload),
    enabled: Type.Optional(Type.Boolean({ default: true })),
    priority: Type.Optional(Priority({ default: 0 })),
    maxAttempts: Type.Optional(MaxAttempts),
    queueName: Type.Optional(QueueName),
    catchUp: Type.Optional(CatchUp({ default: 'latest' })),
  },
  { $id: 'CreateScheduleRequest' },
);
export type CreateScheduleRequest = Type.Static<typeof CreateScheduleRequest>;

export const UpdateScheduleRequest = Closed(
  {
    name: Type.Optional(Name),
    cron: Type.Optional(CronExpression),
    timezone: Type.Optional(Timezone()),
    task: Type.Optional(Task),
    payload: Type.Optional(Payload),
    enabled: Type.Optional(Type.Boolean()),
    priority: Type.Optional(Priority()),
    maxAttempts: Type.Optional(Nullable(MaxAttempts)),
    queueName: Type.Optional(Nullable(QueueName)),
    catchUp: Type.Optional(CatchUp()),
  },
  { $id: 'UpdateScheduleRequest' },
);
export type UpdateScheduleRequest = Type.Static<typeof UpdateScheduleRequest>;

export const Schedule = Closed(
  {
    id: Type.String(),
    name: Type.String(),
    cron: Type.String(),
    timezone: Type.String(),
    task: Type.String(),
    payload: Type.Unknown({ description: 'As each job gets it' }),
    priority: Type.Integer(),
    maxAttempts: Nullable(Type.Integer()),
    queueName: Nullable(Type.String()),
    catchUp: CatchUp(),
    enabled: Type.Boolean(),
    nextRunAt: Nullable(Type.String({ format: 'date-time', description: 'The next tick; null while disabled' })),
    lastRunAt: Nullable(
      Type.String({
        format: 'date-time',
        description: 'The tick (or the time of a run now) of the last job it enqueued',
      }),
    ),
    lastJobId: Nullable(Type.Integer({ description: 'The last job it enqueued (GET .../jobs/{jobId})' })),
    lastError: Nullable(
      Type.String({ description: 'Why its last tick enqueued nothing (the task or payload no longer passes)' }),
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Schedule' },
);
export type Schedule = Type.Static<typeof Schedule>;

export const ScheduleList = Closed(
  { items: Type.Array(ref(Schedule), { description: 'By name' }) },
  { $id: 'ScheduleList' },
);

export const ScheduleRun = Closed(
  {
    id: Type.Integer({ description: 'The job enqueued' }),
    task: Type.String(),
    runAt: Timestamp,
    key: Type.String({ description: '`schedule:<id>:run:<time>`' }),
  },
  { $id: 'ScheduleRun' },
);
export type ScheduleRun = Type.Static<typeof ScheduleRun>;

export { CollectionParams } from '../../platform/routes.ts';
export const ScheduleParams = inCollection({ scheduleId: IdParam(100) });
