/**
 * Slots for analytics reads. An analytics read holds a database connection for as long as it
 * runs (seconds for a funnel over millions of events), and every route shares the primary's
 * pool with it. Without a bound, a burst of such requests takes every connection, and a plain
 * read or write then waits for one until it gives up (503): slow questions stall fast ones.
 *
 * So analytics reads (`Analytics.read`: the interactions' counts and aggregates, the journeys'
 * funnels, reports, trends and people) run in at most ANALYTICS_CONCURRENCY at once, by
 * default half the pool, and the rest of the pool stays for everything else. A read finding
 * every slot taken waits in line, first come first served, for up to ANALYTICS_WAIT_MS; then
 * it is answered 503 with Retry-After, naming the setting. A slot is handed straight to the
 * next in line when a read ends.
 *
 * A read is bounded in time as well as in number: each of its statements may run
 * ANALYTICS_TIMEOUT_MS (statement_timeout, set by the runner), after which it is answered 503
 * naming that setting. And a read whose client has gone (the request's `signal`, from the
 * route) stops: waiting, it leaves the line; running, its statement is cancelled in the
 * database (db/client.ts), so a client that asks for a heavy funnel and hangs up does not keep
 * a slot and a connection busy for nobody.
 *
 * States of a read: running (holds a slot) → done; or waiting → running (a slot handed over)
 * or → refused (its wait ran out; it leaves the line) or → abandoned (its client went away; it
 * leaves the line). `slots()` tells the metrics how many
 * run and wait, and how many were refused. The progress rebuild's own statements
 * (`Analytics` called directly, in a worker) are not counted: a job has no client waiting,
 * and is bounded by its worker's slots.
 */
import { type Analytics, isStatementCancelled, type Queryable } from '../db/index.ts';
import { unavailable } from './errors.ts';

export interface AnalyticsLimits {
  /** ANALYTICS_CONCURRENCY: analytics reads running at once. */
  concurrency: number;
  /** ANALYTICS_WAIT_MS: how long a read waits for a slot before its 503. */
  waitMs: number;
  /** ANALYTICS_TIMEOUT_MS: the runner's statement_timeout, named in the 503 of a read that ran past it. */
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

  return Object.assign(<T>(fn: (q: Queryable) => Promise<T>) => analytics(fn), {
    async read<T>(collectionId: string, fn: (q: Queryable) => Promise<T>, signal?: AbortSignal): Promise<T> {
      await take(signal);
      try {
        return await analytics.read(collectionId, fn, signal);
      } catch (err) {
        if (signal?.aborted) throw gone();
        if (signal && isStatementCancelled(err)) {
          throw unavailable(
            `This analytics read ran longer than ANALYTICS_TIMEOUT_MS (${limits.timeoutMs} ms); narrow the period or the funnel, or raise the setting`,
          );
        }
        throw err;
      } finally {
        give();
      }
    },
    slots: () => ({ running, waiting: line.length, refused }),
  });
}
