/**
 * The counters the module keeps itself: each interaction's total, which milestones are judged
 * on, and the housekeeping of the striped counters the triggers keep (migrations 0201, 0203).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db, Queryable } from '../../db/index.ts';
import * as repo from './interactions.counters.repository.ts';
import type { InteractionsSettings } from './interactions.settings.ts';

/** Past hours only: the current one is where writers are spreading over slots right now. */
const COMPACT_AFTER_MS = 2 * 3600_000;
/** Counter rows per compaction statement: short row locks beside the writers. */
const COMPACT_BATCH = 5000;

export class InteractionCounters {
  private compactTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly settings: InteractionsSettings,
    private readonly log?: Pick<FastifyBaseLogger, 'warn'>,
  ) {}

  /**
   * Adds `k` events to an interaction's total in `q` and answers the total after; the row stays
   * locked until `q`'s transaction ends (see repo.addToTotal), so call it last.
   */
  add(q: Queryable, collectionId: string, interactionId: string, k: number): Promise<number> {
    return repo.addToTotal(q, collectionId, interactionId, k);
  }

  /**
   * Folds the striped counters of hours more than two hours past into one row each (see
   * repo.compactCounters); returns the counter rows removed.
   */
  compact(now = Date.now()): Promise<number> {
    return repo.compactCounters(this.db, new Date(now - COMPACT_AFTER_MS), COMPACT_BATCH);
  }

  /** In worker processes (see the manifest): compaction every INTERACTIONS_COMPACT_EVERY_MS. */
  startHousekeeping(): void {
    if (this.compactTimer) return;
    let running = false;
    this.compactTimer = setInterval(() => {
      // One run at a time in a process: a slow one is not joined by the next.
      if (running) return;
      running = true;
      void this.compact()
        .catch((err: unknown) =>
          this.log?.warn({ err }, 'interactions: compacting the counters failed (tried again next time)'),
        )
        .finally(() => {
          running = false;
        });
    }, this.settings.compactEveryMs);
    this.compactTimer.unref();
  }

  stopHousekeeping(): void {
    clearInterval(this.compactTimer);
    this.compactTimer = undefined;
  }
}
