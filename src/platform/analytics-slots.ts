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
 * States of a read: running (holds a slot) → done; or waiting → running (a slot handed over)
 * or → refused (its wait ran out; it leaves the line). `slots()` tells the metrics how many
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
}

/** The slots as they stand, for the metrics (`analytics_reads`, `analytics_reads_refused_total`). */
export interface SlotCounts {
  running: number;
  waiting: number;
  /** Reads refused since start: their wait ran out. */
  refused: number;
}

export function limitAnalytics(analytics: Analytics, limits: AnalyticsLimits): Analytics & { slots(): SlotCounts } {
  let running = 0;
  let refused = 0;
  /** Reads waiting for a slot, in arrival order; each is started by being called. */
  const line: (() => void)[] = [];

  const take = (): Promise<void> => {
    if (running < limits.concurrency) {
      running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const start = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        line.splice(line.indexOf(start), 1);
        refused++;
        reject(
          unavailable(
            `Every analytics slot is busy (${limits.concurrency} running, ANALYTICS_CONCURRENCY) and this read waited ${limits.waitMs} ms (ANALYTICS_WAIT_MS); retry shortly, or narrow the period`,
          ),
        );
      }, limits.waitMs);
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
    async read<T>(collectionId: string, fn: (q: Queryable) => Promise<T>): Promise<T> {
      await take();
      try {
        return await analytics.read(collectionId, fn);
      } finally {
        give();
      }
    },
    slots: () => ({ running, waiting: line.length, refused }),
  });
}
