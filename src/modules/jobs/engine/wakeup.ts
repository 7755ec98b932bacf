/**
 * Wake-up: when the engine claims. LISTEN, the NOTIFY after an enqueue, the timer for the next
 * future job, the poll, and the retry of a failed round.
 *
 * Design
 * - Wake-up: once an enqueue has committed (right away on the db, after commit through
 *   `tx.afterCommit` inside the caller's transaction) the engine sends NOTIFY `jobs_new` with
 *   the due times, one NOTIFY at a time per process (those asked for meanwhile are merged into
 *   the next), however many jobs. An enqueue on the db while nothing else of the process is on
 *   its way sends it in its INSERT instead (delivered at commit, a round trip sooner). Every
 *   engine LISTENs and claims at once, or arms a timer for a future `runAt`. A slow poll
 *   (JOBS_POLL_INTERVAL_MS) is the safety net (a process that dies between commit and NOTIFY)
 *   and also runs the lock-timeout reclaim (housekeeping.ts; retention is a system schedule) and arms the timer for
 *   the next future job. A LISTEN connection that comes back looks at once (jobs announced
 *   while it was down were announced to nobody).
 * - NOTIFY coalescing, states (`NotifyState`, with `pending`: the due times asked for and not
 *   sent): idle → scheduled (a NOTIFY goes at the next turn of the event loop) → sending (one
 *   on its way; announcements meanwhile gather in `pending`) → idle, or scheduled again at
 *   once if some gathered. A burst of enqueues costs a NOTIFY per round trip, not per job
 *   (and each NOTIFY wakes every worker process); a NOTIFY inside each enqueuing transaction
 *   would serialise their commits on PostgreSQL's notify lock. The payload carries the
 *   earliest 50 future due times (a NOTIFY payload is small; later ones are found by the
 *   poll), "now" for those already due, and ":q" when a job is in a named queue.
 * - Timer: one timer for the earliest known future job (states: unarmed, `wakeAt` infinite →
 *   armed for `wakeAt`, only ever moved earlier → fired: unarmed, then claims and arms again).
 *   When it fires, the engine claims and then looks up the next pending job due after the
 *   moment it fired, so a later one announced meanwhile is not left to the poll (the
 *   lock-timeout sweep stays with the poll), nor is the job itself when the timer fired a
 *   millisecond before the database saw it due. A job due within a few ms of its announcement
 *   gets a claim at once and the timer.
 * - Rounds: a full round is the sweep (on the housekeeping engine), claims, then the timer. A
 *   failed round (sweep, timer, claims) is tried again after a short backoff (`retryTimer`,
 *   ROUND_RETRY_BASE_MS doubling to ROUND_RETRY_MAX_MS while they keep failing), not only at
 *   the next poll; a claim that goes through starts the backoff over.
 */
import { backoffMs, type Queryable, type Tx } from '../../../db/index.ts';
import * as claims from '../claims.repository.ts';
import type { Claimer } from './claimer.ts';
import { type EngineCore, JOBS_CHANNEL } from './core.ts';
import type { Housekeeping } from './housekeeping.ts';

const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * The earliest a timer for a future job fires: a database clock a little behind ours makes a
 * due time look past here and future there; this keeps that from becoming a busy loop.
 */
const MIN_TIMER_MS = 10;
/** After a failed round: the next one in about 250 ms, doubling to 5 s while they keep failing. */
const ROUND_RETRY_BASE_MS = 250;
const ROUND_RETRY_MAX_MS = 5000;

export type NotifyState = 'idle' | 'scheduled' | 'sending';

/** What an announcement needs of a job just written. */
interface Written {
  run_at: Date;
  queue_name: string | null;
}

export class Wakeup {
  private unlisten: (() => Promise<void>) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private retryTimer: NodeJS.Timeout | undefined;
  private roundFailures = 0;
  private notifyState: NotifyState = 'idle';
  private pending: { dues: Set<number>; queued: boolean } | undefined;
  /** Enqueue statements of this engine on their way (see `enqueue`). */
  private enqueuing = 0;

  constructor(
    private readonly core: EngineCore,
    private readonly claimer: Claimer,
    /** The engine that does the housekeeping has it; the others' rounds skip it. */
    private readonly housekeeping: Housekeeping | undefined,
  ) {}

  /** LISTENs, and starts the poll. */
  async start(): Promise<void> {
    const { core } = this;
    this.unlisten = await core.db.listen(
      JOBS_CHANNEL,
      (payload) => {
        // "<due epoch ms>[,<due>…]", with ":q" when a job is in a named queue.
        if (payload.endsWith(':q')) this.claimer.hintQueues();
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
    this.pollTimer = setInterval(() => void this.tick(), core.settings.pollIntervalMs);
    this.pollTimer.unref();
  }

  /** stop() has begun: no more rounds, timers or notifications. */
  async stop(): Promise<void> {
    clearInterval(this.pollTimer);
    clearTimeout(this.wakeTimer);
    clearTimeout(this.retryTimer);
    await this.unlisten?.().catch(() => {});
  }

  /**
   * An enqueue's INSERT (`insert`, given the channel when the wake-up goes in it). Alone (no
   * other enqueue or NOTIFY of this process on its way) on the db, the wake-up goes in the
   * INSERT itself and is delivered at its commit: a round trip less between commit and pickup.
   * Under load it goes after the commit, merged (see `announce`): a NOTIFY inside every
   * enqueuing transaction would serialise their commits.
   */
  async enqueue<T extends Written>(q: Queryable, insert: (channel: string | undefined) => Promise<T>): Promise<T> {
    const inline = q === this.core.db && this.enqueuing === 0 && !this.pending && this.notifyState === 'idle';
    this.enqueuing++;
    let row: T;
    try {
      row = await insert(inline ? JOBS_CHANNEL : undefined);
    } finally {
      this.enqueuing--;
    }
    if (inline) {
      if (row.queue_name !== null) this.claimer.hintQueues();
      this.wake(row.run_at.getTime());
    } else await this.announceAfterCommit(q, [row]);
    return row;
  }

  /** Wakes the workers for jobs just written through `q`, once they are committed. */
  async announceAfterCommit(q: Queryable, rows: Written[]): Promise<void> {
    if (rows.length === 0) return;
    const dues = new Map<number, boolean>();
    for (const r of rows) {
      const due = r.run_at.getTime();
      dues.set(due, (dues.get(due) ?? false) || r.queue_name !== null);
    }
    const announce = () => {
      for (const [due, inQueue] of dues) this.announce(due, inQueue);
    };
    if (q === this.core.db) announce();
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

  /** A full round: the lock-timeout reclaim, claims, the timer. */
  async tick(): Promise<void> {
    if (this.core.stopping) return;
    if (this.housekeeping) {
      try {
        await this.housekeeping.housekeep();
      } catch (err) {
        this.roundFailed(err, 'jobs: sweep failed; trying again');
      }
    }
    await this.claimDueAndArm();
  }

  /**
   * Claim now when `due` has come (or is a few ms off: another process's clock); arm the one
   * timer for a job still in the future, even one due within those few ms: a claim sent now
   * would not take it yet, and without the timer it would wait for the poll.
   */
  wake(due: number): void {
    if (!this.core.live) return;
    const delay = due - Date.now();
    if (delay <= 5) this.claimer.schedule();
    if (delay > 0) this.armTimer(due);
  }

  /** A round (sweep, timer, claims) failed on the database: the whole round again, after a backoff. */
  retryRound(): void {
    this.roundFailures++;
    const delayMs = backoffMs(this.roundFailures, ROUND_RETRY_BASE_MS, ROUND_RETRY_MAX_MS);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.tick(), delayMs);
    this.retryTimer.unref();
  }

  /** A claim went through: the next failed round backs off from the start. */
  roundSucceeded(): void {
    this.roundFailures = 0;
  }

  /**
   * Claims what has come due, then arms the timer for the next job in the future (after the
   * claims: what was due is taken), so `runAt` is kept to the millisecond.
   */
  private async claimDueAndArm(): Promise<void> {
    // A job due now may be a named queue's head.
    this.claimer.hintQueues();
    const since = Date.now();
    await this.claimer.claim();
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
      const next = await claims.nextDue(this.core.db, new Date(since));
      if (next !== undefined && !this.core.stopping) this.armTimer(Math.max(next, Date.now() + MIN_TIMER_MS));
    } catch (err) {
      this.roundFailed(err, 'jobs: could not look up the next due job; trying again');
    }
  }

  /** A part of a round failed: reported and tried again, unless the engine is stopping. */
  private roundFailed(err: unknown, message: string): void {
    if (this.core.stopping) return;
    this.core.log.error({ err }, message);
    this.retryRound();
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
   * Tells every engine that jobs were committed: this one directly, the others through NOTIFY,
   * one at a time per process (see "NOTIFY coalescing").
   */
  private announce(due: number, inQueue: boolean): void {
    if (inQueue) this.claimer.hintQueues();
    this.wake(due);
    this.pending ??= { dues: new Set(), queued: false };
    const pending = this.pending;
    pending.dues.add(due);
    pending.queued ||= inQueue;
    this.scheduleNotify();
  }

  private scheduleNotify(): void {
    if (this.notifyState !== 'idle' || !this.pending) return;
    this.notifyState = 'scheduled';
    setImmediate(() => {
      this.notifyState = 'idle';
      void this.sendNotify();
    });
  }

  private async sendNotify(): Promise<void> {
    const p = this.pending;
    if (!p || this.notifyState === 'sending') return;
    this.pending = undefined;
    this.notifyState = 'sending';
    const now = Date.now();
    const future = [...p.dues].filter((d) => d > now).sort((x, y) => x - y);
    // The earliest future times (a NOTIFY payload is small); later ones are found by the poll.
    const dues = (future.length < p.dues.size ? [now] : []).concat(future.slice(0, 50));
    try {
      await this.core.db.notify(JOBS_CHANNEL, `${dues.join(',')}${p.queued ? ':q' : ''}`);
    } catch (err) {
      this.core.log.warn({ err }, 'jobs: NOTIFY failed');
    } finally {
      this.notifyState = 'idle';
      this.scheduleNotify();
    }
  }
}
