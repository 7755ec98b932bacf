/**
 * The runner: runs a claimed job's handler in a slot, and keeps the engine's claims alive.
 *
 * Design
 * - A run: the slot is taken (slots.ts) → the handler runs with the job, the db, the stop
 *   signal and `progress` → it returns: the slot is free at once (a prefetched job takes it)
 *   → the outcome is written: a success with the next completion batch (completions.ts), a
 *   throw as a failed attempt: `errored` with an exponential backoff (`backoff`, ±20% jitter;
 *   at least a `RetryLater`'s time, when the handler knows when to try again: an HTTP
 *   answer's Retry-After) and the engine woken for its retry, or `failed` at `maxAttempts` → the claim leaves `held`
 *   and, unless the statement that recorded it claimed its successor, the claimer is woken.
 *   The states of the job meanwhile are `Held`'s (core.ts): running → returned → gone.
 * - A handler interrupted by the shutdown (its signal aborted) is not a failed attempt: stop()
 *   releases it (engine.ts, "Shutdown"). A value that is not JSON fails the attempt.
 * - Progress: written at most every PROGRESS_MIN_INTERVAL_MS (the final value goes with the
 *   outcome anyway), and only while this worker holds the claim.
 * - Named queues: a finished queue job makes the queue's next job claimable, possibly by
 *   another process: the claimer is hinted, and a NOTIFY with ":q" tells the others.
 * - Liveness: a running worker refreshes `locked_at` (heartbeat, every lockTimeout/3 unless
 *   JOBS_HEARTBEAT_MS says otherwise) of exactly the claims it holds (`held`). A job whose
 *   `locked_at` is older than the lock timeout belonged to a dead worker: it is made claimable
 *   again by the sweep (housekeeping.ts; the lost attempt counts). Every finishing UPDATE
 *   checks `locked_by`, so a worker that lost its claim cannot overwrite the new owner's outcome.
 * - Liveness details: each claim carries its own expiry (`lock_expires_at` = claim or last
 *   heartbeat + the claiming worker's lock timeout), so workers with different settings agree.
 * - The heartbeat timer's states: armed from start() until stop() has returned (claims being
 *   written out or released by stop() stay alive meanwhile).
 */
import { AppError } from '../../../platform/errors.ts';
import { RetryLater, type TaskContext } from '../../../platform/tasks.ts';
import * as claims from '../claims.repository.ts';
import type * as repo from '../jobs.repository.ts';
import type { JobsSettings } from '../jobs.settings.ts';
import type { Claimer } from './claimer.ts';
import type { Completions } from './completions.ts';
import { type EngineCore, type Held, JOBS_CHANNEL } from './core.ts';
import type { Slots } from './slots.ts';
import type { Wakeup } from './wakeup.ts';

/** Progress is written at most this often (see "Progress"). */
const PROGRESS_MIN_INTERVAL_MS = 200;
/** What a failed attempt keeps of its error (`last_error`). */
const MAX_ERROR_LENGTH = 4000;

export class Runner {
  /** Refreshes the held claims' expiry: armed from start() until stop() has returned. */
  private heartbeatTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: EngineCore,
    private readonly slots: Slots,
    private readonly completions: Completions,
    private readonly claimer: Claimer,
    private readonly wakeup: Wakeup,
  ) {}

  startHeartbeat(): void {
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), this.core.settings.heartbeatMs);
    this.heartbeatTimer.unref();
  }

  stopHeartbeat(): void {
    clearInterval(this.heartbeatTimer);
  }

  /** Starts a ready job's handler in a slot (called by the slots' `drain`). */
  run(entry: Held): void {
    const { row } = entry;
    this.slots.take(entry);
    entry.done = this.execute(entry)
      .catch(() => false)
      .then((refilled) => {
        this.core.held.delete(row.id);
        this.core.settle();
        // A slot is free, unless the statement that recorded this job claimed its successor.
        if (!refilled) this.claimer.schedule();
      });
  }

  private async heartbeat(): Promise<void> {
    const { core } = this;
    if (core.held.size === 0) return;
    const ids = [...core.held.keys()];
    await core
      .retrying(() => claims.touchLocks(core.db, core.workerId, ids, core.settings.lockTimeoutMs))
      .catch((err) => core.log.error({ err }, 'jobs: heartbeat failed'));
  }

  /** Runs the handler and records the outcome; true when the slot was claimed again with it. */
  private async execute(entry: Held): Promise<boolean> {
    const { core } = this;
    const { row } = entry;
    const def = core.tasks.get(row.task);
    let lastWrite = 0;
    const ctx: TaskContext = {
      job: {
        id: row.id,
        collectionId: row.collection_id,
        task: row.task,
        payload: row.payload,
        attempt: row.attempts,
        maxAttempts: row.max_attempts,
      },
      db: core.db,
      signal: core.abort.signal,
      progress: async (p) => {
        const progress: repo.JobProgress = { done: p.done };
        if (p.total !== undefined) progress.total = p.total;
        if (p.message !== undefined) progress.message = p.message.slice(0, 500);
        entry.lastProgress = progress;
        // Throttled: the final value is written with the outcome anyway.
        const now = Date.now();
        if (now - lastWrite < PROGRESS_MIN_INTERVAL_MS) return;
        lastWrite = now;
        await claims.setProgress(core.db, row.collection_id, row.id, core.workerId, progress);
      },
    };
    let outcome: { ok: true; value: unknown } | { ok: false; error: string; retryAfterMs: number };
    core.observer?.started(row.task, core.lane, Math.max(0, Date.now() - row.run_at.getTime()) / 1000);
    try {
      if (!def) throw new Error(`Task "${row.task}" is not registered in this worker`);
      const value = (await def.handler(ctx)) ?? null;
      if (JSON.stringify(value) === undefined) throw new Error('The task returned a value that is not JSON');
      outcome = { ok: true, value };
    } catch (err) {
      // A handler that knows when to try again (RetryLater: an answer's Retry-After) waits at least that long.
      outcome = {
        ok: false,
        error: describeError(err),
        retryAfterMs: err instanceof RetryLater ? err.retryAfterMs : 0,
      };
    }
    // The slot is free once the handler has returned: a prefetched job takes it now.
    this.slots.free(entry);
    const ranMs = performance.now() - (entry.startedAt ?? 0);
    this.slots.drain();
    let refilled = false;
    try {
      if (outcome.ok) {
        refilled = await this.completions.complete(row, outcome.value, entry.lastProgress, ranMs);
        core.observer?.finished(row.task, core.lane, 'succeeded', ranMs / 1000);
      } else if (core.abort.signal.aborted) {
        // Interrupted by shutdown, not a failure of the job: stop() releases it.
        core.log.info({ jobId: row.id }, 'jobs: job interrupted by shutdown');
      } else {
        const delay = Math.max(backoff(core.settings, row.attempts), outcome.retryAfterMs);
        // The last attempt of a visible task's job publishes job.failed with its write.
        const last = Boolean(def?.visible) && row.attempts >= row.max_attempts;
        const r = await this.completions.fail(entry, outcome.error, delay, last);
        core.log.warn(
          { jobId: row.id, task: row.task, attempt: row.attempts, status: r?.status, error: outcome.error },
          'jobs: attempt failed',
        );
        if (r?.status === 'errored') this.wakeup.wake(r.run_at.getTime());
        if (r) core.observer?.finished(row.task, core.lane, r.status === 'failed' ? 'failed' : 'retried', ranMs / 1000);
      }
      // The next job of a named queue is now claimable, possibly by another process.
      if (row.queue_name !== null) {
        this.claimer.hintQueues();
        if (refilled) this.claimer.schedule();
        await core.db.notify(JOBS_CHANNEL, `${Date.now()}:q`);
      }
    } catch (err) {
      // The lock timeout will hand the job to another worker.
      core.log.error({ err, jobId: row.id }, 'jobs: could not record the outcome');
    }
    return refilled;
  }
}

/** Exponential with ±20% jitter: base·2^(attempt−1), capped. */
export function backoff(settings: JobsSettings, attempt: number): number {
  const { backoffBaseMs: base, backoffMaxMs: max } = settings;
  const raw = Math.min(max, base * 2 ** Math.min(attempt - 1, 40));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
}

function describeError(err: unknown): string {
  let text: string;
  if (err instanceof AppError) text = `${err.errorCode}: ${err.message}`;
  else if (err instanceof Error) text = err.message || err.name;
  else text = String(err);
  return text.slice(0, MAX_ERROR_LENGTH);
}
