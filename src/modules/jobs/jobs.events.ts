/**
 * What the jobs module publishes (its part of the event catalogue, docs/webhooks.md): the
 * final state of a job of a *visible* task (the tasks the API enqueues and lists). Internal
 * tasks (webhook deliveries, progress rebuilds, housekeeping) publish nothing: a delivery job
 * that published would make an event per delivery, and so deliveries of deliveries.
 *
 * The jobs module is built before the webhooks module and cannot need it: the engine is given
 * its publisher after construction (`JobsService.publishEventsTo`, one line in buildApp).
 */
import { Type } from 'typebox';
import { defineEvent, type NewEvent } from '../../platform/events.ts';
import { Closed, Nullable, Timestamp } from '../../platform/schemas.ts';

export type { EventPublisher } from '../../platform/events.ts';

/**
 * The most bytes of a result's JSON an event carries; a larger result is left out
 * (`result: null, result_truncated: true`) and read with GET .../jobs/{id}. Keeps a batch of
 * completions' events small, whatever a task returns.
 */
export const MAX_EVENT_RESULT_BYTES = 8192;

const jobFields = {
  job_id: Type.Integer(),
  task: Type.String(),
  queue_name: Nullable(Type.String()),
  attempts: Type.Integer({ description: 'Attempts made, this one included' }),
  max_attempts: Type.Integer(),
};

export const jobEvents = [
  defineEvent({
    type: 'job.completed',
    description:
      'A job of a visible task (one the API enqueues) completed. `result` is what the task returned, or null with `result_truncated` when its JSON is over 8 KB (GET .../jobs/{id} has it). Jobs of internal tasks (webhook deliveries, say) publish nothing.',
    data: Closed({
      ...jobFields,
      result: Type.Unknown({ description: 'What the task returned (JSON), null when truncated' }),
      result_truncated: Type.Boolean(),
      completed_at: Timestamp,
    }),
    example: {
      job_id: 4211,
      task: 'interactions.export',
      queue_name: null,
      attempts: 1,
      max_attempts: 5,
      result: { fileId: 'exp_7QmW2xZ9aB4kR1tY', rows: 1520 },
      result_truncated: false,
      completed_at: '2026-11-25T20:10:00.000Z',
    },
  }),
  defineEvent({
    type: 'job.failed',
    description:
      'A job of a visible task failed for good: its last attempt threw, or its worker stopped responding on its last attempt (lock timeout). An attempt that will be retried publishes nothing; a cancelled job publishes nothing either (only the API cancels, and its answer says so).',
    data: Closed({ ...jobFields, error: Type.String(), failed_at: Timestamp }),
    example: {
      job_id: 4212,
      task: 'records.import',
      queue_name: 'imports',
      attempts: 5,
      max_attempts: 5,
      error: 'BAD_REQUEST: items[3].data is not an object',
      failed_at: '2026-11-25T20:11:00.000Z',
    },
  }),
];

/** The job as an event needs it: its row's identity and counters. */
export interface FinishedJob {
  collection_id: string;
  id: number;
  task: string;
  queue_name: string | null;
  attempts: number;
  max_attempts: number;
}

export function completedEvent(job: FinishedJob, result: unknown, at: Date): NewEvent {
  const text = JSON.stringify(result ?? null);
  const truncated = Buffer.byteLength(text) > MAX_EVENT_RESULT_BYTES;
  return {
    type: 'job.completed',
    data: {
      ...fields(job),
      result: truncated ? null : (result ?? null),
      result_truncated: truncated,
      completed_at: at.toISOString(),
    },
  };
}

export function failedEvent(job: FinishedJob, error: string, at: Date): NewEvent {
  return { type: 'job.failed', data: { ...fields(job), error, failed_at: at.toISOString() } };
}

const fields = (job: FinishedJob) => ({
  job_id: job.id,
  task: job.task,
  queue_name: job.queue_name,
  attempts: job.attempts,
  max_attempts: job.max_attempts,
});
