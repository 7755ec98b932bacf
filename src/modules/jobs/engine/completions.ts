/**
 * Completions: the outcomes of finished jobs, written in batches, and the events they publish.
 *
 * Design
 * - Per-job cost: a batch of successes (those finishing in one turn of the event loop, or
 *   while the previous batch was being written) is recorded by one statement, which also
 *   claims jobs for the slots it frees: with short jobs a worker spends one round trip and
 *   one commit per batch of up to `concurrency` jobs (completeAndClaim in the repository).
 *   Completions that finish while a claim is in flight wait for it and go with the next
 *   claim; a claim round waits for completions about to claim (claimer.ts). The hot statements
 *   are prepared once per connection (`prepared`, src/db/client.ts). Figures: docs/benchmarks.md.
 * - A batch whose jobs all ran shorter than PREFETCH_SHORT_MS also claims up to `prefetch`
 *   jobs beyond the free slots (slots.ts, "Prefetch").
 * - States (`CompletionsState`): idle (successes may wait for the next turn, when the batch is
 *   written) → afterClaim (a claim is in flight: the batch waits, to be written with the next
 *   claim, once the claimer says the claim ended) → writing (one batch at a time: the next one
 *   waits for it, and grows meanwhile) → idle (the next batch is written at the next turn if
 *   any waits).
 * - Contention: a finished job's outcome is kept in memory until written: a failed completion
 *   write is retried with a bounded backoff for as long as this engine runs, and the job stays
 *   claimed (heart-beaten) meanwhile, so a live worker's success is never lost and never re-run
 *   by another worker. A failed attempt's write is kept and retried the same way. Only a
 *   stopped engine gives up; the lock timeout then hands the jobs on (at least once).
 * - Events: given a publisher (`publishEventsTo`, set once the webhooks module is built), the
 *   final state of a job of a visible task is published in the transaction that records it:
 *   `job.completed` with a completion batch, `job.failed` with the last failed attempt or the
 *   sweep that gives up on a dead worker's last attempt (housekeeping.ts, jobs.events.ts). Only
 *   then is the write a transaction (BEGIN, the statement, one publish per collection, COMMIT);
 *   a batch of internal tasks' jobs (deliveries) is the one statement it always was, and
 *   publishes nothing.
 */
import { backoffMs, isConflictError, type Queryable } from '../../../db/index.ts';
import type { NewEvent } from '../../../platform/events.ts';
import * as claims from '../claims.repository.ts';
import { completedEvent, type EventPublisher, failedEvent } from '../jobs.events.ts';
import type * as repo from '../jobs.repository.ts';
import type { Claimer } from './claimer.ts';
import type { EngineCore, Held } from './core.ts';
import type { Fairness } from './fairness.ts';
import type { Slots } from './slots.ts';

/** Retry delays of a completion write that failed: 50 ms doubling up to 5 s, jittered. */
const COMPLETION_RETRY_BASE_MS = 50;
const COMPLETION_RETRY_MAX_MS = 5000;
/**
 * A completion batch prefetches only when every job in it ran shorter than this: then a
 * prefetched job waits a few milliseconds for a slot, not the length of a long job.
 */
const PREFETCH_SHORT_MS = 20;

export type CompletionsState = 'idle' | 'afterClaim' | 'writing';

/** A success waiting to be written; `done(refilled)` once written (refilled: its slot was claimed again). */
interface Completion {
  row: repo.ClaimedJob;
  result: unknown;
  progress: repo.JobProgress | null;
  /** The handler's run time, ms: short jobs let the batch prefetch. */
  ranMs: number;
  done: (refilled: boolean) => void;
}

export class Completions {
  private state: CompletionsState = 'idle';
  /** Successes waiting to be written. */
  private waiting: Completion[] = [];

  constructor(
    private readonly core: EngineCore,
    private readonly fairness: Fairness,
    private readonly slots: Slots,
    private readonly claimer: Claimer,
  ) {}

  /** Successes wait and no batch is being written: their statement will claim (claimer.ts). */
  batchWaiting(): boolean {
    return this.waiting.length > 0 && this.state !== 'writing';
  }

  /** The claim in flight has ended; completions that waited for it are written now (with the next claim). */
  claimEnded(): void {
    if (this.state === 'afterClaim') {
      this.state = 'idle';
      setImmediate(() => void this.flush());
    }
  }

  /**
   * Successes are recorded in batches: those finishing in the same turn of the event loop, or
   * while the previous batch is being written, go in one statement. Resolves once written,
   * with whether that statement also claimed the slot again.
   */
  complete(row: repo.ClaimedJob, result: unknown, progress: repo.JobProgress | null, ranMs: number): Promise<boolean> {
    return new Promise((done) => {
      this.waiting.push({ row, result, progress, ranMs, done });
      if (this.waiting.length === 1 && this.state !== 'writing') setImmediate(() => void this.flush());
    });
  }

  /**
   * A failed attempt's write: errored (retried after `delayMs`) or, at its last attempt, failed;
   * `last` for a visible task's job publishes job.failed with it. Retried as completions are.
   */
  fail(entry: Held, error: string, delayMs: number, last: boolean): ReturnType<typeof claims.fail> {
    const { core } = this;
    const { row } = entry;
    return this.untilWritten([row.id], 'a failed attempt', () =>
      this.withEvents(
        last ? [{ row, event: (at) => failedEvent(row, error, at) }] : [],
        (q) => claims.fail(q, row.collection_id, row.id, core.workerId, error, delayMs, entry.lastProgress),
        (res) => res?.status === 'failed',
      ),
    );
  }

  /**
   * Writes a batch of completions, one batch at a time. When no claim is in flight, the same
   * statement claims jobs for the slots the batch frees (and the slots still free): with short
   * jobs, one round trip and one commit per batch instead of two. A failed write is tried
   * again (bounded, jittered backoff; completions only) until it succeeds: the jobs stay in
   * `held` meanwhile, so the heartbeat keeps their claims, and no other worker runs them
   * again. Only a stopped engine gives up; the lock timeout then hands the jobs on (at least
   * once).
   */
  private async flush(): Promise<void> {
    const { core, claimer } = this;
    if (this.state === 'writing' || this.waiting.length === 0) return;
    if (claimer.claiming && !core.stopping) {
      // A claim is in flight: these go with the next one, one statement instead of two.
      this.state = 'afterClaim';
      return;
    }
    this.state = 'writing';
    const batch = this.waiting.splice(0);
    const done = batch.map((c) => ({
      collectionId: c.row.collection_id,
      id: c.row.id,
      result: c.result,
      progress: c.progress,
    }));
    const jobIds = batch.map((c) => c.row.id);
    // Visible tasks' jobs publish job.completed with the batch (see "Events"); usually none.
    const visible = batch
      .filter((c) => core.tasks.get(c.row.task)?.visible)
      .map((c) => ({ row: c.row, event: (at: Date) => completedEvent(c.row, c.result, at) }));
    const canClaim = claimer.mayClaimWithBatch();
    // Free slots, and with a batch of short jobs the prefetch beyond them (slots.ts).
    const short = batch.every((c) => c.ranMs < PREFETCH_SHORT_MS);
    const prefetch = short ? core.settings.prefetch : 0;
    let claimLimit = canClaim ? Math.max(0, this.slots.freeSlots() + prefetch) : 0;
    if (claimLimit > 0) claimer.beginBatchClaim();
    let refilled = false;
    try {
      const kept = await this.untilWritten(jobIds, 'completions', async () => {
        // Only the first attempt claims; a retry records the completions alone.
        const limit = claimLimit;
        claimLimit = 0;
        if (limit <= 0)
          return this.withEvents(
            visible,
            (q) => claims.completeMany(q, core.workerId, done),
            (ids, id) => ids.has(id),
          );
        try {
          const r = await this.withEvents(
            visible,
            (q) =>
              claims.completeAndClaim(
                q,
                core.workerId,
                done,
                core.settings.lockTimeoutMs,
                this.fairness.fairClaim(limit, prefetch),
              ),
            (res, id) => res.completed.has(id),
          );
          refilled = true;
          claimer.batchClaimed(r.claimed, limit);
          return r.completed;
        } catch (err) {
          if (!refilled) claimer.batchClaimFailed(err);
          throw err;
        }
      });
      for (const c of batch)
        if (!kept.has(c.row.id))
          core.log.warn({ jobId: c.row.id }, 'jobs: finished a job whose claim was lost; outcome dropped');
    } catch {
      // Logged by untilWritten: the engine stopped before the write went through.
    } finally {
      this.state = 'idle';
      if (this.waiting.length > 0) setImmediate(() => void this.flush());
    }
    for (const c of batch) c.done(refilled);
  }

  /**
   * An outcome write, tried again with a bounded, jittered backoff until it succeeds or the
   * engine has stopped (then it throws, and the lock timeout hands the jobs on).
   */
  private async untilWritten<T>(jobIds: number[], what: string, write: () => Promise<T>): Promise<T> {
    const { log } = this.core;
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        if (this.core.life === 'stopped') {
          log.error({ err, jobIds }, `jobs: could not record ${what}; worker stopped, giving up`);
          throw err;
        }
        const delayMs = backoffMs(attempt, COMPLETION_RETRY_BASE_MS, COMPLETION_RETRY_MAX_MS);
        const level = isConflictError(err) ? 'warn' : 'error';
        log[level]({ err, jobIds, attempt, delayMs }, `jobs: could not record ${what}; retrying`);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
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
    const { db, publisher } = this.core;
    if (!publisher || jobs.length === 0) return write(db);
    return db.transaction(async (tx) => {
      const r = await write(tx);
      const at = new Date();
      const kept = jobs.filter((j) => recorded(r, j.row.id));
      await publishOutcomes(
        tx,
        publisher,
        kept.map((j) => j.event(at)),
        kept.map((j) => j.row.collection_id),
      );
      return r;
    });
  }
}

/** Publishes each collection's events (built in the order of `collections`) in `tx`. */
export async function publishOutcomes(
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
