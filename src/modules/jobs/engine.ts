/**
 * The job engine: durable background work in a table of ours (`jobs`), on PGlite or PostgreSQL.
 * This file is its face (register, enqueue, start, stop); the parts in `engine/` each own their
 * fields and timers, and open with their design notes and states.
 *
 * Design
 * - Life cycle: queued → running → completed; a throwing handler makes the job `errored`
 *   (retried after an exponential backoff) until `maxAttempts`, then `failed`. A pending
 *   (queued/errored) job can be `cancelled`. Finished jobs are deleted after the retention.
 * - The parts, in the order a job meets them:
 *   - engine/wakeup.ts: when to claim. An enqueue's NOTIFY (coalesced, one at a time per
 *     process), LISTEN, the timer for the next future job, the poll, a failed round's retry.
 *   - engine/claimer.ts: claims due jobs for the free slots, one claim in flight at a time
 *     (states idle, claiming, claimingAgain, owed, stopped; the armed turn); named queues;
 *     claims in doubt.
 *   - engine/fairness.ts: which jobs a claim asks for: lanes, turns between collections
 *     (`cursor`), each collection's share of the slots.
 *   - engine/slots.ts: slots and prefetch: claimed jobs wait in `ready` for a slot; the hold
 *     timer hands back those that waited too long.
 *   - engine/runner.ts: runs a handler (progress, the stop signal), the failed attempt's
 *     backoff, and the heartbeat that keeps the claims alive.
 *   - engine/completions.ts: outcomes written in batches that also claim (states idle,
 *     afterClaim, writing), retried until written; `job.completed` / `job.failed` events.
 *   - engine/housekeeping.ts: the lock-timeout reclaim, and retention (run by the
 *     `jobs.retention` system schedule through `sweep()`).
 *   - engine/core.ts: what they share: the engine's identity, its life (new → started →
 *     stopping → stopped), the claims it holds (`Held`: ready → running → returned).
 * - Shutdown: stop() stops claiming, waits for running handlers up to a timeout, then aborts
 *   their signal and releases their claims (queued again, attempt not counted). Jobs of a
 *   claim that was in flight when stop() began were claimed before it: they start and get the
 *   same grace period, so a job the database shows running when stop() begins is run within
 *   it (handing such jobs back, as before, made a test of that flaky on PostgreSQL). Outcomes
 *   not yet written are tried until stop() returns (completions.ts).
 * - Contention: multi-row statements lock their rows in id order (jobs.repository.ts), and a
 *   deadlock or serialization failure is retried (src/db/retry.ts; `retrying`, core.ts).
 * Guarantee: at least once. A handler may run again after a crash, so it must be idempotent.
 */
import type { Db, Queryable } from '../../db/index.ts';
import { badRequest } from '../../platform/errors.ts';
import type { EnqueueOptions, JobQueue, TaskBacklog, TaskContext, TaskDefinition } from '../../platform/tasks.ts';
import * as claims from './claims.repository.ts';
import { Backlog } from './engine/backlog.ts';
import { Claimer } from './engine/claimer.ts';
import { Completions } from './engine/completions.ts';
import { EngineCore, type EngineLogger, JOBS_CHANNEL, type JobObserver } from './engine/core.ts';
import { Fairness } from './engine/fairness.ts';
import { Housekeeping } from './engine/housekeeping.ts';
import { backoff, Runner } from './engine/runner.ts';
import { Slots } from './engine/slots.ts';
import { Wakeup } from './engine/wakeup.ts';
import type { EventPublisher } from './jobs.events.ts';
import * as repo from './jobs.repository.ts';
import { JOBS_LANES, type JobsSettings } from './jobs.settings.ts';

export type { EnqueueOptions, TaskContext, TaskDefinition };
export { type EngineLogger, JOBS_CHANNEL };

/** What a lane's engine is: its name, the task registry it shares, whether it does the housekeeping. */
export interface EngineOptions {
  /** Default `default`. The engine claims the jobs of its lane's tasks only. */
  lane?: string;
  /** Shared by the engines of one process, so that any of them enqueues any task. */
  registry?: Map<string, TaskDefinition>;
  /** The lock-timeout reclaim on every poll (default true; one engine per process is enough). */
  housekeeping?: boolean;
}

export class JobEngine implements JobQueue {
  /** Identifies this engine's claims in `locked_by`. */
  readonly workerId: string;
  readonly lane: string;
  private readonly core: EngineCore;
  private readonly tasks: Map<string, TaskDefinition>;
  private readonly slots: Slots;
  private readonly claimer: Claimer;
  private readonly completions: Completions;
  private readonly runner: Runner;
  private readonly housekeeping: Housekeeping;
  private readonly wakeup: Wakeup;
  private readonly backlogReader: Backlog;

  constructor(
    private readonly db: Db,
    readonly settings: JobsSettings,
    private readonly log: EngineLogger,
    options: EngineOptions = {},
  ) {
    this.lane = options.lane ?? 'default';
    this.tasks = options.registry ?? new Map();
    const core = new EngineCore(db, settings, log, this.lane, this.tasks);
    this.core = core;
    this.workerId = core.workerId;
    // The parts, wired: each calls those it depends on, and the others through these hooks.
    const fairness = new Fairness(core);
    this.slots = new Slots(core, fairness, {
      run: (entry) => this.runner.run(entry),
      inDoubt: () => this.claimer.markInDoubt(),
    });
    this.claimer = new Claimer(core, fairness, this.slots, {
      batchWaiting: () => this.completions.batchWaiting(),
      claimEnded: () => this.completions.claimEnded(),
      roundFailed: () => this.wakeup.retryRound(),
      roundSucceeded: () => this.wakeup.roundSucceeded(),
      wakeAt: (due) => this.wakeup.wake(due),
    });
    this.completions = new Completions(core, fairness, this.slots, this.claimer);
    this.housekeeping = new Housekeeping(core);
    this.wakeup = new Wakeup(core, this.claimer, (options.housekeeping ?? true) ? this.housekeeping : undefined);
    this.runner = new Runner(core, this.slots, this.completions, this.claimer, this.wakeup);
    this.backlogReader = new Backlog(db);
  }

  registerTask(def: TaskDefinition): void {
    if (!/^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)*$/.test(def.name))
      throw new Error(`Task name "${def.name}" must be dotted lowerCamel words, e.g. "records.import"`);
    if (this.tasks.has(def.name)) throw new Error(`Task "${def.name}" is already registered`);
    if (def.lane !== undefined && !(JOBS_LANES as readonly string[]).includes(def.lane))
      throw new Error(`Task "${def.name}" names lane "${def.lane}"; lanes: ${JOBS_LANES.join(', ')}`);
    this.tasks.set(def.name, def);
  }

  task(name: string): TaskDefinition | undefined {
    return this.tasks.get(name);
  }

  /** Publishes `job.completed` / `job.failed` of visible tasks' jobs from now on (completions.ts, "Events"). */
  publishEventsTo(publisher: EventPublisher): void {
    this.core.publisher = publisher;
  }

  /** Tells `observer` of every run from now on (the metrics, jobs.metrics.ts). */
  observe(observer: JobObserver): void {
    this.core.observer = observer;
  }

  /** Due jobs waiting, by task, every lane's (JobQueue's `backlog`; engine/backlog.ts). */
  backlog(): Promise<readonly TaskBacklog[]> {
    return this.backlogReader.read();
  }

  /** Names of the tasks the API may enqueue and list. */
  visibleTasks(): string[] {
    return this.visibleTaskDefinitions().map((t) => t.name);
  }

  /** The tasks the API may enqueue, by name. */
  visibleTaskDefinitions(): TaskDefinition[] {
    return [...this.tasks.values()].filter((t) => t.visible).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /**
   * Enqueue inside the caller's transaction (outbox pattern) or on the db. Unknown task → throws.
   * The wake-up goes in the INSERT or after the commit (wakeup.ts).
   */
  async enqueue(
    q: Queryable,
    collectionId: string,
    options: EnqueueOptions,
    /** The task when it is not a registered one: an app's own task (the jobs service resolves it). */
    def?: TaskDefinition,
  ): Promise<{ id: number; task: string; runAt: Date; key: string | null }> {
    const row = await this.wakeup.enqueue(q, (channel) =>
      repo.upsertJob(q, collectionId, this.newJob(options, def), channel),
    );
    return { id: row.id, task: row.task, runAt: row.run_at, key: row.key };
  }

  /**
   * Several jobs in one statement (an import, a fan-out), with the same rules as `enqueue`
   * for each; answers in the order given. Jobs of the list that share a key end as one job
   * (the last one's definition, as enqueuing them one after the other would), and each of
   * them answers its id.
   */
  async enqueueMany(
    q: Queryable,
    collectionId: string,
    list: EnqueueOptions[],
    /** Per job, the task when it is not a registered one (as for `enqueue`). */
    defs?: (TaskDefinition | undefined)[],
  ): Promise<{ id: number; task: string; runAt: Date; key: string | null }[]> {
    const jobs = list.map((o, i) => this.newJob(o, defs?.[i]));
    // A key repeated in the list: one row, defined by its last occurrence.
    const lastOfKey = new Map<string, number>();
    jobs.forEach((j, i) => {
      if (j.key !== null) lastOfKey.set(j.key, i);
    });
    const kept = jobs.flatMap((j, i) => (j.key === null || lastOfKey.get(j.key) === i ? [i] : []));
    const rows = await repo.insertJobs(
      q,
      collectionId,
      kept.map((i) => jobs[i]),
    );
    const rowOf = new Map(kept.map((i, n) => [i, rows[n]]));
    await this.wakeup.announceAfterCommit(q, rows);
    return jobs.map((j, i) => {
      const row = rowOf.get(j.key === null ? i : (lastOfKey.get(j.key) as number)) as (typeof rows)[number];
      return { id: row.id, task: row.task, runAt: row.run_at, key: row.key };
    });
  }

  /**
   * Wakes the workers for jobs made due by something other than an enqueue (a retry, a queue
   * resumed or given more room), once `q` has committed.
   */
  announce(q: Queryable, rows: { run_at: Date; queue_name: string | null }[]): Promise<void> {
    return this.wakeup.announceAfterCommit(q, rows);
  }

  /** Begins claiming with the configured concurrency (no-op if already started). */
  async start(): Promise<void> {
    if (this.core.life !== 'new') return;
    this.core.life = 'started';
    await this.wakeup.start();
    this.runner.startHeartbeat();
    void this.wakeup.tick();
  }

  /** Stops claiming, lets running jobs finish within `timeoutMs`, then releases the rest (see "Shutdown"). */
  async stop(timeoutMs = this.settings.stopTimeoutMs): Promise<void> {
    const { core } = this;
    if (core.life !== 'started') return;
    core.life = 'stopping';
    this.claimer.stop();
    await this.wakeup.stop();
    // A claim in flight now was made before the stop: its jobs start and get the grace period.
    while (this.claimer.claiming) await new Promise((resolve) => setTimeout(resolve, 5));
    const finished = core.whenIdle();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      finished.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      core.abort.abort(new Error('worker shutting down'));
      // Prefetched jobs not started by now never will be here: released with the rest.
      this.slots.dropReady();
      const ids = [...core.held.keys()];
      const released = await core
        .retrying(() => claims.release(this.db, this.workerId, ids))
        .catch((err) => {
          this.log.error({ err }, 'jobs: could not release claims on shutdown');
          return 0;
        });
      if (released > 0) await this.db.notify(JOBS_CHANNEL, `${Date.now()}:q`).catch(() => {});
      this.log.warn({ released, ids }, 'jobs: shutdown timeout; released unfinished jobs');
    }
    this.runner.stopHeartbeat();
    this.slots.stop();
    core.life = 'stopped';
    this.log.info({ workerId: this.workerId }, 'jobs: worker stopped');
  }

  /** Runs the housekeeping now: lock-timeout reclaim and retention. Returns what it did. */
  sweep(): Promise<{ reclaimed: number; deleted: number }> {
    return this.housekeeping.sweep();
  }

  /** Number of jobs this engine holds now: running, prefetched, or their outcome being written. */
  get activeCount(): number {
    return this.core.held.size;
  }

  /** Exponential with ±20% jitter: base·2^(attempt−1), capped. */
  backoff(attempt: number): number {
    return backoff(this.settings, attempt);
  }

  /** Checks an enqueue's options against the registered task; unknown task or bad values → 400. */
  private newJob(options: EnqueueOptions, given?: TaskDefinition): repo.NewJob {
    const def = given ?? this.tasks.get(options.task);
    if (!def) {
      const known = [...this.tasks.keys()].sort();
      throw badRequest(`Unknown task "${options.task}"; known tasks: ${known.join(', ') || '(none)'}`, {
        knownTasks: known,
      });
    }
    if (options.runAt && Number.isNaN(options.runAt.getTime())) throw badRequest('runAt is not a valid date');
    const priority = options.priority ?? 0;
    if (!Number.isInteger(priority)) throw badRequest('priority must be an integer');
    const maxAttempts = options.maxAttempts ?? def.maxAttempts ?? this.settings.maxAttempts;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw badRequest('maxAttempts must be a positive integer');
    return {
      task: def.name,
      payload: options.payload ?? null,
      runAt: options.runAt ?? null,
      priority,
      key: options.key ?? null,
      queueName: options.queueName ?? null,
      maxAttempts,
      visible: def.visible,
      lane: def.lane ?? 'default',
    };
  }
}
