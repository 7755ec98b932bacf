/**
 * A notified drain: work noted in the database by a writer's transaction (rows in a table of
 * the module's), published later by the processes that run jobs, each row exactly once.
 *
 * States, per collection, in one process: idle → draining (one drain at a time) → idle, or
 * draining again at once when asked while draining (`again`). A writer NOTIFYs `channel` with
 * the collection when it notes work (delivered at commit); a poll every `pollMs` drains every
 * collection with work left (noted while no process listened, or a drain that failed), and a
 * reconnected LISTEN polls at once. Each round takes rows with SKIP LOCKED (`take`) and publishes
 * and removes or marks them (`publish`) in one transaction, so any number of processes drain
 * together safely.
 *
 * Used by journey milestones (journeys.milestones.ts) and link click events (links
 * click-events.ts).
 */
import type { Db, Tx } from '../db/index.ts';
import { Subscription } from './subscription.ts';

export interface DrainLog {
  warn(obj: object, msg?: string): void;
}

/** A drain's work: rows of type `T`, noted per collection. */
export interface DrainSource<T> {
  /** Channel the writers NOTIFY with a collection id. */
  channel: string;
  /** What to say in logs ("journeys: milestones"). */
  name: string;
  /** Collections with work left (the poll). */
  pending(db: Db): Promise<string[]>;
  /** Rows one round takes at most: fewer means nothing is left. */
  batch: number;
  /** Takes up to `limit` rows of a collection's work, locked (SKIP LOCKED), or removed as taken. */
  take(tx: Tx, collectionId: string, limit: number): Promise<T[]>;
  /** Publishes the rows taken (and marks them published, if `take` left them), in its transaction. */
  publish(tx: Tx, collectionId: string, rows: T[]): Promise<unknown>;
}

export class NotifiedDrain<T> {
  private readonly notices: Subscription;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Collections being drained, and whether they were asked for again meanwhile. */
  private readonly draining = new Map<string, { again: boolean; done: Promise<void> }>();
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly source: DrainSource<T>,
    private readonly log: DrainLog,
    private readonly pollMs: number,
  ) {
    this.notices = new Subscription(
      db,
      source.channel,
      (collectionId) => this.request(collectionId),
      () => void this.drainAll(),
    );
  }

  /** Never throws: a database that is down at start leaves the poll to drain. */
  async start(): Promise<void> {
    this.stopped = false;
    this.pollTimer = setInterval(() => void this.drainAll(), this.pollMs);
    this.pollTimer.unref();
    try {
      await this.notices.start();
    } catch (err) {
      this.log.warn({ err }, `${this.source.name}: could not listen; draining on the poll`);
    }
    // Noted while no process listened.
    void this.drainAll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    await this.notices.stop();
    await Promise.all([...this.draining.values()].map((d) => d.done));
  }

  /** Drains a collection now, or once more after the drain in progress. */
  request(collectionId: string): void {
    if (this.stopped) return;
    const running = this.draining.get(collectionId);
    if (running) {
      running.again = true;
      return;
    }
    const entry = { again: false, done: Promise.resolve() };
    this.draining.set(collectionId, entry);
    entry.done = (async () => {
      try {
        do {
          entry.again = false;
          await this.drain(collectionId);
        } while (entry.again && !this.stopped);
      } catch (err) {
        // The poll tries again.
        this.log.warn({ err, collectionId }, `${this.source.name}: draining failed`);
      } finally {
        this.draining.delete(collectionId);
      }
    })();
  }

  /** Drains every collection with work left (the poll; also tests). */
  async drainAll(): Promise<void> {
    if (this.stopped) return;
    try {
      for (const c of await this.source.pending(this.db)) this.request(c);
      await Promise.all([...this.draining.values()].map((d) => d.done));
    } catch (err) {
      this.log.warn({ err }, `${this.source.name}: looking for work failed`);
    }
  }

  /** Drains a collection, a batch per transaction; answers how many rows. */
  async drain(collectionId: string): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.drainOnce(collectionId);
      total += n;
      if (n < this.source.batch || this.stopped) return total;
    }
  }

  /** Publishes one round of a collection's work in one transaction; answers how many rows, 0 when none is left. */
  private drainOnce(collectionId: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const rows = await this.source.take(tx, collectionId, this.source.batch);
      if (rows.length === 0) return 0;
      await this.source.publish(tx, collectionId, rows);
      return rows.length;
    });
  }
}
