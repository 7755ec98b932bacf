/**
 * A worker for an app's own tasks (docs/workers.md): it leases due jobs of the tasks it names
 * (`POST .../jobs/lease`, long-polling while none is due), runs up to `concurrency` handlers at
 * once, keeps each job's lease alive while its handler runs (a heartbeat every third of the
 * lease), and reports how each ended: `complete` with what the handler returned, or `fail`
 * with its error's message (and the error's `retryAt`, if it has one).
 *
 *   const worker = runWorker({
 *     baseUrl: 'http://localhost:3000', apiKey: process.env.API_KEY, collectionId: 'acme',
 *     tasks: ['orders.ship'], concurrency: 4,
 *     handler: async (job) => ({ shipped: job.payload.orderId }),
 *   });
 *   process.on('SIGTERM', () => void worker.stop());
 *
 * Delivery is at least once: a job whose worker died, or lost its lease, is leased again, so a
 * handler must be safe to run twice for one job (its `id` is the same every time).
 *
 * States: running (leasing while a slot is free) → stopping (`stop()` or `signal`: no new
 * lease; the long poll in flight is abandoned; running handlers finish and are reported) →
 * stopped (`finished` resolves). A lease refused for a reason that will not pass by itself (a
 * task not declared, a revoked key: a 4xx other than 408 and 429) stops the worker, and
 * `finished` rejects with that error. 503s, 429s, 5xx and network errors are retried with a
 * backoff, honouring Retry-After.
 */
import { createClient, type ServiceClient } from './client.ts';
import { isServiceError, type ServiceError } from './errors.ts';
import type { components } from './schema.ts';

export type LeasedJob = components['schemas']['LeasedJob'];

export interface WorkerContext {
  /**
   * Aborted when the job's lease is lost (it expired and the job was leased again, or the job
   * was cancelled): what the handler does from then on will not be recorded.
   */
  signal: AbortSignal;
  /** Reports progress (shown with the job); also extends the lease. */
  progress(p: { done: number; total?: number; message?: string }): Promise<void>;
}

export interface RunWorkerOptions {
  /** A client of your own; else one is made from `baseUrl` and `apiKey`. */
  client?: ServiceClient;
  baseUrl?: string;
  /** The collection's admin key. */
  apiKey?: string;
  collectionId: string;
  /** The tasks this worker runs (each declared with POST .../tasks). */
  tasks: string[];
  /** Runs one job; its return value (JSON) is the job's result. Throw to fail the attempt. */
  handler(job: LeasedJob, ctx: WorkerContext): Promise<unknown>;
  /** Jobs run at the same time (default 1). */
  concurrency?: number;
  /** How long one lease request waits for a job when none is due (default 20, at most 30). */
  waitSeconds?: number;
  /** Aborting it stops the worker as `stop()` does. */
  signal?: AbortSignal;
  /** Problems the worker met and went on from (default: logged with console.error). */
  onError?(err: unknown, where: { stage: 'lease' | 'heartbeat' | 'complete' | 'fail'; job?: LeasedJob }): void;
}

export interface Worker {
  /** Stops leasing and resolves once every running handler has finished and been reported. */
  stop(): Promise<void>;
  /** Resolves when the worker has stopped; rejects when a lease was refused for good. */
  finished: Promise<void>;
  /** Handlers running now. */
  readonly running: number;
}

/** A failure that says when to try again: thrown by a handler, it becomes the fail's `retryAt`. */
export class RetryLaterError extends Error {
  override readonly name = 'RetryLaterError';
  constructor(
    message: string,
    readonly retryAt: Date,
  ) {
    super(message);
  }
}

/** The most characters of an error the service keeps. */
const MAX_ERROR_LENGTH = 2000;
/** Backoff after a failed call: from 250 ms doubling to 15 s, jittered. */
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 15_000;

const backoff = (attempt: number) =>
  Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt - 1, 16)) * (0.8 + Math.random() * 0.4);

/** A failed call that may go through if made again: the network, a 5xx, a 408 or a 429. */
const isTransient = (err: unknown) =>
  !isServiceError(err) || err.status >= 500 || err.status === 408 || err.status === 429;

/** How long to wait before calling again after `err`: its Retry-After, else the backoff. */
const delayAfter = (err: unknown, attempt: number) =>
  isServiceError(err) && err.retryAfter !== undefined ? err.retryAfter * 1000 : backoff(attempt);

/** Resolves after `ms`, or at once when `signal` aborts. */
const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/** An error's message as the service keeps it (never empty, at most MAX_ERROR_LENGTH). */
function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : String(err);
  return (text || 'Error').slice(0, MAX_ERROR_LENGTH);
}

/** The `retryAt` an error carries (a Date or an ISO string), if any. */
function retryAtOf(err: unknown): string | undefined {
  const at = (err as { retryAt?: unknown } | null)?.retryAt;
  if (at instanceof Date && !Number.isNaN(at.getTime())) return at.toISOString();
  if (typeof at === 'string' && !Number.isNaN(Date.parse(at))) return new Date(at).toISOString();
  return undefined;
}

export function runWorker(options: RunWorkerOptions): Worker {
  if (!options.client && !options.baseUrl) throw new TypeError('runWorker: give client, or baseUrl and apiKey');
  const client = options.client ?? createClient({ baseUrl: options.baseUrl as string, apiKey: options.apiKey });
  if (!options.collectionId) throw new TypeError('runWorker: collectionId is required');
  if (!Array.isArray(options.tasks) || options.tasks.length === 0)
    throw new TypeError('runWorker: tasks must name at least one task');
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  const waitSeconds = Math.min(30, Math.max(0, Math.floor(options.waitSeconds ?? 20)));
  const path = { collectionId: options.collectionId };
  const report =
    options.onError ??
    ((err: unknown, where: { stage: string; job?: LeasedJob }) =>
      console.error(`worker: ${where.stage}${where.job ? ` of job ${where.job.id}` : ''} failed:`, err));

  /** Aborted once the worker stops leasing: ends the long poll in flight and any pause. */
  const stopping = new AbortController();
  const running = new Set<Promise<void>>();
  /** Wakes the lease loop when a slot frees up. */
  let slotFreed: (() => void) | undefined;

  const stop = () => {
    stopping.abort();
    slotFreed?.();
  };
  if (options.signal) {
    if (options.signal.aborted) stop();
    else options.signal.addEventListener('abort', stop, { once: true });
  }

  /**
   * A report of the job's outcome, made again while it fails for a passing reason, until the
   * lease would have expired anyway (then the job is leased again, and the report is moot).
   * Answers false when the lease was lost (409) or the report refused.
   */
  async function settle(job: LeasedJob, stage: 'complete' | 'fail', send: () => Promise<unknown>): Promise<boolean> {
    const until = Date.parse(job.leaseExpiresAt);
    for (let attempt = 1; ; attempt++) {
      try {
        await send();
        return true;
      } catch (err) {
        report(err, { stage, job });
        if (!isTransient(err) || Date.now() >= until) return false;
        await new Promise((r) => setTimeout(r, delayAfter(err, attempt)));
      }
    }
  }

  async function run(job: LeasedJob): Promise<void> {
    const lost = new AbortController();
    const params = { path: { ...path, jobId: String(job.id) } };
    const beat = setInterval(
      () => {
        client
          .POST('/admin/collection/{collectionId}/jobs/{jobId}/heartbeat', { params, body: { leaseId: job.leaseId } })
          .catch((err: unknown) => {
            report(err, { stage: 'heartbeat', job });
            // The lease is gone (re-leased, or the job finished): the handler's work will not count.
            if (isServiceError(err) && (err.status === 409 || err.status === 404)) lost.abort(err);
          });
      },
      Math.max(1000, (job.leaseSeconds * 1000) / 3),
    );
    const ctx: WorkerContext = {
      signal: lost.signal,
      progress: async (p) => {
        await client.POST('/admin/collection/{collectionId}/jobs/{jobId}/progress', {
          params,
          body: { leaseId: job.leaseId, ...p },
        });
      },
    };
    try {
      let outcome: { ok: true; result: unknown } | { ok: false; err: unknown };
      try {
        outcome = { ok: true, result: await options.handler(job, ctx) };
      } catch (err) {
        outcome = { ok: false, err };
      }
      if (lost.signal.aborted) return;
      if (outcome.ok) {
        const result = outcome.result === undefined ? null : outcome.result;
        let tooLarge: ServiceError | undefined;
        const done = await settle(job, 'complete', () =>
          client
            .POST('/admin/collection/{collectionId}/jobs/{jobId}/complete', {
              params,
              body: { leaseId: job.leaseId, result },
            })
            .catch((err: unknown) => {
              if (isServiceError(err) && err.status === 413) tooLarge = err;
              throw err;
            }),
        );
        // A result the service will not keep fails the attempt instead, saying why.
        if (done || !tooLarge) return;
        outcome = { ok: false, err: tooLarge };
      }
      const { err } = outcome;
      const retryAt = retryAtOf(err);
      await settle(job, 'fail', () =>
        client.POST('/admin/collection/{collectionId}/jobs/{jobId}/fail', {
          params,
          body: { leaseId: job.leaseId, error: messageOf(err), ...(retryAt ? { retryAt } : {}) },
        }),
      );
    } finally {
      clearInterval(beat);
    }
  }

  function start(job: LeasedJob): void {
    const p = run(job).finally(() => {
      running.delete(p);
      slotFreed?.();
    });
    running.add(p);
  }

  async function loop(): Promise<void> {
    let failures = 0;
    while (!stopping.signal.aborted) {
      const free = concurrency - running.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          slotFreed = resolve;
        });
        slotFreed = undefined;
        continue;
      }
      let items: LeasedJob[];
      try {
        ({ items } = await client.POST('/admin/collection/{collectionId}/jobs/lease', {
          params: { path },
          body: { tasks: options.tasks, max: free, waitSeconds },
          signal: stopping.signal,
        }));
        failures = 0;
      } catch (err) {
        if (stopping.signal.aborted) break;
        if (!isTransient(err)) throw err;
        report(err, { stage: 'lease' });
        failures++;
        await pause(delayAfter(err, failures), stopping.signal);
        continue;
      }
      // Leased before a stop began: they are this worker's to run and report.
      for (const job of items) start(job);
    }
  }

  const finished = loop()
    .catch((err: unknown) => {
      stop();
      throw err;
    })
    .finally(async () => {
      while (running.size > 0) await Promise.all([...running]);
    });
  // `finished` may never be awaited by a caller that only calls stop(): its rejection is theirs to see there.
  finished.catch(() => {});

  return {
    async stop() {
      stop();
      await finished.catch(() => {});
    },
    finished,
    get running() {
      return running.size;
    },
  };
}
