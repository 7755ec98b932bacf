/**
 * `link.clicked` events, published off the redirect's path. A click batch of a collection that
 * subscribes to them notes the batch's events in one row (`link_click_events`, in the batch's
 * transaction, so a batch that is not stored notes nothing) and NOTIFYs; the processes that run
 * jobs publish the noted rows to the webhooks outbox and remove them in one transaction
 * (platform/drain.ts: exactly once, any number of processes).
 *
 * Why: written in the batch itself, each click was an event, a delivery and a share of a job,
 * three INSERTs and their JSON in the process serving redirects: a subscriber cut that
 * process's redirect rate to 0.55 of what it was without one. Now the batch writes one row.
 * Trade-off: a click's event reaches the outbox one NOTIFY and one transaction later (a poll,
 * CLICK_EVENTS_POLL_MS, catches one noted while no worker listened); an API-only deployment
 * (no worker) publishes none until a worker runs.
 */
import type { Db } from '../../db/index.ts';
import { type DrainSource, NotifiedDrain } from '../../platform/drain.ts';
import type { EventPublisher, NewEvent } from '../../platform/events.ts';
import * as repo from './links.repository.ts';

/** Noted batches published per transaction. */
const BATCH = 10;

interface Log {
  warn(obj: object, msg?: string): void;
}

const clickEventSource = (events: EventPublisher): DrainSource => ({
  channel: repo.CLICK_EVENTS_CHANNEL,
  name: 'links: click events',
  batch: BATCH,
  pending: (db) => repo.collectionsWithClickEvents(db, 1000),
  drainOnce: (db, collectionId) =>
    db.transaction(async (tx) => {
      const batches = await repo.takeClickEvents(tx, collectionId, BATCH);
      if (batches.length === 0) return 0;
      await events.publish(tx, collectionId, batches.flat() as NewEvent[]);
      return batches.length;
    }),
});

/** Publishes the noted click events in each process that runs jobs (see the top). */
export class ClickEventPublisher extends NotifiedDrain {
  constructor(db: Db, events: EventPublisher, log: Log, pollMs: number) {
    super(db, clickEventSource(events), log, pollMs);
  }
}
