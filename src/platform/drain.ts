/**
 * A notified drain: work noted in the database by a writer's transaction (rows in a table of
 * the module's), published later by the processes that run jobs, each row exactly once.
 *
 * States, per collection, in one process: idle → draining (one drain at a time) → idle, or
 * draining again at once when asked while draining (`again`). A writer NOTIFYs `channel` with
 * the collection when it notes work (delivered at commit); a poll every `pollMs` drains every
 * collection with work left (noted while no process listened, or a drain that failed), and a
 * reconnected LISTEN polls at once. `drainOne` takes rows with SKIP LOCKED and publishes and
 * removes them in one transaction, so any number of processes drain together safely.
 *
 * Used by journey milestones (journeys.milestones.ts) and link click events (links
 * click-events.ts).
 */
import type { Db } from '../db/index.ts';

interface Log {
  warn(obj: object, msg?: string): void;
}

export interface DrainSource {
  /** Channel the writers NOTIFY with a collection id. */
  channel: string;
  /** What to say in logs ("journeys: milestones"). */
  name: string;
  /** Collections with work left (the poll). */
  pending(db: Db): Promise<string[]>;
  /** Publishes part of a collection's work in one transaction; answers how many rows, 0 when none is left. */
  drainOnce(db: Db, collectionId: string): Promise<number>;
  /** Rows one `drainOnce` takes at most: fewer means nothing is left. */
  batch: number;
}

export class NotifiedDrain {
  private unlisten: (() => Promise<void>) | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Collections being drained, and whether they were asked for again meanwhile. */
  private readonly draining = new Map<string, { again: boolean; done: Promise<void> }>();
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly source: DrainSource,
    private readonly log: Log,
    private readonly pollMs: number,
  ) {}

  /** Never throws: a database that is down at start leaves the poll to drain. */
  async start(): Promise<void> {
    this.stopped = false;
    this.pollTimer = setInterval(() => void this.drainAll(), this.pollMs);
    this.pollTimer.unref();
    try {
      this.unlisten = await this.db.listen(
        this.source.channel,
        (collectionId) => this.request(collectionId),
        () => void this.drainAll(),
      );
    } catch (err) {
      this.log.warn({ err }, `${this.source.name}: could not listen; draining on the poll`);
    }
    // Noted while no process listened.
    void this.drainAll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    await this.unlisten?.().catch(() => {});
    this.unlisten = undefined;
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
      const n = await this.source.drainOnce(this.db, collectionId);
      total += n;
      if (n < this.source.batch || this.stopped) return total;
    }
  }
}
