/**
 * Analytics milestones: `journey.step.completed` and `journey.completed`, as maintained
 * progress sees recipients move (docs/design/journeys.md "Milestones"; tables in migration 0207).
 *
 * Design: the progress triggers' function (journey_progress_refresh), which already locks and
 * recomputes each touched recipient, notes the steps the recipient completes beyond those its
 * row held, in `journey_milestones`, in the transaction of the interaction event: a rolled-back
 * event notes nothing. The row's key (recipient, step) is kept after publishing, so a step is
 * announced once per recipient ever: not again when a delete took it back and it is completed
 * again, nor when the journey's steps change and progress is rebuilt (the rebuild's bulk
 * statement notes nothing: it recomputes the past, it does not watch recipients move). The
 * function NOTIFYs `journey_milestones` (delivered at commit) with the collection; this
 * publisher, in each process that runs jobs, takes the collection's noted rows in order and, in
 * one transaction, writes their events to the webhooks outbox and marks them published, so each
 * is published exactly once whatever the number of processes (SKIP LOCKED) or crashes.
 *
 * Trade-offs:
 * - Latency: an event reaches the outbox one NOTIFY and one transaction after its interaction
 *   event commits (milliseconds); a NOTIFY missed (no worker listening at the time) waits for
 *   the poll (JOURNEY_MILESTONES_POLL_MS). Publishing in the interaction's own transaction would
 *   need the interactions module to read the rows back, and would put the webhooks outbox's
 *   statements on every event writer's path.
 * - Cost on the event path: one INSERT of the reached steps in the statement that recomputes the
 *   recipient, and a NOTIFY by the transactions that note any (a bulk import is one statement,
 *   one NOTIFY per collection). The milestone rows stay: one per recipient and step reached,
 *   removed with the journey.
 * - Only journeys with maintained progress (every step mapped) have milestones: a journey with a
 *   step without an interaction mapping has no progress to watch, and sends none.
 * - A step is reached "beyond the row": while a journey's progress is first built (a journey
 *   created over past events, or one whose steps just became mapped), a recipient whose new
 *   event arrives before the rebuild reached them has no row yet, and is announced for every
 *   step progress sees them complete, past ones included. After steps change, a recipient's
 *   older-version row counts its first steps as held, by position, until the rebuild writes it.
 */
import type { Db } from '../../db/index.ts';
import { type DrainLog, type DrainSource, NotifiedDrain } from '../../platform/drain.ts';
import { type EventPublisher, type MilestoneRow, milestoneEvent } from './journeys.events.ts';
import * as milestonesRepo from './journeys.milestones.repository.ts';

export const MILESTONES_CHANNEL = 'journey_milestones';
/** Milestones published per transaction: a burst (an import) goes out in bounded transactions. */
const BATCH = 500;

/** The noted milestones as a drain's work (platform/drain.ts): published, then marked, in one transaction. */
const milestoneSource = (events: EventPublisher): DrainSource<MilestoneRow> => ({
  channel: MILESTONES_CHANNEL,
  name: 'journeys: milestones',
  batch: BATCH,
  pending: (db) => milestonesRepo.collectionsWithPendingMilestones(db, 1000),
  take: milestonesRepo.takeMilestones,
  publish: async (tx, collectionId, rows) => {
    await events.publish(tx, collectionId, rows.map(milestoneEvent));
    await milestonesRepo.markMilestonesPublished(
      tx,
      collectionId,
      rows.map((r) => r.seq),
    );
  },
});

/** Publishes the noted milestones in each process that runs jobs (see the top). */
export class MilestonePublisher extends NotifiedDrain<MilestoneRow> {
  constructor(db: Db, events: EventPublisher, log: DrainLog, pollMs: number) {
    super(db, milestoneSource(events), log, pollMs);
  }
}
