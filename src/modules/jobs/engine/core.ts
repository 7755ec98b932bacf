/**
 * What every part of the job engine shares (engine.ts puts the parts together): who the engine is
 * (its worker id, lane, task registry, settings), where it is in its life, and the claims it holds.
 *
 * Design
 * - Life: new → started → stopping → stopped (`life`). Nothing claims before start() or once
 *   stop() has begun (`live`); claims in flight then still end, and their jobs still run (see
 *   the shutdown in engine.ts). Once stopped, nothing is written any more: the database may be
 *   closing. An engine is started once; start() after stop() does nothing.
 * - Held claims (`held`): every job this engine has claimed and not yet let go, in one of the
 *   states of `Held` (ready → running → returned), whichever part holds it now: the slots
 *   (slots.ts) while it waits or runs, the completions (completions.ts) while its outcome is
 *   written. The heartbeat keeps exactly these claims alive (runner.ts); a claim of this worker
 *   not in `held` is one in doubt (claimer.ts). stop() waits until `held` is empty (`whenIdle`).
 * - Contention: a write of the engine that PostgreSQL aborts for a deadlock or serialization
 *   failure is tried again (`retrying`, src/db/retry.ts).
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { type Db, retryOnConflict } from '../../../db/index.ts';
import type { TaskDefinition } from '../../../platform/tasks.ts';
import type { EventPublisher } from '../jobs.events.ts';
import type * as repo from '../jobs.repository.ts';
import type { JobsSettings } from '../jobs.settings.ts';

export type EngineLogger = Pick<FastifyBaseLogger, 'debug' | 'info' | 'warn' | 'error'>;

/** The NOTIFY channel of the wake-up (wakeup.ts); its payload says when the jobs are due. */
export const JOBS_CHANNEL = 'jobs_new';

/** new → started → stopping → stopped. */
export type EngineLife = 'new' | 'started' | 'stopping' | 'stopped';

/**
 * A claim this engine holds. Its states: `ready` (claimed, waiting for a slot: prefetched) →
 * `running` (its handler runs in a slot) → `returned` (the handler returned: the slot is free,
 * the outcome may still be being written) → gone from `held`. A ready job may also leave
 * `held` straight away: handed back (slots.ts), or released by a shutdown.
 */
export interface Held {
  row: repo.ClaimedJob;
  state: 'ready' | 'running' | 'returned';
  lastProgress: repo.JobProgress | null;
  done: Promise<void>;
  /** When its handler started (performance.now()); undefined while it waits in `ready`. */
  startedAt?: number;
  /** When it was claimed (performance.now()), for the prefetch hold. */
  claimedAt: number;
}

/**
 * Told of each run this engine makes (the metrics, jobs.metrics.ts): when a handler starts,
 * and how its attempt ended once that is recorded. Called on the worker's path: cheap, no I/O.
 */
export interface JobObserver {
  /** `waitedSeconds`: from the job's due time (`run_at`) to its start here. */
  started(task: string, lane: string, waitedSeconds: number): void;
  /**
   * `retried`: failed, with another attempt to come; `failed`: its last attempt failed.
   * `ranSeconds`: the handler's run time, when known (an app's worker reports only the end).
   */
  finished(task: string, lane: string, result: 'succeeded' | 'retried' | 'failed', ranSeconds?: number): void;
  /**
   * A running job whose claim or lease expired, handed back by this process's lock-timeout
   * reclaim (housekeeping.ts): `retried` when an attempt is left, else `failed`. Its worker
   * (another process, or an app's) never reported an outcome.
   */
  reclaimed(task: string, lane: string, result: 'retried' | 'failed'): void;
}

export class EngineCore {
  /** Identifies this engine's claims in `locked_by`. */
  readonly workerId = `w_${randomBytes(6).toString('hex')}`;
  life: EngineLife = 'new';
  /** Aborted when stop() gives up waiting: the running handlers' signal. */
  readonly abort = new AbortController();
  /** Every claim this engine holds: waiting in `ready`, running, or its outcome being written. */
  readonly held = new Map<number, Held>();
  /** Where the final states of visible tasks' jobs are published (completions.ts, "Events"); none until set. */
  publisher: EventPublisher | undefined;
  /** Told of every run (the metrics); none until set. */
  observer: JobObserver | undefined;
  private idleWaiters: (() => void)[] = [];
  /** The lane's task names, and the registry's size when they were read (`taskNames`). */
  private laneTasks: { seen: number; names: string[] } = { seen: -1, names: [] };

  constructor(
    readonly db: Db,
    readonly settings: JobsSettings,
    readonly log: EngineLogger,
    readonly lane: string,
    /** Shared by the engines of one process, so that any of them enqueues any task. */
    readonly tasks: Map<string, TaskDefinition>,
  ) {
    // Every running job's handler may listen to the stop signal, a webhook delivery job once per
    // attempt in flight: the number is bounded by the slots, and Node's warning past 10 is noise.
    setMaxListeners(0, this.abort.signal);
  }

  /** Started and not stopping: the engine claims. */
  get live(): boolean {
    return this.life === 'started';
  }

  /** stop() has begun (or returned). */
  get stopping(): boolean {
    return this.life === 'stopping' || this.life === 'stopped';
  }

  /**
   * The tasks of this engine's lane (the registry may be shared with other lanes' engines). Read
   * on every claim: worked out again only when the registry has grown (tasks are never removed).
   */
  taskNames(): string[] {
    if (this.laneTasks.seen !== this.tasks.size) {
      const names: string[] = [];
      for (const def of this.tasks.values()) if ((def.lane ?? 'default') === this.lane) names.push(def.name);
      this.laneTasks = { seen: this.tasks.size, names };
    }
    return this.laneTasks.names;
  }

  /** How many of this engine's claims each collection has, of those `counted`. */
  perCollection(counted: (e: Held) => boolean): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.held.values())
      if (counted(e)) out.set(e.row.collection_id, (out.get(e.row.collection_id) ?? 0) + 1);
    return out;
  }

  /** Resolves once the engine holds nothing (see `settle`). */
  whenIdle(): Promise<void> {
    if (this.held.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** The engine holds nothing any more: wake stop() waiting for it. */
  settle(): void {
    if (this.held.size === 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /** A write of this engine, retried when PostgreSQL aborts it for a deadlock or serialization failure. */
  retrying<T>(fn: () => Promise<T>): Promise<T> {
    return retryOnConflict(fn, {
      onRetry: (err, attempt, delayMs) =>
        this.log.warn({ err, attempt, delayMs }, 'jobs: write aborted by a concurrent transaction; retrying'),
    });
  }
}
