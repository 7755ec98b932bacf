import { Type } from 'typebox';
import { inCollection } from '../../platform/routes.ts';
import { Closed, Instant, Nullable, Page, pageQuery, Timestamp } from '../../platform/schemas.ts';

export const Queue = Closed(
  {
    name: Type.String(),
    concurrency: Type.Integer({ description: 'How many of its jobs run at once (default 1)' }),
    ratePerSecond: Nullable(Type.Number({ description: 'At most this many starts a second; null: no limit' })),
    paused: Type.Boolean({ description: 'No job of the queue starts while paused; running ones finish' }),
    pending: Type.Integer({ description: 'Queued, or errored and waiting for a retry' }),
    due: Type.Integer({ description: 'Pending jobs whose time has come' }),
    running: Type.Integer(),
    finishedLastMinute: Type.Integer({ description: 'Jobs that completed or failed in the last minute' }),
    failedLastMinute: Type.Integer(),
    oldestPendingAt: Nullable(Timestamp),
  },
  { $id: 'Queue' },
);
export type Queue = Type.Static<typeof Queue>;

export const QueuesPage = Page(Queue, { $id: 'QueuesPage' });
export const QueuesQuery = Closed({ ...pageQuery(100, 50, 10_000) });
export type QueuesQuery = Type.Static<typeof QueuesQuery>;

export const QueueParams = inCollection({
  queueName: Type.String({ minLength: 1, maxLength: 200, description: 'As jobs name it in `queueName`' }),
});

export const QueueSettingsRequest = Closed(
  {
    concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Jobs of the queue at once' })),
    ratePerSecond: Type.Optional(
      Nullable(
        Type.Number({
          exclusiveMinimum: 0,
          maximum: 10_000,
          description: 'Starts a second at most (e.g. 0.5: one every 2 s); null removes the limit',
        }),
      ),
    ),
  },
  { $id: 'QueueSettingsRequest' },
);
export type QueueSettingsRequest = Type.Static<typeof QueueSettingsRequest>;

export const RetryJobsRequest = Closed(
  {
    status: Type.Optional(
      Type.Union([Type.Literal('failed'), Type.Literal('cancelled')], {
        default: 'failed',
        description: 'Which finished jobs: failed (default) or cancelled',
      }),
    ),
    task: Type.Optional(Type.String({ maxLength: 100 })),
    queueName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    from: Type.Optional(Instant('Finished at or after')),
    to: Type.Optional(Instant('Finished before', 'end')),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 1000, description: 'The most retried by this call' }),
    ),
  },
  { $id: 'RetryJobsRequest' },
);
export type RetryJobsRequest = Type.Static<typeof RetryJobsRequest>;

export const RetryJobsResponse = Closed(
  {
    retried: Type.Integer(),
    ids: Type.Array(Type.Integer(), { description: 'The jobs queued again, oldest first' }),
    more: Type.Boolean({ description: 'More jobs match: call again to retry them' }),
  },
  { $id: 'RetryJobsResponse' },
);
export type RetryJobsResponse = Type.Static<typeof RetryJobsResponse>;
export { CollectionParams } from '../../platform/routes.ts';
