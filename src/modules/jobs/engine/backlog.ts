/**
 * The backlog: due jobs waiting, by lane and task, for the metrics' gauges (jobs.metrics.ts)
 * and the webhooks' lag. One bounded statement (job-admin.repository.ts, at most
 * BACKLOG_LIMIT jobs counted), whose answer serves every reader for BACKLOG_REUSE_MS: a scrape
 * that reads it for several gauges makes one query, and scrapes never queue reads of a table
 * under load. A failed read is not kept: the next reader asks again.
 */
import type { Db } from '../../../db/index.ts';
import type { TaskBacklog } from '../../../platform/tasks.ts';
import { backlog } from '../job-admin.repository.ts';

/** The most due jobs a backlog read counts. */
export const BACKLOG_LIMIT = 100_000;
const BACKLOG_REUSE_MS = 1000;

export class Backlog {
  private last: { at: number; read: Promise<readonly TaskBacklog[]> } | undefined;

  constructor(private readonly db: Db) {}

  read(): Promise<readonly TaskBacklog[]> {
    const now = Date.now();
    if (!this.last || now - this.last.at > BACKLOG_REUSE_MS) {
      const read = backlog(this.db, BACKLOG_LIMIT).then((rows) =>
        rows.map((r) => ({ lane: r.lane, task: r.task, due: r.due, oldestDueAt: r.oldest })),
      );
      read.catch(() => {
        if (this.last?.read === read) this.last = undefined;
      });
      this.last = { at: now, read };
    }
    return this.last.read;
  }
}
