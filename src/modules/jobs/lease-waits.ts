/**
 * The long poll of POST .../jobs/lease: a lease that finds nothing due waits here, for at most
 * its `waitSeconds`, and looks again when the jobs' NOTIFY channel says a job was enqueued (one
 * LISTEN per process, shared by every waiting lease), at the latest after a safety interval
 * (jobs that come due by time, or go back to the queue when a lease expires, are announced to
 * no one), when its client hangs up, or at once when the process begins to stop.
 *
 * States: new → listening (start: the LISTEN is held) → closed (closing(): every wait ends now
 * and new ones do not wait; stop() also lets the LISTEN go). Without the LISTEN (a process
 * whose background did not start it, or a failed LISTEN) a wait looks again every
 * POLL_WITHOUT_LISTEN_MS instead.
 */
import type { Db } from '../../db/index.ts';
import { JOBS_CHANNEL } from './engine.ts';

/** How often a waiting lease looks again with no NOTIFY: the LISTEN held, or not. */
const SAFETY_POLL_MS = 1000;
const POLL_WITHOUT_LISTEN_MS = 200;

export class LeaseWaits {
  private readonly waiters = new Set<() => void>();
  private unlisten: (() => Promise<void>) | undefined;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly log: { warn(o: object, msg: string): void },
  ) {}

  /** LISTENs on the jobs' channel; a LISTEN that fails leaves the waits polling. */
  async start(): Promise<void> {
    try {
      this.unlisten = await this.db.listen(
        JOBS_CHANNEL,
        () => this.wakeAll(),
        () => this.wakeAll(),
      );
    } catch (err) {
      this.log.warn({ err }, 'jobs: leases could not LISTEN; waiting leases poll instead');
    }
  }

  /** The process begins to stop: every wait ends now, so no long poll holds the shutdown. */
  closing(): void {
    this.closed = true;
    this.wakeAll();
  }

  async stop(): Promise<void> {
    this.closing();
    const unlisten = this.unlisten;
    this.unlisten = undefined;
    await unlisten?.().catch(() => {});
  }

  /** Closing: a lease answers what it found at once instead of waiting. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Resolves after at most `ms`: sooner on a NOTIFY of the jobs' channel, when `signal` aborts
   * or when the process begins to stop. Never rejects.
   */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.closed || signal?.aborted) return Promise.resolve();
    const limit = Math.min(ms, this.unlisten ? SAFETY_POLL_MS : POLL_WITHOUT_LISTEN_MS);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, limit));
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private wakeAll(): void {
    for (const done of [...this.waiters]) done();
  }
}
