/**
 * Slots for analytics reads. An analytics read holds a database connection for as long as it
 * runs (seconds for a funnel over millions of events), and every route shares the primary's
 * pool with it. Without a bound, a burst of such requests takes every connection, and a plain
 * read or write then waits for one until it gives up (503): slow questions stall fast ones.
 *
 * So analytics reads (`Analytics.read`: the interactions' counts and aggregates, the journeys'
 * funnels, reports, trends and people, the links' click analytics) run in at most ANALYTICS_CONCURRENCY at once, by
 * default half the pool, and the rest of the pool stays for everything else. A read finding
 * every slot taken waits in line, first come first served, for up to ANALYTICS_WAIT_MS; then
 * it is answered 503 with Retry-After, naming the setting. A slot is handed straight to the
 * next in line when a read ends.
 *
 * A read made for a request (it carries the request's `signal`, from the route) is bounded in
 * time as well as in number: once it has its slot it may run ANALYTICS_TIMEOUT_MS, after which
 * it is cancelled in the database and answered 503 naming that setting. And a read whose client
 * has gone stops: waiting, it leaves the line; running, it is cancelled in the database
 * (db/client.ts), so a client that asks for a heavy funnel and hangs up does not keep a slot
 * and a connection busy for nobody. The bound is kept here, by a timer, rather than by
 * PostgreSQL's statement_timeout: it bounds the whole read, not each of its statements, and
 * costs no SET on every read. A job's reads (the people export) carry no signal: no client
 * waits for them, and they may take longer than an answer should.
 *
 * States of a read: running (holds a slot) → done; or waiting → running (a slot handed over)
 * or → refused (its wait ran out; it leaves the line) or → abandoned (its client went away; it
 * leaves the line). `slots()` tells the metrics how many
 * run and wait, and how many were refused. The progress rebuild's own statements
 * (`Analytics` called directly, in a worker) are not counted: a job has no client waiting,
 * and is bounded by its worker's slots.
 */
import type { Analytics, Queryable } from '../db/index.ts';
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

export function limitAnalytics(analytics: Analytics, limits: AnalyticsLimits): Analytics & { slots(): SlotCounts } {
  let running = 0;
  let refused = 0;
  /** Reads waiting for a slot, in arrival order; each is started by being called. */
  const line: (() => void)[] = [];

  const take = (signal: AbortSignal | undefined): Promise<void> => {
    if (signal?.aborted) return Promise.reject(gone());
    if (running < limits.concurrency) {
      running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const leave = (err: Error) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', abandon);
        line.splice(line.indexOf(start), 1);
        reject(err);
      };
      const start = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', abandon);
        resolve();
      };
      const abandon = () => leave(gone());
      const timer = setTimeout(() => {
        refused++;
        leave(
          unavailable(
            `Every analytics slot is busy (${limits.concurrency} running, ANALYTICS_CONCURRENCY) and this read waited ${limits.waitMs} ms (ANALYTICS_WAIT_MS); retry shortly, or narrow the period`,
          ),
        );
      }, limits.waitMs);
      signal?.addEventListener('abort', abandon, { once: true });
      line.push(start);
    });
  };
  const give = () => {
    const next = line.shift();
    // Handed over: the slot stays taken, by the next read.
    if (next) next();
    else running--;
  };

  /**
   * A read in a slot. With the request's `signal` its time runs from the slot's start: the
   * read is given a signal that aborts when the request's does or when ANALYTICS_TIMEOUT_MS
   * has passed, and the database layer cancels the read when it does.
   */
  const inSlot = async <T>(run: (signal?: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> => {
    await take(signal);
    if (!signal) {
      try {
        return await run();
      } finally {
        give();
      }
    }
    // A timer and a listener, not AbortSignal.any and AbortSignal.timeout: on Node 20 those
    // keep weak references per signal, a cost on every read of a few milliseconds.
    const bounded = new AbortController();
    const stop = () => bounded.abort();
    signal.addEventListener('abort', stop, { once: true });
    const timer = setTimeout(stop, limits.timeoutMs);
    try {
      return await run(bounded.signal);
    } catch (err) {
      if (signal.aborted) throw gone();
      if (bounded.signal.aborted) {
        throw unavailable(
          `This analytics read ran longer than ANALYTICS_TIMEOUT_MS (${limits.timeoutMs} ms) and was stopped; narrow the period or the funnel, or raise the setting`,
        );
      }
      throw err;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      give();
    }
  };

  return Object.assign(<T>(fn: (q: Queryable) => Promise<T>) => analytics(fn), {
    read: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal) =>
      inSlot((bounded) => analytics.read(collectionId, fn, bounded), signal),
    quick: <T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal) =>
      inSlot((bounded) => analytics.quick(collectionId, fn, bounded), signal),
    slots: () => ({ running, waiting: line.length, refused }),
  });
}
