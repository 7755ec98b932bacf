/**
 * The jobs API's rules: what may be enqueued (the service's visible tasks and the collection's
 * declared app tasks, payload checked by the task; one job, a bulk of up to 1,000, or a
 * schedule's tick in its transaction), which jobs a collection sees (its visible ones),
 * cancellation and retries. Named queues' flow control is QueuesService's, app tasks and their
 * leases the `app` services'.
 */
import type { Db, Queryable } from '../../db/index.ts';
import { AppError, badRequest, conflict, notFound } from '../../platform/errors.ts';
import { paging } from '../../platform/schemas.ts';
import type { EnqueueOptions, QueuedJob, TaskDefinition } from '../../platform/tasks.ts';
import type { AppTasksService } from './app-tasks.service.ts';
import type { JobEngine } from './engine.ts';
import * as repo from './job-admin.repository.ts';
import type { EventPublisher } from './jobs.events.ts';
import type { JobRow, JobStatus } from './jobs.repository.ts';
import type { EnqueueAsyncJobRequest, EnqueueAsyncJobResponse, Job, JobsQuery, JobTask } from './jobs.schema.ts';
import type { LeasesService } from './leases.service.ts';
import type { RetryJobsRequest, RetryJobsResponse } from './queues.schema.ts';
import { QueuesService } from './queues.service.ts';

export function toJob(r: JobRow): Job {
  return {
    id: r.id,
    task: r.task,
    payload: r.payload,
    priority: r.priority,
    runAt: r.run_at.toISOString(),
    createdAt: r.created_at.toISOString(),
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    lastError: r.last_error,
    lockedAt: r.locked_at?.toISOString() ?? null,
    key: r.key,
    queueName: r.queue_name,
    status: r.status,
    progress: r.progress,
    result: r.result ?? null,
    finishedAt: r.finished_at?.toISOString() ?? null,
  };
}

const answer = (res: QueuedJob): EnqueueAsyncJobResponse => {
  const out: EnqueueAsyncJobResponse = { id: res.id, task: res.task, runAt: res.runAt.toISOString() };
  if (res.key !== null) out.key = res.key;
  return out;
};

export class JobsService {
  /** The `default` lane's engine: other modules enqueue on it (any lane's task), and their tasks are registered on it. */
  readonly engine: JobEngine;
  /** Named queues: depth and flow control. */
  readonly queues: QueuesService;

  constructor(
    private readonly db: Db,
    /** One engine per lane, sharing one task registry; the first is the `default` lane's. */
    readonly engines: JobEngine[],
    /** The app's own tasks (declared over the API) and their leases by the app's workers. */
    readonly app: { tasks: AppTasksService; leases: LeasesService },
  ) {
    this.engine = engines[0];
    this.queues = new QueuesService(db, this.engine);
  }

  /**
   * Publishes `job.completed` / `job.failed` of visible tasks' jobs through `publisher` (the
   * webhooks service) from now on, in the transaction that records each final state. The jobs
   * module is built before the webhooks module, so buildApp calls this once both are built;
   * until then (and in an app that never calls it) jobs publish nothing.
   */
  publishEventsTo(publisher: EventPublisher): void {
    for (const e of this.engines) e.publishEventsTo(publisher);
    this.app.leases.publishEventsTo(publisher);
  }

  /** Starts every lane's worker. */
  async start(): Promise<void> {
    for (const e of this.engines) await e.start();
  }

  /** Stops every lane's worker at once (each within the stop timeout). */
  async stop(): Promise<void> {
    await Promise.all(this.engines.map((e) => e.stop()));
  }

  /**
   * The tasks the API takes for the collection, each with its payload's schema and a payload to
   * start from: the service's own, then the app's (`source`).
   */
  async tasks(collectionId: string): Promise<{ items: JobTask[] }> {
    const own = this.engine.visibleTaskDefinitions().map((t) => ({
      name: t.name,
      description: t.description ?? '',
      payloadSchema: t.payloadSchema ?? {},
      example: t.example ?? {},
      source: 'service' as const,
    }));
    const apps = (await this.app.tasks.list(collectionId)).items.map((t) => ({
      name: t.name,
      description: t.description,
      payloadSchema: t.payloadSchema ?? {},
      example: t.example ?? {},
      source: 'app' as const,
    }));
    return { items: [...own, ...apps] };
  }

  /**
   * The task a collection may enqueue by this name: a visible registered task (the service's
   * own), else one the collection declared (an app task, leased by its workers), else none. The
   * one place that says which tasks the API, bulk enqueue and schedules take. A service task's
   * name is never an app task's (declaring one is refused), and an internal task is no one's.
   */
  async resolveTask(q: Queryable, collectionId: string, name: string): Promise<TaskDefinition | undefined> {
    const def = this.engine.task(name);
    if (def) return def.visible ? def : undefined;
    return this.app.tasks.definition(q, collectionId, name);
  }

  /** The names `resolveTask` knows for the collection, for a refusal that lists them. */
  async knownTasks(q: Queryable, collectionId: string): Promise<string[]> {
    return [...this.engine.visibleTasks(), ...(await this.app.tasks.names(q, collectionId))];
  }

  /**
   * A job request checked as the API checks it: a task the collection may enqueue, its payload
   * checked by the task, a queue name of the tenant's own. Throws a 400 naming the problem
   * (prefixed with `where`, e.g. "jobs[3]: ", for an item of a list).
   */
  async prepare(
    q: Queryable,
    collectionId: string,
    body: EnqueueAsyncJobRequest,
    where = '',
  ): Promise<{ options: EnqueueOptions; def: TaskDefinition }> {
    const def = await this.resolveTask(q, collectionId, body.task);
    if (!def) {
      const known = await this.knownTasks(q, collectionId);
      throw badRequest(`${where}Unknown task "${body.task}"; known tasks: ${known.join(', ') || '(none)'}`, {
        knownTasks: known,
      });
    }
    // The service's own queues are named `<task>:<id>` (one journey's rebuilds, say): a tenant's
    // job in one would wait behind, or hold back, the service's work for that collection.
    if (body.queueName?.includes(':'))
      throw badRequest(
        `${where}queueName "${body.queueName}" contains ':', which only the service's own queues use; choose a name without it, e.g. "imports"`,
        { field: 'queueName' },
      );
    let payload: unknown;
    try {
      payload = def.parsePayload ? def.parsePayload(body.payload ?? {}) : (body.payload ?? {});
    } catch (err) {
      if (where && err instanceof AppError) err.message = `${where}${err.message}`;
      throw err;
    }
    return {
      def,
      options: {
        task: def.name,
        payload,
        runAt: body.runAt ? new Date(body.runAt) : undefined,
        priority: body.priority,
        key: body.key,
        queueName: body.queueName,
        maxAttempts: body.maxAttempts,
      },
    };
  }

  /**
   * A job submitted through the API (or a schedule's tick, in its transaction `q`): checked by
   * `prepare`, then queued on the engine like any other.
   */
  async submit(
    collectionId: string,
    body: EnqueueAsyncJobRequest,
    q: Queryable = this.db,
  ): Promise<EnqueueAsyncJobResponse> {
    const { options, def } = await this.prepare(q, collectionId, body);
    return answer(await this.engine.enqueue(q, collectionId, options, def));
  }

  /**
   * Up to MAX_BULK jobs in one statement: every item checked first (a 400 names the first bad
   * one, `jobs[i]`, and nothing is queued), answered in the order given.
   */
  async submitMany(
    collectionId: string,
    bodies: EnqueueAsyncJobRequest[],
  ): Promise<{ items: EnqueueAsyncJobResponse[] }> {
    const prepared = [];
    for (const [i, body] of bodies.entries())
      prepared.push(await this.prepare(this.db, collectionId, body, `jobs[${i}]: `));
    const rows = await this.engine.enqueueMany(
      this.db,
      collectionId,
      prepared.map((p) => p.options),
      prepared.map((p) => p.def),
    );
    return { items: rows.map(answer) };
  }

  async get(collectionId: string, jobId: string): Promise<Job> {
    const row = await repo.findVisible(this.db, collectionId, Number(jobId));
    if (!row) throw notFound('Job');
    return toJob(row);
  }

  async list(collectionId: string, q: JobsQuery): Promise<{ items: Job[]; limit: number; offset: number }> {
    const { limit, offset } = paging(q, 20);
    if (q.from && q.to && Date.parse(q.from) > Date.parse(q.to)) throw badRequest('from must not be after to');
    const state = q.state as JobStatus | undefined;
    const rows = await repo.listVisible(this.db, collectionId, { ...q, state, limit, offset });
    return { items: rows.map(toJob), limit, offset };
  }

  /** A failed or cancelled job queued again as new (attempts, error and result reset). */
  async retry(collectionId: string, jobId: string): Promise<Job> {
    const { row, retried } = await repo.retry(this.db, collectionId, Number(jobId));
    if (!row) throw notFound('Job');
    if (!retried) {
      if (row.status === 'failed' || row.status === 'cancelled')
        throw conflict(
          `Another job with key "${row.key}" is pending; cancel it (or wait for it to finish) to retry this one`,
          { status: row.status, key: row.key },
        );
      throw conflict(`A ${row.status} job cannot be retried; only failed and cancelled jobs can`, {
        status: row.status,
      });
    }
    await this.engine.announce(this.db, [row]);
    return toJob(row);
  }

  /** Up to `limit` finished jobs matching the filter queued again (see `retry`). */
  async retryMany(collectionId: string, body: RetryJobsRequest): Promise<RetryJobsResponse> {
    if (body.from && body.to && Date.parse(body.from) > Date.parse(body.to))
      throw badRequest('from must not be after to');
    const { rows, more } = await repo.retryMany(this.db, collectionId, {
      status: body.status ?? 'failed',
      task: body.task,
      queueName: body.queueName,
      from: body.from,
      to: body.to,
      limit: body.limit ?? 1000,
    });
    await this.engine.announce(this.db, rows);
    return { retried: rows.length, ids: rows.map((r) => r.id), more };
  }

  /** Only a pending job (queued or errored, waiting for a retry) can be cancelled. */
  async cancel(collectionId: string, jobId: string): Promise<Job> {
    const { row, cancelled } = await repo.cancel(this.db, collectionId, Number(jobId));
    if (!row) throw notFound('Job');
    if (!cancelled) throw conflict(`A ${row.status} job cannot be cancelled`, { status: row.status });
    return toJob(row);
  }
}
