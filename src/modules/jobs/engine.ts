/**
 * The job engine: durable background work in a table of ours (`jobs`), on PGlite or PostgreSQL.
 *
 * Design
 * - Life cycle: queued → running → completed; a throwing handler makes the job `errored`
 *   (retried after an exponential backoff) until `maxAttempts`, then `failed`. A pending
 *   (queued/errored) job can be `cancelled`. Finished jobs are deleted after the retention.
 * - Claiming: one UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED) flips up to as many due
 *   rows as the engine has free slots to `running`, stamping `locked_by` (this engine's
 *   random id) and `locked_at`. Workers in any number of processes share the table without
 *   ever claiming one row twice. The pick (which rows; see Fairness) is the function
 *   `jobs_pick_fair` (migration 0305), planned with sorting off so that it reads the index in
 *   order whatever the statistics say (0303); the claim and the completion batch are functions
 *   (0304, 0305), so that a plan kept from a small table does not scan the table once it has
 *   grown. One claim is in flight per engine at a time; a claim that brings fewer jobs than
 *   asked ends the round (jobs committed meanwhile are announced).
 * - Fairness (the guarantee, docs/jobs.md "Fair work between collections"):
 *   - Lanes: a task names its lane (`default`, or `deliveries` for webhook deliveries); a
 *     process runs one engine per lane, each with its own slots (JOBS_CONCURRENCY,
 *     JOBS_DELIVERIES_CONCURRENCY), so no job of one lane ever waits for a slot of another.
 *   - Turns: the pick walks the collections with pending jobs in the lane in descending byte
 *     order from `cursor` (the collection this engine served last), wrapping around once (to
 *     the largest: migration 0305 says why descending), and takes from
 *     each its most urgent due jobs. A collection that enqueues behind another's backlog is
 *     served in the next claim, not after the backlog. `priority` orders a collection's own
 *     jobs only; named-queue heads are taken by due time.
 *   - Share: a collection holds at most `collectionConcurrency` of a lane's slots in one
 *     engine (JOBS_COLLECTION_CONCURRENCY, default all but a quarter), so with two slots or
 *     more, slow jobs of one collection always leave a slot to the others. Prefetched jobs
 *     count; a batch that prefetches may take `prefetch` more, which start only within the
 *     share (`drain`). Trade-off: a collection alone on a worker cannot use its last quarter of
 *     the slots; set the share to the concurrency where one tenant owns the deployment.
 *   - Cost: a claim looks at up to MAX_VISITS collections (two index probes each); the walk
 *     stops once the claim is full or it is back at the cursor.
 *   - Per process: shares and turns are kept by each engine; N worker processes give a
 *     collection up to N shares.
 *   - States of the walk (migration 0305): from the cursor downward → wrapped to the largest
 *     collection → back at the cursor (done). The cursor moves to the last collection served.
 * - Per-job cost: a batch of successes (those finishing in one turn of the event loop, or
 *   while the previous batch was being written) is recorded by one statement, which also
 *   claims jobs for the slots it frees: with short jobs a worker spends one round trip and
 *   one commit per batch of up to `concurrency` jobs (completeAndClaim in the repository).
 *   Completions that finish while a claim is in flight wait for it and go with the next
 *   claim; a claim round waits for completions about to claim. The hot statements are
 *   prepared once per connection (`prepared`, src/db/client.ts). Figures: docs/benchmarks.md.
 * - Slots and prefetch: a slot (`concurrency`) is a handler running; it is free again when the
 *   handler returns, not when its outcome is written. A completion batch whose jobs all ran
 *   shorter than PREFETCH_SHORT_MS also claims up to `prefetch` jobs beyond the free slots:
 *   they wait in `ready` (claimed, heart-beaten, not started) and start as slots free, so with
 *   short jobs a statement carries twice the jobs. Claims on a wake-up (pump) never prefetch,
 *   so an idle worker and long jobs behave as without it. Trade-off: a prefetched job waits
 *   behind this worker's running jobs while another worker may be idle; one that waits longer
 *   than `prefetchHoldMs` is handed back (queued again, attempt not counted, NOTIFY), and the
 *   worker prefetches again only after another batch of short jobs.
 * - Named queues (`queueName`, per collection) run one job at a time in enqueue order: only
 *   a queue's head is claimable, and only while none of its jobs runs. Those claims take a
 *   transaction-scoped advisory lock first, so concurrent workers see each other's claims.
 * - Liveness: a running worker refreshes `locked_at` (heartbeat, every lockTimeout/3 unless
 *   JOBS_HEARTBEAT_MS says otherwise). A job
 *   whose `locked_at` is older than the lock timeout belonged to a dead worker: it is made
 *   claimable again (the lost attempt counts). Every finishing UPDATE checks `locked_by`, so
 *   a worker that lost its claim cannot overwrite the new owner's outcome.
 * - Wake-up: once an enqueue has committed (right away on the db, after commit through
 *   `tx.afterCommit` inside the caller's transaction) the engine sends NOTIFY `jobs_new` with
 *   the due times, one NOTIFY at a time per process (those asked for meanwhile are merged into
 *   the next), however many jobs. An enqueue on the db while nothing else of the process is on
 *   its way sends it in its INSERT instead (delivered at commit, a round trip sooner). Every
 *   engine LISTENs and claims at once, or arms a timer for a future `runAt`. A slow poll (JOBS_POLL_INTERVAL_MS)
 *   is the safety net (a process that dies between commit and NOTIFY) and also runs the
 *   lock-timeout sweep, retention and arms the timer for the next future job.
 * - Liveness details: each claim carries its own expiry (`lock_expires_at` = claim or last
 *   heartbeat + the claiming worker's lock timeout), so workers with different settings agree.
 * - Shutdown: stop() stops claiming, waits for running handlers up to a timeout, then aborts
 *   their signal and releases their claims (queued again, attempt not counted). Jobs of a
 *   claim that was in flight when stop() began were claimed before it: they start and get the
 *   same grace period, so a job the database shows running when stop() begins is run within
 *   it (handing such jobs back, as before, made a test of that flaky on PostgreSQL).
 * - Contention: multi-row statements lock their rows in id order (jobs.repository.ts), and a
 *   deadlock or serialization failure is retried (src/db/retry.ts). A finished job's outcome
 *   is kept in memory until written: a failed completion write is retried with a bounded
 *   backoff for as long as this engine runs, and the job stays claimed (heart-beaten)
 *   meanwhile, so a live worker's success is never lost and never re-run by another worker.
 *   A failed attempt's write is kept and retried the same way.
 * - Claims in doubt: a claim statement can commit while the connection carrying its answer
 *   dies. Such a job is `running` under this worker's id, but this worker never started it.
 *   The heartbeat only extends the claims the engine is working on, so an unknown claim
 *   expires by itself; and after a failed claim round the engine hands back (queued again,
 *   attempt not counted) every claim of its own it does not know, before claiming again.
 *   A failed round (sweep, timer, claims) is tried again after a short backoff, not only at
 *   the next poll.
 * - Timer: one timer for the earliest known future job; when it fires, the engine claims and
 *   then looks up the next pending job due after the moment it fired, so a later one announced
 *   meanwhile is not left to the poll (the lock-timeout sweep stays with the poll), nor is the
 *   job itself when the timer fired a millisecond before the database saw it due. A job due
 *   within a few ms of its announcement gets a claim at once and the timer.
 * - Events: given a publisher (`publishEventsTo`, set once the webhooks module is built), the
 *   final state of a job of a visible task is published in the transaction that records it:
 *   `job.completed` with a completion batch, `job.failed` with the last failed attempt or the
 *   sweep that gives up on a dead worker's last attempt (jobs.events.ts). Only then is the write
 *   a transaction (BEGIN, the statement, one publish per collection, COMMIT); a batch of
 *   internal tasks' jobs (deliveries) is the one statement it always was, and publishes nothing.
 * Guarantee: at least once. A handler may run again after a crash, so it must be idempotent.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { backoffMs, type Db, isConflictError, type Queryable, retryOnConflict, type Tx } from '../../db/index.ts';
import { AppError, badRequest } from '../../platform/errors.ts';
import type { NewEvent } from '../../platform/events.ts';
import type { EnqueueOptions, JobQueue, TaskContext, TaskDefinition } from '../../platform/tasks.ts';
import { completedEvent, type EventPublisher, failedEvent } from './jobs.events.ts';
import * as repo from './jobs.repository.ts';
import { JOBS_LANES, type JobsSettings } from './jobs.settings.ts';

export type { EnqueueOptions, TaskContext, TaskDefinition };

export type EngineLogger = Pick<FastifyBaseLogger, 'debug' | 'info' | 'warn' | 'error'>;

export const JOBS_CHANNEL = 'jobs_new';
const MAX_TIMER_MS = 2 ** 31 - 1;
const SWEEP_EVERY_MS = 60_000;
const PROGRESS_MIN_INTERVAL_MS = 200;
const MAX_ERROR_LENGTH = 4000;
/** Retry delays of a completion write that failed: 50 ms doubling up to 5 s, jittered. */
const COMPLETION_RETRY_BASE_MS = 50;
const COMPLETION_RETRY_MAX_MS = 5000;
/**
 * The earliest a timer for a future job fires: a database clock a little behind ours makes a
 * due time look past here and future there; this keeps that from becoming a busy loop.
 */
const MIN_TIMER_MS = 10;
/** After a failed round: the next one in about 250 ms, doubling to 5 s while they keep failing. */
const ROUND_RETRY_BASE_MS = 250;
const ROUND_RETRY_MAX_MS = 5000;
/**
 * The most collections one claim looks at: a collection with only future jobs, or at its
 * budget, costs two index probes and is passed over; the cursor moves on, so the next claim
 * looks further.
 */
const MAX_VISITS = 256;
/**
 * A completion batch prefetches only when every job in it ran shorter than this: then a
 * prefetched job waits a few milliseconds for a slot, not the length of a long job.
 */
const PREFETCH_SHORT_MS = 20;

interface Running {
  row: repo.ClaimedJob;
  lastProgress: repo.JobProgress | null;
  done: Promise<void>;
  /** When its handler started (performance.now()); undefined while it waits in `ready`. */
  startedAt?: number;
  /** When it was claimed (performance.now()), for the prefetch hold. */
  claimedAt: number;
  /** Its handler has returned: its slot is free, its outcome may still be being written. */
  returned?: boolean;
}

/** What a lane's engine is: its name, the task registry it shares, whether it does the housekeeping. */
export interface EngineOptions {
  /** Default `default`. The engine claims the jobs of its lane's tasks only. */
  lane?: string;
  /** Shared by the engines of one process, so that any of them enqueues any task. */
  registry?: Map<string, TaskDefinition>;
  /** The lock-timeout sweep and retention (default true; one engine per process is enough). */
  housekeeping?: boolean;
}

export class JobEngine implements JobQueue {
  /** Identifies this engine's claims in `locked_by`. */
  readonly workerId = `w_${randomBytes(6).toString('hex')}`;
  readonly lane: string;
  private readonly tasks: Map<string, TaskDefinition>;
  private readonly housekeeping: boolean;
  /** The collection served last: a claim's walk starts after it (see "Fairness"). */
  private cursor = '';
  /** The lane's task names, and the registry's size when they were read (`taskNames`). */
  private laneTasks: { seen: number; names: string[] } = { seen: -1, names: [] };
  /** Every claim this engine holds: waiting in `ready`, running, or its outcome being written. */
  private readonly running = new Map<number, Running>();
  /** Claimed jobs waiting for a slot (prefetched), in claim order. */
  private ready: Running[] = [];
  /** Handlers running now: the slots taken. */
  private executing = 0;
  private holdTimer: NodeJS.Timeout | undefined;
  private started = false;
  private stopping = false;
  /** stop() has returned: nothing is written any more (the database may be closing). */
  private stopped = false;
  /** A claim is in flight (a pump round, or a completion batch that claims): one at a time. */
  private pumping = false;
  private pumpAgain = false;
  private readonly abort = new AbortController();
  private pollTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private lastSweep = 0;
  private unlisten: (() => Promise<void>) | undefined;
  private idleWaiters: (() => void)[] = [];
  /** Might a named-queue job be claimable? Saves a query per claim round when none are. */
  private queueHint = true;
  private pumpScheduled = false;
  /** A claim round failed: this worker may hold claims it does not know of (see the design). */
  private claimsInDoubt = false;
  private roundFailures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private pendingNotify: { dues: Set<number>; queued: boolean } | undefined;
  private notifyScheduled = false;
  /** Enqueue statements of this engine on their way (see `enqueue`). */
  private enqueuing = 0;
  private notifying = false;
  /** Successes waiting to be written; `done(refilled)` once written (refilled: their slots were claimed again). */
  private completions: {
    row: repo.ClaimedJob;
    result: unknown;
    progress: repo.JobProgress | null;
    /** The handler's run time, ms: short jobs let the batch prefetch. */
    ranMs: number;
    done: (refilled: boolean) => void;
  }[] = [];
  /** A completion batch is being written: the next one waits for it (and grows meanwhile). */
  private flushing = false;
  /** Completions wait for the claim in flight to end, to be written with the next claim. */
  private flushAfterClaim = false;
  /** Where the final states of visible tasks' jobs are published (see "Events"); none until set. */
  private publisher: EventPublisher | undefined;

  constructor(
    private readonly db: Db,
    readonly settings: JobsSettings,
    private readonly log: EngineLogger,
    options: EngineOptions = {},
  ) {
    this.lane = options.lane ?? 'default';
    this.tasks = options.registry ?? new Map();
    this.housekeeping = options.housekeeping ?? true;
    // Every running job's handler may listen to the stop signal, a webhook delivery job once per
    // attempt in flight: the number is bounded by the slots, and Node's warning past 10 is noise.
    setMaxListeners(0, this.abort.signal);
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

  /** Publishes `job.completed` / `job.failed` of visible tasks' jobs from now on (see "Events"). */
  publishEventsTo(publisher: EventPublisher): void {
    this.publisher = publisher;
  }

  /** Names of the tasks the API may enqueue and list. */
  visibleTasks(): string[] {
    return this.visibleTaskDefinitions().map((t) => t.name);
  }

  /** The tasks the API may enqueue, by name. */
  visibleTaskDefinitions(): TaskDefinition[] {
    return [...this.tasks.values()].filter((t) => t.visible).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** Enqueue inside the caller's transaction (outbox pattern) or on the db. Unknown task → throws. */
  async enqueue(
    q: Queryable,
    collectionId: string,
    options: EnqueueOptions,
  ): Promise<{ id: number; task: string; runAt: Date; key: string | null }> {
    // Alone (no other enqueue or NOTIFY of this process on its way) on the db, the wake-up goes
    // in the INSERT itself and is delivered at its commit: a round trip less between commit
    // and pickup. Under load it goes after the commit, merged (see `announce`): a NOTIFY
    // inside every enqueuing transaction would serialise their commits.
    const inline =
      q === this.db && this.enqueuing === 0 && !this.pendingNotify && !this.notifying && !this.notifyScheduled;
    this.enqueuing++;
    let row: Awaited<ReturnType<typeof repo.upsertJob>>;
    try {
      row = await repo.upsertJob(q, collectionId, this.newJob(options), inline ? JOBS_CHANNEL : undefined);
    } finally {
      this.enqueuing--;
    }
    if (inline) {
      if (row.queue_name !== null) this.queueHint = true;
      this.wake(row.run_at.getTime());
    } else await this.announceAfterCommit(q, [row]);
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
  ): Promise<{ id: number; task: string; runAt: Date; key: string | null }[]> {
    const jobs = list.map((o) => this.newJob(o));
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
    await this.announceAfterCommit(q, rows);
    return jobs.map((j, i) => {
      const row = rowOf.get(j.key === null ? i : (lastOfKey.get(j.key) as number)) as (typeof rows)[number];
      return { id: row.id, task: row.task, runAt: row.run_at, key: row.key };
    });
  }

  /** Checks an enqueue's options against the registered task; unknown task or bad values → 400. */
  private newJob(options: EnqueueOptions): repo.NewJob {
    const def = this.tasks.get(options.task);
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

  /** Wakes the workers for jobs just written through `q`, once they are committed. */
  private async announceAfterCommit(q: Queryable, rows: { run_at: Date; queue_name: string | null }[]): Promise<void> {
    if (rows.length === 0) return;
    const dues = new Map<number, boolean>();
    for (const r of rows) {
      const due = r.run_at.getTime();
      dues.set(due, (dues.get(due) ?? false) || r.queue_name !== null);
    }
    const announce = () => {
      for (const [due, inQueue] of dues) this.announce(due, inQueue);
    };
    if (q === this.db) announce();
    else if (typeof (q as Partial<Tx>).afterCommit === 'function') (q as Tx).afterCommit(announce);
    else {
      // Some other handle (a client inside its own transaction): NOTIFY in it, delivered at commit.
      const inQueue = [...dues.values()].some(Boolean);
      const payload = [...dues.keys()]
        .sort((x, y) => x - y)
        .slice(0, 50)
        .join(',');
      await q.query('SELECT pg_notify($1, $2)', [JOBS_CHANNEL, `${payload}${inQueue ? ':q' : ''}`]);
    }
  }

  /** Begins claiming with the configured concurrency (no-op if already started). */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.unlisten = await this.db.listen(
      JOBS_CHANNEL,
      (payload) => {
        // "<due epoch ms>[,<due>…]", with ":q" when a job is in a named queue.
        if (payload.endsWith(':q')) this.queueHint = true;
        const dues = payload.replace(/:q$/, '').split(',').map(Number).filter(Number.isFinite);
        if (dues.length === 0) dues.push(Date.now());
        for (const due of dues) this.wake(due);
      },
      () => {
        // Jobs enqueued elsewhere while the LISTEN connection was down were announced to nobody:
        // look now instead of at the next poll.
        void this.tick();
      },
    );
    this.pollTimer = setInterval(() => void this.tick(), this.settings.pollIntervalMs);
    this.pollTimer.unref();
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), this.settings.heartbeatMs);
    this.heartbeatTimer.unref();
    void this.tick();
  }

  /** Stops claiming, lets running jobs finish within `timeoutMs`, then releases the rest. */
  async stop(timeoutMs = this.settings.stopTimeoutMs): Promise<void> {
    if (!this.started || this.stopping) return;
    this.stopping = true;
    clearInterval(this.pollTimer);
    clearTimeout(this.wakeTimer);
    clearTimeout(this.retryTimer);
    await this.unlisten?.().catch(() => {});
    // A claim in flight now was made before the stop: its jobs start and get the grace period.
    while (this.pumping) await new Promise((resolve) => setTimeout(resolve, 5));
    const finished = this.whenIdle();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      finished.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.abort.abort(new Error('worker shutting down'));
      // Prefetched jobs not started by now never will be here: released with the rest.
      this.ready = [];
      const ids = [...this.running.keys()];
      const released = await this.retrying(() => repo.release(this.db, this.workerId, ids)).catch((err) => {
        this.log.error({ err }, 'jobs: could not release claims on shutdown');
        return 0;
      });
      if (released > 0) await this.db.notify(JOBS_CHANNEL, `${Date.now()}:q`).catch(() => {});
      this.log.warn({ released, ids }, 'jobs: shutdown timeout; released unfinished jobs');
    }
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.holdTimer);
    this.stopped = true;
    this.log.info({ workerId: this.workerId }, 'jobs: worker stopped');
  }

  /** Runs the housekeeping now: lock-timeout reclaim and retention. Returns what it did. */
  async sweep(): Promise<{ reclaimed: number; deleted: number }> {
    this.lastSweep = Date.now();
    const reclaimed = await this.retrying(() => this.reclaimExpired());
    if (reclaimed > 0) this.log.warn({ reclaimed }, 'jobs: reclaimed jobs of unresponsive workers');
    let deleted = 0;
    for (;;) {
      const n = await this.retrying(() => repo.deleteFinished(this.db, this.settings.retentionMs));
      deleted += n;
      if (n < 1000) break;
    }
    return { reclaimed, deleted };
  }

  /**
   * The lock-timeout reclaim; with a publisher, in a transaction that publishes `job.failed` for
   * the visible tasks' jobs whose last attempt it gives up on (once per poll: a BEGIN and COMMIT
   * more, whatever the jobs).
   */
  private async reclaimExpired(): Promise<number> {
    const publisher = this.publisher;
    if (!publisher) return (await repo.reclaimExpired(this.db, this.settings.lockTimeoutMs)).length;
    return this.db.transaction(async (tx) => {
      const rows = await repo.reclaimExpired(tx, this.settings.lockTimeoutMs);
      const failed = rows.filter((r) => r.status === 'failed' && this.tasks.get(r.task)?.visible);
      await this.publishOutcomes(
        tx,
        publisher,
        failed.map((r) => failedEvent(r, r.last_error ?? '', r.finished_at ?? new Date())),
        failed.map((r) => r.collection_id),
      );
      return rows.length;
    });
  }

  /** Publishes each collection's events (built in the order of `collections`) in `tx`. */
  private async publishOutcomes(
    tx: Queryable,
    publisher: EventPublisher,
    events: NewEvent[],
    collections: string[],
  ): Promise<void> {
    const byCollection = new Map<string, NewEvent[]>();
    events.forEach((e, i) => {
      const list = byCollection.get(collections[i]) ?? [];
      list.push(e);
      byCollection.set(collections[i], list);
    });
    for (const [collectionId, list] of byCollection) await publisher.publish(tx, collectionId, list);
  }

  /**
   * A write of outcomes (`write`) and the events of the visible tasks' jobs it recorded, in one
   * transaction; without a publisher or such a job, the write alone, on the db, as before.
   */
  private async withEvents<T>(
    jobs: { row: repo.ClaimedJob; event: (at: Date) => NewEvent }[],
    write: (q: Queryable) => Promise<T>,
    recorded: (r: T, id: number) => boolean,
  ): Promise<T> {
    const publisher = this.publisher;
    if (!publisher || jobs.length === 0) return write(this.db);
    return this.db.transaction(async (tx) => {
      const r = await write(tx);
      const at = new Date();
      const kept = jobs.filter((j) => recorded(r, j.row.id));
      await this.publishOutcomes(
        tx,
        publisher,
        kept.map((j) => j.event(at)),
        kept.map((j) => j.row.collection_id),
      );
      return r;
    });
  }

  /** Number of jobs this engine holds now: running, prefetched, or their outcome being written. */
  get activeCount(): number {
    return this.running.size;
  }

  /** Slots a claim may fill now: neither running a handler nor promised to a prefetched job. */
  private freeSlots(): number {
    return this.settings.concurrency - this.executing - this.ready.length;
  }

  private whenIdle(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** A full round: the lock-timeout sweep (and retention now and then), claims, the timer. */
  private async tick(): Promise<void> {
    if (this.stopping) return;
    if (this.housekeeping) await this.housekeep();
    await this.claimDueAndArm();
  }

  /** The lock-timeout sweep, and retention now and then: one engine of a process does it. */
  private async housekeep(): Promise<void> {
    try {
      // The sweep's reclaim is cheap (a partial index); retention runs at most once a minute.
      const reclaimed = await this.retrying(() => this.reclaimExpired());
      if (reclaimed > 0) this.log.warn({ reclaimed }, 'jobs: reclaimed jobs of unresponsive workers');
      if (Date.now() - this.lastSweep >= SWEEP_EVERY_MS) await this.sweep();
    } catch (err) {
      if (!this.stopping) {
        this.log.error({ err }, 'jobs: sweep failed; trying again');
        this.retryRound();
      }
    }
  }

  /**
   * Claims what has come due, then arms the timer for the next job in the future (after the
   * claims: what was due is taken), so `runAt` is kept to the millisecond.
   */
  private async claimDueAndArm(): Promise<void> {
    // A job due now may be a named queue's head.
    this.queueHint = true;
    const since = Date.now();
    await this.pump();
    await this.armNext(since);
  }

  /**
   * Arms the timer for the earliest pending job due after `since` (when the claims began): a
   * job that came due after the claim looked (a timer can fire a few ms early, and the claim
   * takes time) is still pending and gets the timer, instead of waiting for the poll. Jobs
   * due before `since` and still pending wait for a free slot, which claims again anyway.
   */
  private async armNext(since: number): Promise<void> {
    try {
      const next = await repo.nextDue(this.db, new Date(since));
      if (next !== undefined && !this.stopping) this.armTimer(Math.max(next, Date.now() + MIN_TIMER_MS));
    } catch (err) {
      if (!this.stopping) {
        this.log.error({ err }, 'jobs: could not look up the next due job; trying again');
        this.retryRound();
      }
    }
  }

  /** A round (sweep, timer, claims) failed on the database: the whole round again, after a backoff. */
  private retryRound(): void {
    this.roundFailures++;
    const delayMs = backoffMs(this.roundFailures, ROUND_RETRY_BASE_MS, ROUND_RETRY_MAX_MS);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.tick(), delayMs);
    this.retryTimer.unref();
  }

  private async heartbeat(): Promise<void> {
    if (this.running.size === 0) return;
    const ids = [...this.running.keys()];
    await this.retrying(() => repo.touchLocks(this.db, this.workerId, ids, this.settings.lockTimeoutMs)).catch((err) =>
      this.log.error({ err }, 'jobs: heartbeat failed'),
    );
  }

  /**
   * Claim now when `due` has come (or is a few ms off: another process's clock); arm the one
   * timer for a job still in the future, even one due within those few ms: a claim sent now
   * would not take it yet, and without the timer it would wait for the poll.
   */
  private wake(due: number): void {
    if (!this.started || this.stopping) return;
    const delay = due - Date.now();
    if (delay <= 5) this.schedulePump();
    if (delay > 0) this.armTimer(due);
  }

  /** One timer, for the earliest future job known; firing claims and re-arms it (claimDueAndArm). */
  private armTimer(due: number): void {
    if (due >= this.wakeAt) return;
    const delay = due - Date.now();
    clearTimeout(this.wakeTimer);
    this.wakeAt = due;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeAt = Number.POSITIVE_INFINITY;
        // Not only claims: the timer is armed again for the next future job (one announced
        // meanwhile for later than this timer did not move it).
        void this.claimDueAndArm();
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    this.wakeTimer.unref();
  }

  /**
   * Tells every engine that jobs were committed: this one directly, the others through NOTIFY.
   * One NOTIFY at a time per process: announcements made while one is on its way are merged
   * into the next, so a burst of enqueues costs a NOTIFY per round trip, not per job (and
   * each NOTIFY wakes every worker process). A NOTIFY inside each enqueuing transaction would
   * serialise their commits on PostgreSQL's notify lock.
   */
  private announce(due: number, inQueue: boolean): void {
    if (inQueue) this.queueHint = true;
    this.wake(due);
    this.pendingNotify ??= { dues: new Set(), queued: false };
    const pending = this.pendingNotify;
    pending.dues.add(due);
    pending.queued ||= inQueue;
    this.scheduleNotify();
  }

  private scheduleNotify(): void {
    if (this.notifyScheduled || this.notifying || !this.pendingNotify) return;
    this.notifyScheduled = true;
    setImmediate(() => {
      this.notifyScheduled = false;
      void this.sendNotify();
    });
  }

  private async sendNotify(): Promise<void> {
    const p = this.pendingNotify;
    if (!p || this.notifying) return;
    this.pendingNotify = undefined;
    this.notifying = true;
    const now = Date.now();
    const future = [...p.dues].filter((d) => d > now).sort((x, y) => x - y);
    // The earliest future times (a NOTIFY payload is small); later ones are found by the poll.
    const dues = (future.length < p.dues.size ? [now] : []).concat(future.slice(0, 50));
    try {
      await this.db.notify(JOBS_CHANNEL, `${dues.join(',')}${p.queued ? ':q' : ''}`);
    } catch (err) {
      this.log.warn({ err }, 'jobs: NOTIFY failed');
    } finally {
      this.notifying = false;
      this.scheduleNotify();
    }
  }

  /** Coalesces a burst of wake-ups (notifications, finished jobs) into one claim round. */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      void this.pump();
    });
  }

  /**
   * Claims while there are free slots and due jobs. Re-entrant calls fold into one more round.
   * A claim that brings fewer jobs than asked ends the round: nothing more is due now, and jobs
   * committed meanwhile are announced (and fold into `pumpAgain`), so no empty claim is sent
   * to find that out.
   */
  private async pump(): Promise<void> {
    if (!this.started || this.stopping) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    if (this.completionsClaim()) return;
    this.pumping = true;
    try {
      if (this.claimsInDoubt) await this.releaseUnknownClaims();
      do {
        this.pumpAgain = false;
        while (!this.stopping && this.taskNames().length > 0 && !this.completionsClaim()) {
          const free = this.freeSlots();
          if (free <= 0) break;
          const rows = await repo.claimFree(
            this.db,
            this.workerId,
            this.settings.lockTimeoutMs,
            this.fairClaim(free, 0),
          );
          // Started even if stop() began meanwhile: they were claimed before it, and get its grace period.
          this.admit(rows);
          if (this.stopping) break;
          if (rows.length < free) {
            // Free jobs ran out (started first: a named queue's look-up must not delay them).
            this.admit(await this.claimFromQueues(free - rows.length));
            break;
          }
        }
      } while (this.pumpAgain && !this.stopping && !this.completionsClaim());
      this.roundFailures = 0;
    } catch (err) {
      // While stopping, the database may already be closing: nothing to report.
      if (!this.stopping) {
        this.claimsInDoubt = true;
        this.log.error({ err }, 'jobs: claim failed; trying again');
        this.retryRound();
      }
    } finally {
      this.claimEnded();
    }
  }

  /**
   * Successes are waiting to be written, and their statement will claim for every free slot:
   * a claim of its own now would be a second round trip for the same slots.
   */
  private completionsClaim(): boolean {
    return this.completions.length > 0 && !this.flushing && !this.claimsInDoubt && !this.stopping;
  }

  /** The claim in flight has ended; completions that waited for it are written now (with the next claim). */
  private claimEnded(): void {
    this.pumping = false;
    if (this.flushAfterClaim) {
      this.flushAfterClaim = false;
      setImmediate(() => void this.flushCompletions());
    }
  }

  /**
   * Hands back the claims of this worker that it is not running (called within a claim round,
   * so no claim of this engine is in flight meanwhile). Throws when the database is still away:
   * the round then fails and is tried again.
   */
  private async releaseUnknownClaims(): Promise<void> {
    const released = await this.retrying(() => repo.releaseAllBut(this.db, this.workerId, [...this.running.keys()]));
    this.claimsInDoubt = false;
    if (released > 0) {
      this.log.warn({ released }, 'jobs: handed back claims whose answer was lost with the connection');
      // Other workers may take them (and named queues may have a head again).
      await this.db.notify(JOBS_CHANNEL, `${Date.now()}:q`).catch(() => {});
      this.queueHint = true;
    }
  }

  /**
   * The tasks of this engine's lane (the registry may be shared with other lanes' engines). Read
   * on every claim: worked out again only when the registry has grown (tasks are never removed).
   */
  private taskNames(): string[] {
    if (this.laneTasks.seen !== this.tasks.size) {
      const names: string[] = [];
      for (const def of this.tasks.values()) if ((def.lane ?? 'default') === this.lane) names.push(def.name);
      this.laneTasks = { seen: this.tasks.size, names };
    }
    return this.laneTasks.names;
  }

  /** How many of this engine's claims each collection has, of those `counted`. */
  private perCollection(counted: (e: Running) => boolean): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.running.values())
      if (counted(e)) out.set(e.row.collection_id, (out.get(e.row.collection_id) ?? 0) + 1);
    return out;
  }

  /**
   * A claim of `limit` free jobs that takes turns between collections, each up to its share
   * of the slots less what this engine holds of it (claimed and not yet returned), plus
   * `prefetch` for a completion batch that prefetches.
   */
  private fairClaim(limit: number, prefetch: number): repo.FairClaim {
    const held = this.perCollection((e) => !e.returned);
    return {
      lane: this.lane,
      tasks: this.taskNames(),
      limit,
      after: this.cursor,
      held: { collections: [...held.keys()], counts: [...held.values()] },
      budget: this.settings.collectionConcurrency + prefetch,
      maxVisits: MAX_VISITS,
    };
  }

  /**
   * The walk of the claim that brought `rows` went down from the cursor (in byte order, as the
   * index: COLLATE "C"), then wrapped around to the largest collection and down to the cursor:
   * the last collection it served is the next claim's start.
   */
  private advanceCursor(rows: repo.ClaimedJob[]): void {
    if (rows.length === 0) return;
    let below: string | undefined;
    let wrapped: string | undefined;
    for (const { collection_id: c } of rows) {
      if (this.cursor === '' || byteOrder(c, this.cursor) >= 0) {
        if (wrapped === undefined || byteOrder(c, wrapped) < 0) wrapped = c;
      } else if (below === undefined || byteOrder(c, below) < 0) below = c;
    }
    this.cursor = (wrapped ?? below) as string;
  }

  /**
   * Named-queue heads, for slots the free jobs did not fill; looked at only when one may be
   * due: hinted by a notification, a finished queue job, the timer or the poll.
   */
  private async claimFromQueues(limit: number): Promise<repo.ClaimedJob[]> {
    if (!this.queueHint) return [];
    this.queueHint = false;
    if (!(await repo.hasQueuedInQueues(this.db))) return [];
    const queued = await this.db.transaction(async (tx) => {
      await repo.lockQueueClaims(tx);
      return repo.claimQueued(tx, this.workerId, this.settings.lockTimeoutMs, this.taskNames(), limit);
    });
    if (queued.length > 0) this.queueHint = true;
    return queued;
  }

  /** Jobs just claimed: held, and started while slots are free; the rest wait in `ready`. */
  private admit(rows: repo.ClaimedJob[]): void {
    this.advanceCursor(rows.filter((r) => r.queue_name === null));
    const now = performance.now();
    // Most urgent first, as the claim picked them (an UPDATE … RETURNING keeps no order).
    const urgent = [...rows].sort(
      (x, y) => y.priority - x.priority || x.run_at.getTime() - y.run_at.getTime() || x.id - y.id,
    );
    for (const row of urgent) {
      const entry: Running = { row, lastProgress: row.progress, done: Promise.resolve(), claimedAt: now };
      this.running.set(row.id, entry);
      this.ready.push(entry);
    }
    this.drain();
    if (this.ready.length > 0) this.armHold();
  }

  /**
   * Starts prefetched jobs while slots are free (not after a shutdown gave up on them), none
   * of a collection already running its share of the slots: such a job waits, and is handed
   * back if it waits past the hold.
   */
  private drain(): void {
    const share = this.settings.collectionConcurrency;
    if (share >= this.settings.concurrency) {
      while (this.ready.length > 0 && this.executing < this.settings.concurrency && !this.abort.signal.aborted) {
        this.run(this.ready.shift() as Running);
      }
      return;
    }
    const runningOf = this.perCollection((e) => e.startedAt !== undefined && !e.returned);
    for (let i = 0; i < this.ready.length && this.executing < this.settings.concurrency; ) {
      if (this.abort.signal.aborted) return;
      const c = this.ready[i].row.collection_id;
      const n = runningOf.get(c) ?? 0;
      if (n >= share) {
        i++;
        continue;
      }
      runningOf.set(c, n + 1);
      this.run(this.ready.splice(i, 1)[0]);
    }
  }

  /** One timer, for the oldest prefetched job's hold: see `handBack`. */
  private armHold(): void {
    if (this.holdTimer !== undefined || this.ready.length === 0) return;
    const waited = performance.now() - this.ready[0].claimedAt;
    this.holdTimer = setTimeout(
      () => {
        this.holdTimer = undefined;
        void this.handBack();
      },
      Math.max(1, this.settings.prefetchHoldMs - waited),
    );
    this.holdTimer.unref();
  }

  /**
   * Prefetched jobs still waiting after the hold go back to the queue for any worker (attempt
   * not counted), and other workers are told. They leave `ready` and the held claims before the
   * statement, so none of them can start meanwhile; if the statement fails, they are claims in
   * doubt, handed back before the next claim (or expiring by the lock timeout).
   */
  private async handBack(): Promise<void> {
    const now = performance.now();
    const late = this.ready.filter((e) => now - e.claimedAt >= this.settings.prefetchHoldMs);
    if (late.length > 0) {
      // All of them: the later ones wait behind the same busy slots.
      const ids = this.ready.map((e) => e.row.id);
      for (const e of this.ready) this.running.delete(e.row.id);
      this.ready = [];
      this.settle();
      try {
        const released = await this.retrying(() => repo.release(this.db, this.workerId, ids));
        this.log.info({ released, ids }, 'jobs: handed back prefetched jobs that waited too long for a slot');
        await this.db.notify(JOBS_CHANNEL, `${Date.now()}`);
      } catch (err) {
        if (!this.stopping) {
          this.claimsInDoubt = true;
          this.log.warn(
            { err, ids },
            'jobs: could not hand back prefetched jobs; they are handed back before the next claim',
          );
        }
      }
    }
    this.armHold();
  }

  /** The engine holds nothing any more: wake stop() waiting for it. */
  private settle(): void {
    if (this.running.size === 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  private run(entry: Running): void {
    const { row } = entry;
    this.executing++;
    entry.startedAt = performance.now();
    entry.done = this.execute(entry)
      .catch(() => false)
      .then((refilled) => {
        this.running.delete(row.id);
        this.settle();
        // A slot is free, unless the statement that recorded this job claimed its successor.
        if (!refilled) this.schedulePump();
      });
  }

  /** Runs the handler and records the outcome; true when the slot was claimed again with it. */
  private async execute(entry: Running): Promise<boolean> {
    const { row } = entry;
    const def = this.tasks.get(row.task);
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
      db: this.db,
      signal: this.abort.signal,
      progress: async (p) => {
        const progress: repo.JobProgress = { done: p.done };
        if (p.total !== undefined) progress.total = p.total;
        if (p.message !== undefined) progress.message = p.message.slice(0, 500);
        entry.lastProgress = progress;
        // Throttled: the final value is written with the outcome anyway.
        const now = Date.now();
        if (now - lastWrite < PROGRESS_MIN_INTERVAL_MS) return;
        lastWrite = now;
        await repo.setProgress(this.db, row.collection_id, row.id, this.workerId, progress);
      },
    };
    let outcome: { ok: true; value: unknown } | { ok: false; error: string };
    try {
      if (!def) throw new Error(`Task "${row.task}" is not registered in this worker`);
      const value = (await def.handler(ctx)) ?? null;
      if (JSON.stringify(value) === undefined) throw new Error('The task returned a value that is not JSON');
      outcome = { ok: true, value };
    } catch (err) {
      outcome = { ok: false, error: describeError(err) };
    }
    // The slot is free once the handler has returned: a prefetched job takes it now.
    this.executing--;
    entry.returned = true;
    const ranMs = performance.now() - (entry.startedAt ?? 0);
    this.drain();
    let refilled = false;
    try {
      if (outcome.ok) {
        refilled = await this.complete(row, outcome.value, entry.lastProgress, ranMs);
      } else if (this.abort.signal.aborted) {
        // Interrupted by shutdown, not a failure of the job: stop() releases it.
        this.log.info({ jobId: row.id }, 'jobs: job interrupted by shutdown');
      } else {
        const delay = this.backoff(row.attempts);
        const error = outcome.error;
        // The last attempt of a visible task's job publishes job.failed with its write.
        const last = def?.visible && row.attempts >= row.max_attempts;
        const r = await this.untilWritten([row.id], 'a failed attempt', () =>
          this.withEvents(
            last ? [{ row, event: (at) => failedEvent(row, error, at) }] : [],
            (q) => repo.fail(q, row.collection_id, row.id, this.workerId, error, delay, entry.lastProgress),
            (res) => res?.status === 'failed',
          ),
        );
        this.log.warn(
          { jobId: row.id, task: row.task, attempt: row.attempts, status: r?.status, error: outcome.error },
          'jobs: attempt failed',
        );
        if (r?.status === 'errored') this.wake(r.run_at.getTime());
      }
      // The next job of a named queue is now claimable, possibly by another process.
      if (row.queue_name !== null) {
        this.queueHint = true;
        if (refilled) this.schedulePump();
        await this.db.notify(JOBS_CHANNEL, `${Date.now()}:q`);
      }
    } catch (err) {
      // The lock timeout will hand the job to another worker.
      this.log.error({ err, jobId: row.id }, 'jobs: could not record the outcome');
    }
    return refilled;
  }

  /**
   * Successes are recorded in batches: those finishing in the same turn of the event loop, or
   * while the previous batch is being written, go in one statement. Resolves once written,
   * with whether that statement also claimed the slot again.
   */
  private complete(
    row: repo.ClaimedJob,
    result: unknown,
    progress: repo.JobProgress | null,
    ranMs: number,
  ): Promise<boolean> {
    return new Promise((done) => {
      this.completions.push({ row, result, progress, ranMs, done });
      if (this.completions.length === 1 && !this.flushing) setImmediate(() => void this.flushCompletions());
    });
  }

  /**
   * Writes a batch of completions, one batch at a time. When no claim is in flight, the same
   * statement claims jobs for the slots the batch frees (and the slots still free): with short
   * jobs, one round trip and one commit per batch instead of two. A failed write is tried
   * again (bounded, jittered backoff; completions only) until it succeeds: the jobs stay in
   * `running` meanwhile, so the heartbeat keeps their claims, and no other worker runs them
   * again. Only a stopped engine gives up; the lock timeout then hands the jobs on (at least
   * once).
   */
  private async flushCompletions(): Promise<void> {
    if (this.flushing || this.completions.length === 0) return;
    if (this.pumping && !this.stopping) {
      // A claim is in flight: these go with the next one, one statement instead of two.
      this.flushAfterClaim = true;
      return;
    }
    this.flushing = true;
    const batch = this.completions.splice(0);
    const done = batch.map((c) => ({
      collectionId: c.row.collection_id,
      id: c.row.id,
      result: c.result,
      progress: c.progress,
    }));
    const jobIds = batch.map((c) => c.row.id);
    // Visible tasks' jobs publish job.completed with the batch (see "Events"); usually none.
    const visible = batch
      .filter((c) => this.tasks.get(c.row.task)?.visible)
      .map((c) => ({ row: c.row, event: (at: Date) => completedEvent(c.row, c.result, at) }));
    const canClaim =
      this.started && !this.stopping && !this.pumping && !this.claimsInDoubt && this.taskNames().length > 0;
    // Free slots, and with a batch of short jobs the prefetch beyond them (see the design).
    const short = batch.every((c) => c.ranMs < PREFETCH_SHORT_MS);
    const prefetch = short ? this.settings.prefetch : 0;
    let claimLimit = canClaim ? Math.max(0, this.freeSlots() + prefetch) : 0;
    if (claimLimit > 0) this.pumping = true;
    let refilled = false;
    try {
      const kept = await this.untilWritten(jobIds, 'completions', async () => {
        // Only the first attempt claims; a retry records the completions alone.
        const limit = claimLimit;
        claimLimit = 0;
        if (limit <= 0)
          return this.withEvents(
            visible,
            (q) => repo.completeMany(q, this.workerId, done),
            (ids, id) => ids.has(id),
          );
        try {
          const r = await this.withEvents(
            visible,
            (q) =>
              repo.completeAndClaim(
                q,
                this.workerId,
                done,
                this.settings.lockTimeoutMs,
                this.fairClaim(limit, prefetch),
              ),
            (res, id) => res.completed.has(id),
          );
          refilled = true;
          this.startClaimed(r.claimed, limit);
          return r.completed;
        } catch (err) {
          if (!refilled) {
            // The claim may have committed with its answer lost (a dropped connection).
            if (!isConflictError(err)) this.claimsInDoubt = true;
            this.claimEnded();
          }
          throw err;
        }
      });
      for (const c of batch)
        if (!kept.has(c.row.id))
          this.log.warn({ jobId: c.row.id }, 'jobs: finished a job whose claim was lost; outcome dropped');
    } catch {
      // Logged by untilWritten: the engine stopped before the write went through.
    } finally {
      this.flushing = false;
      if (this.completions.length > 0) setImmediate(() => void this.flushCompletions());
    }
    for (const c of batch) c.done(refilled);
  }

  /**
   * Jobs claimed along with a completion batch: started (even if stop() began meanwhile, as in
   * `pump`); ends the claim.
   */
  private startClaimed(rows: repo.ClaimedJob[], asked: number): void {
    try {
      this.admit(rows);
      if (this.stopping) return;
      // Wake-ups that came meanwhile (a slot freed by a failed attempt, jobs announced), or
      // free jobs ran out and a named queue may have a due head: a pump round looks (and
      // sends nothing when no slot is free).
      if (this.pumpAgain || (rows.length < asked && (this.queueHint || this.claimsInDoubt))) this.schedulePump();
      this.roundFailures = 0;
    } finally {
      this.claimEnded();
    }
  }

  /**
   * An outcome write, tried again with a bounded, jittered backoff until it succeeds or the
   * engine has stopped (then it throws, and the lock timeout hands the jobs on).
   */
  private async untilWritten<T>(jobIds: number[], what: string, write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (this.stopped) {
          this.log.error({ err, jobIds }, `jobs: could not record ${what}; worker stopped, giving up`);
          throw err;
        }
        const delayMs = backoffMs(attempt, COMPLETION_RETRY_BASE_MS, COMPLETION_RETRY_MAX_MS);
        const level = isConflictError(err) ? 'warn' : 'error';
        this.log[level]({ err, jobIds, attempt, delayMs }, `jobs: could not record ${what}; retrying`);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  /** A write of this engine, retried when PostgreSQL aborts it for a deadlock or serialization failure. */
  private retrying<T>(fn: () => Promise<T>): Promise<T> {
    return retryOnConflict(fn, {
      onRetry: (err, attempt, delayMs) =>
        this.log.warn({ err, attempt, delayMs }, 'jobs: write aborted by a concurrent transaction; retrying'),
    });
  }

  /** Exponential with ±20% jitter: base·2^(attempt−1), capped. */
  backoff(attempt: number): number {
    const { backoffBaseMs: base, backoffMaxMs: max } = this.settings;
    const raw = Math.min(max, base * 2 ** Math.min(attempt - 1, 40));
    return Math.round(raw * (0.8 + Math.random() * 0.4));
  }
}

function describeError(err: unknown): string {
  let text: string;
  if (err instanceof AppError) text = `${err.errorCode}: ${err.message}`;
  else if (err instanceof Error) text = err.message || err.name;
  else text = String(err);
  return text.slice(0, MAX_ERROR_LENGTH);
}

/** Compares strings by UTF-8 bytes, as PostgreSQL's "C" collation does (UTF-16 order differs past U+FFFF). */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
