/**
 * The flow control of webhook delivery (delivery.ts), each part owning its state:
 * - `Coalescer`: the calls of one event-loop turn gathered per collection into one statement;
 *   a batch per collection on its way at a time (states of a collection's queue: empty →
 *   scheduled for the next turn → running, with the next batch growing meanwhile).
 * - `InFlight`: one registration's attempts in flight in this process, and those waiting for
 *   a place (first come, first served, each with its own wait).
 * - `RateWindow`: a registration's `maxPerSecond` as a sliding window of the last starts.
 */
import type { Db } from '../../db/index.ts';

/** The most rows one gathered statement carries. */
const COALESCE_MAX = 500;

/**
 * Gathers calls made in one event-loop turn, per collection, into one call of `run` (see
 * delivery.ts, top). One batch per collection is on its way at a time; calls made meanwhile form the next.
 * `run` answers one value per item, in order.
 */
export class Coalescer<I, O> {
  private readonly queues = new Map<
    string,
    {
      db: Db;
      items: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[];
      busy: boolean;
      scheduled: boolean;
    }
  >();

  constructor(private readonly run: (db: Db, collectionId: string, items: I[]) => Promise<O[]>) {}

  submit(db: Db, collectionId: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let q = this.queues.get(collectionId);
      if (!q) {
        q = { db, items: [], busy: false, scheduled: false };
        this.queues.set(collectionId, q);
      }
      q.items.push({ item, resolve, reject });
      this.schedule(collectionId);
    });
  }

  private schedule(collectionId: string): void {
    const q = this.queues.get(collectionId);
    if (!q || q.busy || q.scheduled) return;
    q.scheduled = true;
    setImmediate(() => {
      q.scheduled = false;
      void this.flush(collectionId);
    });
  }

  private async flush(collectionId: string): Promise<void> {
    const q = this.queues.get(collectionId);
    if (!q || q.busy) return;
    const batch = q.items.splice(0, COALESCE_MAX);
    if (batch.length === 0) {
      this.queues.delete(collectionId);
      return;
    }
    q.busy = true;
    try {
      const out = await this.run(
        q.db,
        collectionId,
        batch.map((b) => b.item),
      );
      for (const [i, b] of batch.entries()) b.resolve(out[i]);
    } catch (err) {
      for (const b of batch) b.reject(err);
    } finally {
      q.busy = false;
      if (q.items.length > 0) this.schedule(collectionId);
      else this.queues.delete(collectionId);
    }
  }
}

/**
 * Attempts in flight to one registration in this process, and the attempts waiting for a place
 * (first come, first served; each gives up after its wait).
 */
export class InFlight {
  count = 0;
  /** When a place was last freed (performance.now()). */
  private lastRelease = 0;
  private readonly waiting: { granted: (ok: boolean) => void; timer?: NodeJS.Timeout }[] = [];

  /**
   * A place now, or later while places keep being freed (at least one every `waitMs`, for at
   * most `maxWaitMs`); false when there is none (0: no waiting).
   */
  acquire(limit: number, waitMs: number, maxWaitMs: number): boolean | Promise<boolean> {
    if (this.count < limit) {
      this.count++;
      return true;
    }
    if (waitMs <= 0) return false;
    const since = performance.now();
    return new Promise<boolean>((resolve) => {
      const entry: (typeof this.waiting)[number] = { granted: resolve };
      const check = () => {
        const now = performance.now();
        if (now - this.lastRelease < waitMs && now - since < maxWaitMs) {
          entry.timer = setTimeout(check, waitMs);
          return;
        }
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      };
      entry.timer = setTimeout(check, waitMs);
      this.waiting.push(entry);
    });
  }

  /** Hands the place to the next waiting attempt, or frees it. */
  release(): void {
    this.lastRelease = performance.now();
    const next = this.waiting.shift();
    if (next) {
      clearTimeout(next.timer);
      next.granted(true);
    } else this.count--;
  }

  get idle(): boolean {
    return this.count === 0 && this.waiting.length === 0;
  }
}

/**
 * A registration's `maxPerSecond` in this process: the start times of its last `rate` attempts
 * (a ring). An attempt may start when fewer than `rate` started in the second before it, so no
 * window of one second ever holds more than `rate` starts, while a burst up to the rate goes
 * at once. `horizon` spreads the attempts put off at the rate, so that they do not all come back
 * at the same moment.
 */
export class RateWindow {
  private readonly starts: Float64Array;
  private head = 0;
  private filled = 0;
  horizon = 0;
  lastUsed = 0;

  constructor(readonly rate: number) {
    this.starts = new Float64Array(rate);
  }

  /** Takes a start at `now`, or answers when the earliest one could be (ms epoch). */
  take(now: number): true | number {
    this.lastUsed = now;
    if (this.filled < this.rate) {
      this.starts[(this.head + this.filled) % this.rate] = now;
      this.filled++;
      return true;
    }
    const oldest = this.starts[this.head];
    if (now - oldest >= 1000) {
      this.starts[this.head] = now;
      this.head = (this.head + 1) % this.rate;
      return true;
    }
    return oldest + 1000;
  }

  /** When an attempt refused now should come back: after those already put off, at the rate. */
  putOff(earliest: number): number {
    this.horizon = Math.max(this.horizon + 1000 / this.rate, earliest);
    return this.horizon;
  }
}
