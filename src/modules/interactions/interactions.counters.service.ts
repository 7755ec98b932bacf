/**
 * The counters the module keeps itself: each interaction's total, which milestones are judged
 * on, and the housekeeping of the striped counters the triggers keep (migrations 0201, 0203).
 */
import type { Db, Queryable } from '../../db/index.ts';
import type { Housekeeping } from '../../platform/module.ts';
import * as repo from './interactions.counters.repository.ts';
import type { InteractionsSettings } from './interactions.settings.ts';

/** Past hours only: the current one is where writers are spreading over slots right now. */
const COMPACT_AFTER_MS = 2 * 3600_000;
/** Counter rows per compaction statement: short row locks beside the writers. */
const COMPACT_BATCH = 5000;

export class InteractionCounters {
  constructor(
    private readonly db: Db,
    private readonly settings: InteractionsSettings,
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

  /**
   * Compaction every INTERACTIONS_COMPACT_EVERY_MS in one worker of the deployment (a system
   * schedule, see the manifest). Idempotent: a run cut off leaves the rest to the next.
   */
  housekeeping(): Housekeeping {
    return {
      name: 'interactions.compactCounters',
      everyMs: this.settings.compactEveryMs,
      description:
        'Folds the striped counters of hours more than two hours past into one row each (INTERACTIONS_COMPACT_EVERY_MS)',
      run: () => this.compact(),
    };
  }
}
