/**
 * Slots for analytics reads. An analytics read holds a database connection for as long as it
 * runs (seconds for a funnel over millions of events), and every route shares the primary's
 * pool with it. Without a bound, a burst of such requests takes every connection, and a plain
 * read or write then waits for one until it gives up (503): slow questions stall fast ones.
 *
 * So analytics reads (`Analytics.read` and `quick`: the interactions' counts and aggregates,
 * the journeys' funnels, reports, trends and people, the links' click analytics) run in at
 * most ANALYTICS_CONCURRENCY at once, by default half the pool, and the rest of the pool stays
 * for everything else. A read finding every slot taken waits in line, first come first
 * served, for up to ANALYTICS_WAIT_MS; then it is answered 503 with Retry-After, naming the
 * setting. A slot is handed straight to the next in line when a read ends.
 *
 * A read made for a request (it carries the request's `signal`, from the route) is bounded in
 * time as well as in number: once it has its slot it may run ANALYTICS_TIMEOUT_MS, after which
 * it is cancelled in the database and answered 503 naming that setting. And a read whose client
 * has gone stops: waiting, it leaves the line; running, it is cancelled in the database
 * (db/stoppable.ts), so a client that asks for a heavy funnel and hangs up does not keep a slot
 * and a connection busy for nobody. The bound is a timer in the database layer rather than
 * PostgreSQL's statement_timeout: it bounds the whole read, not each of its statements, and
 * costs no SET on every read. A job's reads (the people export) carry no signal: no client
 * waits for them, and they may take longer than an answer should.
 *
 * States of a read: running (holds a slot) → done; or waiting → running (a slot handed over)
 * or → refused (its wait ran out; it leaves the line) or → abandoned (its client went away; it
 * leaves the line). `slots()` tells the metrics how many run and wait, and how many were
 * refused. The progress rebuild's own statements
 * (`Analytics` called directly, in a worker) are not counted: a job has no client waiting,
 * and is bounded by its worker's slots.
 */
import {
  type Analytics,
  type AnalyticsRunner,
  isCancelled,
  type Queryable,
  type ReadSignal,
  type ReadStop,
  watchUntil,
} from '../db/index.ts';
import { unavailable } from './errors.ts';

export interface AnalyticsLimits {
  /** ANALYTICS_CONCURRENCY: analytics reads running at once. */
  concurrency: number;
  /** ANALYTICS_WAIT_MS: how long a read waits for a slot before its 503. */
  waitMs: number;
  /** ANALYTICS_TIMEOUT_MS: how long a request's read may run once it has its slot. */
  timeoutMs: number;
}

/** The slots as they stand, for the metrics (`analytics_reads`, `analytics_reads_refused_total`). */
export interface SlotCounts {
  running: number;
  waiting: number;
  /** Reads refused since start: their wait ran out. */
  refused: number;
}

/** The answer to a read whose client went away: nobody receives it, the log does. */
const gone = () => unavailable('The client closed the request; its analytics read was stopped');

export function limitAnalytics(
  analytics: AnalyticsRunner,
  limits: AnalyticsLimits,
): Analytics & { slots(): SlotCounts } {
  let running = 0;
  let refused = 0;
  /** Reads waiting for a slot, in arrival order; each is started by being called. */
  const line: (() => void)[] = [];

  const take = (signal: ReadSignal | undefined): Promise<void> => {
    if (signal?.aborted) return Promise.reject(gone());
    if (running < limits.concurrency) {
      running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      let unwatch = () => {};
      const start = () => {
        unwatch();
        resolve();
      };
      const leave = (err: Error) => {
        line.splice(line.indexOf(start), 1);
        reject(err);
      };
      line.push(start);
      // A waiting read whose client went away leaves the line within READ_WATCH_MS.
      unwatch = watchUntil(signal, Date.now() + limits.waitMs, (why) => {
        if (why === 'aborted') return leave(gone());
        refused++;
        leave(
          unavailable(
            `Every analytics slot is busy (${limits.concurrency} running, ANALYTICS_CONCURRENCY) and this read waited ${limits.waitMs} ms (ANALYTICS_WAIT_MS); retry shortly, or narrow the period`,
          ),
        );
      });
    });
  };
  const give = () => {
    const next = line.shift();
    // Handed over: the slot stays taken, by the next read.
    if (next) next();
    else running--;
  };

  /**
   * A read in a slot. With the request's `signal` the read is told to stop when the signal
   * aborts or ANALYTICS_TIMEOUT_MS has passed from the slot's start, and the database layer
   * cancels it then. No AbortController is made for that, nor a listener: one per read was
   * measured at about a tenth of the service's CPU on a read of a few milliseconds (its
   * EventTarget, listeners, and their garbage).
   */
  const inSlot = async <T>(run: (stop?: ReadStop) => Promise<T>, signal?: ReadSignal): Promise<T> => {
    await take(signal);
    try {
      return await run(signal && { signal, timeoutMs: limits.timeoutMs });
    } catch (err) {
      if (signal?.aborted) throw gone();
      if (signal && isCancelled(err)) {
        throw unavailable(
          `This analytics read ran longer than ANALYTICS_TIMEOUT_MS (${limits.timeoutMs} ms) and was stopped; narrow the period or the funnel, or raise the setting`,
        );
      }
      throw err;
    } finally {
      give();
    }
  };

  return Object.assign(<T>(fn: (q: Queryable) => Promise<T>) => analytics(fn), {
    read: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: ReadSignal) =>
      inSlot((stop) => analytics.read(collectionId, fn, stop), signal),
    quick: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: ReadSignal) =>
      inSlot((stop) => analytics.quick(collectionId, fn, stop), signal),
    slots: () => ({ running, waiting: line.length, refused }),
  });
}
