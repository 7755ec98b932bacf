/**
 * Slots and prefetch: which claimed job runs when, and the prefetched jobs that wait for a slot.
 *
 * Design
 * - A slot (`concurrency`) is a handler running (`executing`); it is free again when the
 *   handler returns, not when its outcome is written (completions.ts). Claims ask for the free
 *   slots less the jobs already promised them (`freeSlots`).
 * - Prefetch: a completion batch whose jobs all ran shorter than PREFETCH_SHORT_MS
 *   (completions.ts) also claims up to `prefetch` jobs beyond the free slots: they wait in
 *   `ready` (claimed, heart-beaten, not started) and start as slots free, so with short jobs a
 *   statement carries twice the jobs. Claims on a wake-up (the claimer's rounds) never
 *   prefetch, so an idle worker and long jobs behave as without it.
 * - A claimed job's states (core.ts, `Held`): ready → running (`take`) → returned (`free`);
 *   every claim passes through `ready` (`admit`), most urgent first, and starts at once where a
 *   slot is free. A ready job starts only within its collection's share of the slots
 *   (fairness.ts, "Share"); past it, it waits.
 * - Trade-off: a prefetched job waits behind this worker's running jobs while another worker
 *   may be idle; one that waits longer than `prefetchHoldMs` is handed back (queued again,
 *   attempt not counted, NOTIFY), and the worker prefetches again only after another batch of
 *   short jobs.
 * - The hold timer's states: unarmed (nothing ready) → armed for the oldest ready job's hold →
 *   fired: hands back every ready job if the oldest has waited past the hold (they wait behind
 *   the same busy slots), and arms again for what is still ready.
 * - A failed hand-back leaves claims in doubt (claimer.ts): handed back before the next claim,
 *   or expiring by the lock timeout.
 */
import * as claims from '../claims.repository.ts';
import type * as repo from '../jobs.repository.ts';
import { type EngineCore, type Held, JOBS_CHANNEL } from './core.ts';
import type { Fairness } from './fairness.ts';

export interface SlotsHooks {
  /** Starts a job's handler in a slot (runner.ts); it calls `take` first. */
  run(entry: Held): void;
  /** A hand-back failed: this worker holds claims it does not know of (claimer.ts). */
  inDoubt(): void;
}

export class Slots {
  /** Claimed jobs waiting for a slot (prefetched), in claim order. */
  private ready: Held[] = [];
  /** Handlers running now: the slots taken. */
  private executing = 0;
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly core: EngineCore,
    private readonly fairness: Fairness,
    private readonly hooks: SlotsHooks,
  ) {}

  /** Slots a claim may fill now: neither running a handler nor promised to a prefetched job. */
  freeSlots(): number {
    return this.core.settings.concurrency - this.executing - this.ready.length;
  }

  /** Jobs just claimed: held, and started while slots are free; the rest wait in `ready`. */
  admit(rows: repo.ClaimedJob[]): void {
    this.fairness.advance(rows.filter((r) => r.queue_name === null));
    const now = performance.now();
    // Most urgent first, as the claim picked them (an UPDATE … RETURNING keeps no order).
    const urgent = [...rows].sort(
      (x, y) => y.priority - x.priority || x.run_at.getTime() - y.run_at.getTime() || x.id - y.id,
    );
    for (const row of urgent) {
      const entry: Held = { row, state: 'ready', lastProgress: row.progress, done: Promise.resolve(), claimedAt: now };
      this.core.held.set(row.id, entry);
      this.ready.push(entry);
    }
    this.drain();
    if (this.ready.length > 0) this.armHold();
  }

  /** A ready job takes a slot: its handler starts now. */
  take(entry: Held): void {
    this.executing++;
    entry.state = 'running';
    entry.startedAt = performance.now();
  }

  /** Its handler has returned: the slot is free, the outcome may still be being written. */
  free(entry: Held): void {
    this.executing--;
    entry.state = 'returned';
  }

  /**
   * Starts prefetched jobs while slots are free (not after a shutdown gave up on them), none
   * of a collection already running its share of the slots: such a job waits, and is handed
   * back if it waits past the hold.
   */
  drain(): void {
    const { concurrency, collectionConcurrency: share } = this.core.settings;
    const { signal } = this.core.abort;
    if (share >= concurrency) {
      while (this.ready.length > 0 && this.executing < concurrency && !signal.aborted) {
        this.hooks.run(this.ready.shift() as Held);
      }
      return;
    }
    const runningOf = this.core.perCollection((e) => e.state === 'running');
    for (let i = 0; i < this.ready.length && this.executing < concurrency; ) {
      if (signal.aborted) return;
      const c = this.ready[i].row.collection_id;
      const n = runningOf.get(c) ?? 0;
      if (n >= share) {
        i++;
        continue;
      }
      runningOf.set(c, n + 1);
      this.hooks.run(this.ready.splice(i, 1)[0]);
    }
  }

  /** A shutdown gave up: prefetched jobs not started by now never will be here (stop() releases them). */
  dropReady(): void {
    this.ready = [];
  }

  /** The engine has stopped: the hold timer goes. */
  stop(): void {
    clearTimeout(this.holdTimer);
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
      Math.max(1, this.core.settings.prefetchHoldMs - waited),
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
    const { core } = this;
    const now = performance.now();
    const late = this.ready.filter((e) => now - e.claimedAt >= core.settings.prefetchHoldMs);
    if (late.length > 0) {
      // All of them: the later ones wait behind the same busy slots.
      const ids = this.ready.map((e) => e.row.id);
      for (const e of this.ready) core.held.delete(e.row.id);
      this.ready = [];
      core.settle();
      try {
        const released = await core.retrying(() => claims.release(core.db, core.workerId, ids));
        core.log.info({ released, ids }, 'jobs: handed back prefetched jobs that waited too long for a slot');
        await core.db.notify(JOBS_CHANNEL, `${Date.now()}`);
      } catch (err) {
        if (!core.stopping) {
          this.hooks.inDoubt();
          core.log.warn(
            { err, ids },
            'jobs: could not hand back prefetched jobs; they are handed back before the next claim',
          );
        }
      }
    }
    this.armHold();
  }
}
