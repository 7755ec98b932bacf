/**
 * Fair work between collections: which jobs a claim asks for (the guarantee is docs/jobs.md,
 * "Fair work between collections"; the pick is the function `jobs_pick_fair`, migration 0305).
 *
 * Design
 * - Lanes: a task names its lane (`default`, or `deliveries` for webhook deliveries); a
 *   process runs one engine per lane, each with its own slots (JOBS_CONCURRENCY,
 *   JOBS_DELIVERIES_CONCURRENCY), so no job of one lane ever waits for a slot of another.
 * - Turns: the pick walks the collections with pending jobs in the lane in descending byte
 *   order from `cursor` (the collection this engine served last), wrapping around once (to
 *   the largest: migration 0305 says why descending), and takes from
 *   each its most urgent due jobs. A collection that enqueues behind another's backlog is
 *   served in the next claim, not after the backlog. `priority` orders a collection's own
 *   jobs only; named-queue heads are taken by due time.
 * - Share: a collection holds at most `collectionConcurrency` of a lane's slots in one
 *   engine (JOBS_COLLECTION_CONCURRENCY, default all but a quarter), so with two slots or
 *   more, slow jobs of one collection always leave a slot to the others. Prefetched jobs
 *   count; a batch that prefetches may take `prefetch` more, which start only within the
 *   share (`drain`, slots.ts). Trade-off: a collection alone on a worker cannot use its last
 *   quarter of the slots; set the share to the concurrency where one tenant owns the deployment.
 * - Cost: a claim looks at up to MAX_VISITS collections (two index probes each); the walk
 *   stops once the claim is full or it is back at the cursor.
 * - Per process: shares and turns are kept by each engine; N worker processes give a
 *   collection up to N shares.
 * - States of the walk (migration 0305): from the cursor downward → wrapped to the largest
 *   collection → back at the cursor (done). The cursor moves to the last collection served
 *   (`advance`, given every claim's free jobs: a round's or a completion batch's).
 */
import type * as claims from '../claims.repository.ts';
import type * as repo from '../jobs.repository.ts';
import type { EngineCore } from './core.ts';

/**
 * The most collections one claim looks at: a collection with only future jobs, or at its
 * budget, costs two index probes and is passed over; the cursor moves on, so the next claim
 * looks further.
 */
const MAX_VISITS = 256;

export class Fairness {
  /** The collection served last: a claim's walk starts after it. */
  private cursor = '';

  constructor(private readonly core: EngineCore) {}

  /**
   * A claim of `limit` free jobs that takes turns between collections, each up to its share
   * of the slots less what this engine holds of it (claimed and not yet returned), plus
   * `prefetch` for a completion batch that prefetches.
   */
  fairClaim(limit: number, prefetch: number): claims.FairClaim {
    const held = this.core.perCollection((e) => e.state !== 'returned');
    return {
      lane: this.core.lane,
      tasks: this.core.taskNames(),
      limit,
      after: this.cursor,
      held: { collections: [...held.keys()], counts: [...held.values()] },
      budget: this.core.settings.collectionConcurrency + prefetch,
      maxVisits: MAX_VISITS,
    };
  }

  /**
   * The walk of the claim that brought `rows` went down from the cursor (in byte order, as the
   * index: COLLATE "C"), then wrapped around to the largest collection and down to the cursor:
   * the last collection it served is the next claim's start.
   */
  advance(rows: repo.ClaimedJob[]): void {
    if (rows.length === 0) return;
    let below: string | undefined;
    let wrapped: string | undefined;
    for (const { collection_id: c } of rows) {
      if (this.cursor === '' || byteOrder(c, this.cursor) >= 0) {
        if (wrapped === undefined || byteOrder(c, wrapped) < 0) wrapped = c;
      } else if (below === undefined || byteOrder(c, below) < 0) below = c;
    }
    this.cursor = (wrapped ?? below) as string;
  }
}

/** Compares strings by UTF-8 bytes, as PostgreSQL's "C" collation does (UTF-16 order differs past U+FFFF). */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
