/**
 * The claimer: claims due jobs for the free slots, one claim in flight at a time.
 *
 * Design
 * - Claiming: one UPDATE … FROM (SELECT … FOR UPDATE SKIP LOCKED) flips up to as many due
 *   rows as the engine has free slots to `running`, stamping `locked_by` (this engine's
 *   random id) and `locked_at`. Workers in any number of processes share the table without
 *   ever claiming one row twice. The pick (which rows; fairness.ts) is the function
 *   `jobs_pick_fair` (migration 0305), planned with sorting off so that it reads the index in
 *   order whatever the statistics say (0303); the claim and the completion batch are functions
 *   (0304, 0305), so that a plan kept from a small table does not scan the table once it has
 *   grown. One claim is in flight per engine at a time: a round of `claim`, or a completion
 *   batch's (completions.ts). A claim that brings fewer jobs than asked ends the round: nothing
 *   more is due now, and jobs committed meanwhile are announced (and ask for another round), so
 *   no empty claim is sent to find that out.
 * - Rounds give way to completions: while successes wait to be written, their statement will
 *   claim for every free slot, and a claim of its own would be a second round trip for the
 *   same slots (`batchWillClaim`).
 * - States (`ClaimerState`; a named state as graphile-worker's LocalQueue keeps its mode):
 *   - idle: no claim in flight.
 *   - claiming: a claim in flight (a round, or a completion batch's claim).
 *   - claimingAgain: a claim in flight, and a round was asked for meanwhile (a wake-up, a slot
 *     freed): a round goes on with another turn of its loop; a completion batch's claim
 *     schedules a round when it ends.
 *   - owed: no claim in flight, but a round asked for during the last claim has not run: that
 *     claim gave way to completions (or was a batch's claim, whose scheduled round gave way to
 *     the next batch). The next batch's claim begins as claimingAgain, so it schedules a round
 *     when it ends; a round clears it (its loop begins as claiming). So a wake-up that came
 *     while a claim gave way to completions is followed by a round after their claim.
 *   - stopped: stop() has begun and no claim is in flight; nothing is claimed any more.
 *   Transitions: idle → claiming, owed → claimingAgain (a round or a batch's claim begins);
 *   claiming → claimingAgain (asked meanwhile); when the claim ends, claiming → idle and
 *   claimingAgain → owed (a round's loop has turned it back to claiming unless it gave way);
 *   any of them → stopped once stop() has begun and no claim is in flight.
 * - Scheduled: a wake-up arms the turn (`turn`, a setImmediate), so that a burst of wake-ups
 *   (notifications, finished jobs) costs one round. The turn is the claimer's timer rather
 *   than one of its states: it is armed whatever the claim in flight, and when it fires it asks
 *   the claim in flight again (claimingAgain) or, if none, begins a round.
 * - Named queues (`queueName`, per collection) run in enqueue order, `concurrency` at a time
 *   (default one), no faster than their rate, not at all while paused (queues.repository.ts):
 *   only a queue's first pending jobs are claimable. Those claims take a transaction-scoped
 *   advisory lock first, so concurrent workers see each other's claims. A rate-limited queue
 *   holding jobs back arms the wake-up timer for its next start (`wakeAt`).
 *   They are looked at only when free jobs ran short and a head may be due (`queueHint`:
 *   a notification, a finished queue job, the timer or the poll), which saves a query per round.
 * - Claims in doubt: a claim statement can commit while the connection carrying its answer
 *   dies. Such a job is `running` under this worker's id, but this worker never started it.
 *   The heartbeat only extends the claims the engine is working on, so an unknown claim
 *   expires by itself; and after a failed claim round (or a failed completion batch's claim,
 *   or hand-back) the claimer hands back (queued again, attempt not counted) every claim of
 *   its own it does not know, before claiming again (`inDoubt`). A failed round is tried
 *   again after a short backoff (wakeup.ts), not only at the next poll.
 * - Commit: on a PostgreSQL server a round's claim commits without waiting for the WAL flush
 *   (a lost claim only queues its job again; claims.repository.ts, `claimsCommitAsync`); on
 *   PGlite it waits, as the database dies with the worker.
 * - Started even if stop() began meanwhile: the jobs of a claim in flight were claimed before
 *   it, and get its grace period (engine.ts, "Shutdown").
 */
import { isConflictError } from '../../../db/index.ts';
import * as claims from '../claims.repository.ts';
import type * as repo from '../jobs.repository.ts';
import * as queues from '../queues.repository.ts';
import { type EngineCore, JOBS_CHANNEL } from './core.ts';
import type { Fairness } from './fairness.ts';
import type { Slots } from './slots.ts';

export type ClaimerState = 'idle' | 'claiming' | 'claimingAgain' | 'owed' | 'stopped';

export interface ClaimerHooks {
  /** Successes wait to be written and no batch is being written (completions.ts). */
  batchWaiting(): boolean;
  /** The claim in flight has ended: completions that waited for it are written now (completions.ts). */
  claimEnded(): void;
  /** A round failed on the database: the whole round again after a backoff (wakeup.ts). */
  roundFailed(): void;
  /** A claim went through: the next failed round backs off from the start again (wakeup.ts). */
  roundSucceeded(): void;
  /** A rate-limited queue may start a job again at `due` (epoch ms): a round then (wakeup.ts). */
  wakeAt(due: number): void;
}

export class Claimer {
  private state: ClaimerState = 'idle';
  /** The armed turn: a round at the next turn of the event loop (see "Scheduled"). */
  private turn: NodeJS.Immediate | undefined;
  /** A claim failed: this worker may hold claims it does not know of (see "Claims in doubt"). */
  private inDoubt = false;
  /** Might a named-queue job be claimable? Saves a query per claim round when none are. */
  private queueHint = true;
  /** Claims commit without the WAL flush (on a PostgreSQL server; claims.repository.ts, claimsCommitAsync). */
  private readonly asyncCommit: boolean;

  constructor(
    private readonly core: EngineCore,
    private readonly fairness: Fairness,
    private readonly slots: Slots,
    private readonly hooks: ClaimerHooks,
  ) {
    this.asyncCommit = claims.claimsCommitAsync(core.db);
  }

  /** A claim is in flight. */
  get claiming(): boolean {
    return this.state === 'claiming' || this.state === 'claimingAgain';
  }

  /** A named queue may have a due head: the next round that runs short looks. */
  hintQueues(): void {
    this.queueHint = true;
  }

  /** This worker may hold claims it does not know of: handed back before the next claim. */
  markInDoubt(): void {
    this.inDoubt = true;
  }

  /** Coalesces a burst of wake-ups (notifications, finished jobs) into one claim round. */
  schedule(): void {
    if (this.turn !== undefined || this.state === 'stopped') return;
    this.turn = setImmediate(() => {
      this.turn = undefined;
      void this.claim();
    });
  }

  /**
   * A round: claims while there are free slots and due jobs. Asked while a claim is in flight,
   * it asks that claim again instead (claimingAgain).
   */
  async claim(): Promise<void> {
    const { core } = this;
    if (!core.live) return;
    if (this.claiming) {
      this.state = 'claimingAgain';
      return;
    }
    if (this.batchWillClaim()) return;
    this.state = this.state === 'owed' ? 'claimingAgain' : 'claiming';
    try {
      if (this.inDoubt) await this.releaseUnknownClaims();
      do {
        this.state = 'claiming';
        while (!core.stopping && core.taskNames().length > 0 && !this.batchWillClaim()) {
          const free = this.slots.freeSlots();
          if (free <= 0) break;
          const rows = await claims.claimFree(
            core.db,
            core.workerId,
            core.settings.lockTimeoutMs,
            this.fairness.fairClaim(free, 0),
            { asyncCommit: this.asyncCommit },
          );
          // Started even if stop() began meanwhile: they were claimed before it, and get its grace period.
          this.slots.admit(rows);
          if (core.stopping) break;
          if (rows.length < free) {
            // Free jobs ran out (started first: a named queue's look-up must not delay them).
            this.slots.admit(await this.claimFromQueues(free - rows.length));
            break;
          }
        }
      } while (this.askedAgain() && !core.stopping && !this.batchWillClaim());
      this.hooks.roundSucceeded();
    } catch (err) {
      // While stopping, the database may already be closing: nothing to report.
      if (!core.stopping) {
        this.inDoubt = true;
        core.log.error({ err }, 'jobs: claim failed; trying again');
        this.hooks.roundFailed();
      }
    } finally {
      this.claimEnded();
    }
  }

  /** A completion batch may claim with its statement now (no claim in flight, none in doubt). */
  mayClaimWithBatch(): boolean {
    return this.core.live && !this.claiming && !this.inDoubt && this.core.taskNames().length > 0;
  }

  /** A completion batch's claim is in flight from now (see "States": from owed, as claimingAgain). */
  beginBatchClaim(): void {
    this.state = this.state === 'owed' ? 'claimingAgain' : 'claiming';
  }

  /**
   * Jobs claimed along with a completion batch (`asked` of them): started (even if stop()
   * began meanwhile, as in `claim`); ends the claim.
   */
  batchClaimed(rows: repo.ClaimedJob[], asked: number): void {
    try {
      this.slots.admit(rows);
      if (this.core.stopping) return;
      // Wake-ups that came meanwhile (a slot freed by a failed attempt, jobs announced), or
      // free jobs ran out and a named queue may have a due head: a round looks (and sends
      // nothing when no slot is free).
      if (this.askedAgain() || (rows.length < asked && (this.queueHint || this.inDoubt))) this.schedule();
      this.hooks.roundSucceeded();
    } finally {
      this.claimEnded();
    }
  }

  /** A completion batch's claim failed: it may have committed with its answer lost (a dropped connection). */
  batchClaimFailed(err: unknown): void {
    if (!isConflictError(err)) this.inDoubt = true;
    this.claimEnded();
  }

  /** stop() has begun: no more rounds; a claim in flight ends first (stop() waits for it). */
  stop(): void {
    clearImmediate(this.turn);
    this.turn = undefined;
    if (!this.claiming) this.state = 'stopped';
  }

  private askedAgain(): boolean {
    return this.state === 'claimingAgain';
  }

  /**
   * Successes are waiting to be written, and their statement will claim for every free slot:
   * a claim of its own now would be a second round trip for the same slots.
   */
  private batchWillClaim(): boolean {
    return this.hooks.batchWaiting() && !this.inDoubt && !this.core.stopping;
  }

  /** The claim in flight has ended (see "States"). */
  private claimEnded(): void {
    if (this.core.stopping) this.state = 'stopped';
    else this.state = this.askedAgain() ? 'owed' : 'idle';
    this.hooks.claimEnded();
  }

  /**
   * Hands back the claims of this worker that it is not running (called within a claim round,
   * so no claim of this engine is in flight meanwhile). Throws when the database is still away:
   * the round then fails and is tried again.
   */
  private async releaseUnknownClaims(): Promise<void> {
    const { core } = this;
    const released = await core.retrying(() => claims.releaseAllBut(core.db, core.workerId, [...core.held.keys()]));
    this.inDoubt = false;
    if (released > 0) {
      core.log.warn({ released }, 'jobs: handed back claims whose answer was lost with the connection');
      // Other workers may take them (and named queues may have a head again).
      await core.db.notify(JOBS_CHANNEL, `${Date.now()}:q`).catch(() => {});
      this.queueHint = true;
    }
  }

  /**
   * Named queues' claimable jobs, for slots the free jobs did not fill; looked at only when
   * one may be due: hinted by a notification, a finished queue job, the timer or the poll. A
   * rate-limited queue that still holds jobs back arms the timer for its next start.
   */
  private async claimFromQueues(limit: number): Promise<repo.ClaimedJob[]> {
    const { core } = this;
    if (!this.queueHint) return [];
    this.queueHint = false;
    if (!(await queues.hasQueuedInQueues(core.db))) return [];
    const { claimed, paced } = await core.db.transaction(async (tx) => {
      await queues.lockQueueClaims(tx);
      const tasks = core.taskNames();
      const claimed = await queues.claimQueued(tx, core.workerId, core.settings.lockTimeoutMs, { tasks }, limit);
      return { claimed, paced: await queues.nextPacedStart(tx) };
    });
    if (claimed.length > 0) this.queueHint = true;
    if (paced !== undefined) {
      this.queueHint = true;
      this.hooks.wakeAt(paced);
    }
    return claimed;
  }
}
