/**
 * Leases: an app's workers take the jobs of its declared tasks over HTTP (POST .../jobs/lease),
 * keep them (heartbeat, progress), and report how they ended (complete, fail). The rules:
 * - A lease takes due jobs of the collection's named tasks (each declared), most urgent first,
 *   then those its named queues let start (concurrency, rate, pause: queues.repository.ts); it waits up to `waitSeconds` for one (lease-waits.ts).
 * - A leased job is running, its attempt counted, under a lease id of its own that every later
 *   call names. The lease lasts the task's `leaseSeconds` unless extended; once it has expired
 *   the engine's sweep hands the job back to the queue (the attempt counts as failed), and a
 *   call with the old lease id is a 409 saying what happened to the job.
 * - Complete and fail write the outcome, and publish `job.completed` / `job.failed` in the same
 *   transaction, as the engine does for the service's visible tasks.
 * Guarantee: at least once, as for every job: a worker that dies, or stops heartbeating, has its
 * job leased again.
 */
import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../../db/index.ts';
import { AppError, conflict, notFound } from '../../platform/errors.ts';
import {
  APP_TASK_LIMITS,
  type CompleteRequest,
  type FailRequest,
  type HeartbeatRequest,
  type JobLease,
  type LeasedJobs,
  type LeaseProgressRequest,
  type LeaseRequest,
} from './app-tasks.schema.ts';
import type { AppTasksService } from './app-tasks.service.ts';
import type { JobObserver } from './engine/core.ts';
import { JOBS_CHANNEL, type JobEngine } from './engine.ts';
import { findVisible } from './job-admin.repository.ts';
import { completedEvent, type EventPublisher, failedEvent } from './jobs.events.ts';
import { APP_TASK_LABEL } from './jobs.metrics.ts';
import type { JobProgress, JobRow } from './jobs.repository.ts';
import type { Job } from './jobs.schema.ts';
import { APP_LANE } from './jobs.settings.ts';
import type { LeaseWaits } from './lease-waits.ts';
import * as repo from './leases.repository.ts';
import * as queues from './queues.repository.ts';

const lease = (r: repo.LeasedRow) => ({
  id: r.id,
  task: r.task,
  payload: r.payload,
  attempt: r.attempts,
  maxAttempts: r.max_attempts,
  priority: r.priority,
  key: r.key,
  lastError: r.last_error,
  createdAt: r.created_at.toISOString(),
  leaseId: r.locked_by,
  leaseExpiresAt: r.lock_expires_at.toISOString(),
  leaseSeconds: r.lease_seconds,
});

export class LeasesService {
  private publisher: EventPublisher | undefined;
  private observer: JobObserver | undefined;

  constructor(
    private readonly db: Db,
    /** The backoff of a failed attempt: the engine's, as for the service's own tasks. */
    private readonly engine: JobEngine,
    private readonly appTasks: AppTasksService,
    readonly waits: LeaseWaits,
    /** A job as the jobs API answers it (the jobs service's, given here: that service holds this one). */
    private readonly toJob: (row: JobRow) => Job,
  ) {}

  /** Tells `observer` (the metrics) of every lease, completion and failure from now on. */
  observe(observer: JobObserver): void {
    this.observer = observer;
  }

  /** Publishes job.completed / job.failed of leased jobs from now on (set by JobsService.publishEventsTo). */
  publishEventsTo(publisher: EventPublisher): void {
    this.publisher = publisher;
  }

  /**
   * Leases up to `max` due jobs of `tasks`; when none is due, waits up to `waitSeconds` for one.
   * `signal`: the client hung up: stop waiting, and hand back what was leased for it meanwhile.
   */
  async lease(collectionId: string, body: LeaseRequest, signal?: AbortSignal): Promise<LeasedJobs> {
    const names = [...new Set(body.tasks)];
    const seconds = await this.appTasks.leaseSeconds(collectionId, names);
    const wanted = names.map((task) => ({ task, leaseSeconds: seconds.get(task) as number }));
    const max = body.max ?? 1;
    const until = Date.now() + (body.waitSeconds ?? 0) * 1000;
    for (;;) {
      const rows = await repo.lease(this.db, APP_LANE, collectionId, wanted, max);
      if (rows.length < max) rows.push(...(await this.leaseFromQueues(collectionId, wanted, max - rows.length)));
      if (rows.length > 0) {
        if (signal?.aborted) {
          await repo.release(
            this.db,
            collectionId,
            rows.map((r) => r.locked_by),
          );
          // Another waiting lease may take them now.
          await this.db.notify(JOBS_CHANNEL, `${Date.now()}`).catch(() => {});
          return { items: [] };
        }
        for (const r of rows) this.observer?.started(APP_TASK_LABEL, APP_LANE, r.waited_seconds);
        return { items: rows.map(lease) };
      }
      const left = until - Date.now();
      if (left <= 0 || signal?.aborted || this.waits.isClosed) return { items: [] };
      await this.waits.wait(left, signal);
    }
  }

  /**
   * Jobs of the wanted tasks in the collection's named queues, with the queues' flow control
   * (concurrency, rate, pause) as our own workers' claims have it: the same claim
   * (queues.repository.ts), under the same lock, then each job given a lease of its own.
   */
  private async leaseFromQueues(collectionId: string, wanted: repo.Wanted[], max: number): Promise<repo.LeasedRow[]> {
    if (!(await queues.hasQueuedInQueues(this.db, { lane: APP_LANE, collectionId }))) return [];
    const claimId = `lease-claim:${randomUUID()}`;
    const longest = Math.max(...wanted.map((w) => w.leaseSeconds));
    return this.db.transaction(async (tx) => {
      await queues.lockQueueClaims(tx);
      const tasks = wanted.map((w) => w.task);
      const claimed = await queues.claimQueued(tx, claimId, longest * 1000, { tasks, collectionId }, max);
      return claimed.length > 0 ? repo.leaseClaimed(tx, collectionId, claimId, wanted) : [];
    });
  }

  /** Extends the lease by `leaseSeconds` (default the task's) from now. */
  async heartbeat(collectionId: string, jobId: string, body: HeartbeatRequest): Promise<JobLease> {
    return this.extend(collectionId, Number(jobId), body.leaseId, body.leaseSeconds);
  }

  /** Records progress (shown with the job) and extends the lease as a heartbeat does. */
  async progress(collectionId: string, jobId: string, body: LeaseProgressRequest): Promise<JobLease> {
    const { leaseId, ...progress } = body;
    return this.extend(collectionId, Number(jobId), leaseId, undefined, progress);
  }

  /** The job is done: completed with `result` (at most APP_TASK_LIMITS.resultBytes of JSON). */
  async complete(collectionId: string, jobId: string, body: CompleteRequest): Promise<Job> {
    const result = body.result ?? null;
    const bytes = Buffer.byteLength(JSON.stringify(result));
    if (bytes > APP_TASK_LIMITS.resultBytes)
      throw new AppError(
        413,
        'PAYLOAD_TOO_LARGE',
        `result is ${bytes} bytes of JSON, over the ${APP_TASK_LIMITS.resultBytes} a job keeps; store a large output elsewhere and return where it is`,
        { field: 'result', limit: APP_TASK_LIMITS.resultBytes },
      );
    const id = Number(jobId);
    const job = await this.db.transaction(async (tx) => {
      const held = await repo.lockLeased(tx, APP_LANE, collectionId, id, body.leaseId);
      if (!held) throw await this.refusal(tx, collectionId, id, body.leaseId);
      await repo.complete(tx, collectionId, id, result);
      const row = await this.reread(tx, collectionId, id);
      if (this.publisher)
        await this.publisher.publish(tx, collectionId, [completedEvent(row, result, row.finished_at ?? new Date())]);
      return this.toJob(row);
    });
    this.observer?.finished(APP_TASK_LABEL, APP_LANE, 'succeeded');
    return job;
  }

  /**
   * The attempt failed: the job is leased again at `retryAt` (default: the service's backoff for
   * this attempt), or fails for good once its attempts are spent (job.failed).
   */
  async fail(collectionId: string, jobId: string, body: FailRequest): Promise<Job> {
    const id = Number(jobId);
    const job = await this.db.transaction(async (tx) => {
      const held = await repo.lockLeased(tx, APP_LANE, collectionId, id, body.leaseId);
      if (!held) throw await this.refusal(tx, collectionId, id, body.leaseId);
      const retryAt = body.retryAt ? new Date(body.retryAt) : new Date(Date.now() + this.engine.backoff(held.attempts));
      await repo.fail(tx, collectionId, id, body.error, retryAt);
      const row = await this.reread(tx, collectionId, id);
      if (row.status === 'failed' && this.publisher)
        await this.publisher.publish(tx, collectionId, [failedEvent(row, body.error, row.finished_at ?? new Date())]);
      return this.toJob(row);
    });
    this.observer?.finished(APP_TASK_LABEL, APP_LANE, job.status === 'failed' ? 'failed' : 'retried');
    return job;
  }

  /** The job just written, in the transaction that wrote it (and still holds its row). */
  private async reread(tx: Queryable, collectionId: string, id: number): Promise<JobRow> {
    return (await findVisible(tx, collectionId, id)) as JobRow;
  }

  private async extend(
    collectionId: string,
    id: number,
    leaseId: string,
    seconds: number | undefined,
    progress?: JobProgress,
  ): Promise<JobLease> {
    const row = await repo.extend(this.db, APP_LANE, collectionId, id, leaseId, seconds, progress);
    if (!row) throw await this.refusal(this.db, collectionId, id, leaseId);
    return { id, leaseId, leaseExpiresAt: row.lock_expires_at.toISOString() };
  }

  /**
   * Why `leaseId` is not the job's current lease, as the error to answer: 404 for a job the
   * collection does not have (or cannot see), else a 409 saying what became of the job. `q`: the
   * transaction the refused call runs in, if any (PGlite has one connection).
   */
  private async refusal(q: Queryable, collectionId: string, id: number, leaseId: string): Promise<AppError> {
    const s = await repo.leaseState(q, collectionId, id);
    if (!s?.visible) return notFound('Job');
    const counts = { status: s.status, attempts: s.attempts, maxAttempts: s.max_attempts };
    if (s.lane !== APP_LANE)
      return conflict(
        `Job ${id} is a job of the service's task "${s.task}", which the service runs; leases are for app tasks' jobs`,
        {
          ...counts,
          reason: 'not_an_app_task',
        },
      );
    const gone = `Lease ${leaseId} is not job ${id}'s lease any more (or never was)`;
    if (s.status === 'running')
      return conflict(
        `${gone}: it expired (a lease lasts leaseSeconds unless a heartbeat or progress extends it) and the job was leased again, now attempt ${s.attempts} of ${s.max_attempts}; do not report this attempt`,
        { ...counts, reason: 'leased_again' },
      );
    if (s.status === 'queued' || s.status === 'errored')
      return conflict(
        `${gone}: it expired (a lease lasts leaseSeconds unless a heartbeat or progress extends it) and the job went back to the queue (${s.status}, ${s.attempts} of ${s.max_attempts} attempts spent); it will be leased again`,
        { ...counts, reason: 'returned_to_queue' },
      );
    return conflict(`${gone}: the job is ${s.status}`, { ...counts, reason: 'finished' });
  }
}
