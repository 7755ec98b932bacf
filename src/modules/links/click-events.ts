/**
 * `link.clicked` events, published off the redirect's path. A click batch of a collection that
 * subscribes to them notes the batch's clicks in one row (`link_click_events`, in the batch's
 * transaction, so a batch that is not stored notes nothing): a tuple per click, with what the
 * event says that the click row does not keep (the code and destination at the click). It
 * NOTIFYs; the processes that run jobs build the events from the noted rows, publish them to
 * the webhooks outbox and remove the rows in one transaction (platform/drain.ts: exactly once,
 * any number of processes).
 *
 * Why: written in the batch itself, each click was an event, a delivery and a share of a job,
 * three INSERTs and their JSON in the process serving redirects: a subscriber cut that
 * process's redirect rate to 0.55 of what it was without one. Noting whole events in one row
 * per batch gave 0.90; tuples in a `json` column (nothing for PostgreSQL to convert) are the
 * least the redirect's side can write.
 * Trade-off: a click's event reaches the outbox one NOTIFY and one transaction later (a poll,
 * CLICK_EVENTS_POLL_MS, catches one noted while no worker listened); an API-only deployment
 * (no worker) publishes none until a worker runs.
 */
import type { Db } from '../../db/index.ts';
import { type DrainLog, type DrainSource, NotifiedDrain } from '../../platform/drain.ts';
import type { EventPublisher, NewEvent } from '../../platform/events.ts';
import type { RawClick } from './clicks.ts';
import * as repo from './links.repository.ts';

/** A noted click: link id, code, destination, time, ip, user agent, referer, country, city, device. */
export type NotedClick = [string, string, string, string, string, string, string, string, string, string];

/** The tuple a batch notes for a stored click (`stored`: the row it wrote, geo and device resolved). */
export const notedClick = (raw: RawClick, stored: repo.NewClick): NotedClick => [
  raw.linkId,
  raw.code,
  raw.destinationUrl,
  raw.at.toISOString(),
  stored.ipAddress,
  stored.userAgent,
  stored.referer,
  stored.country,
  stored.city,
  stored.deviceType,
];

/** The event of a noted click (the catalogue's link.clicked, links.events.ts). */
const clickedEvent = (
  [linkId, code, destination, at, ip, userAgent, referer, country, city, device]: NotedClick,
  shortUrl: (code: string) => string,
): NewEvent => ({
  type: 'link.clicked',
  data: {
    link_id: linkId,
    short_url: shortUrl(code),
    destination_url: destination,
    clicked_at: at,
    click: {
      ip_address: ip,
      user_agent: userAgent,
      referer,
      country,
      city,
      device_type: device,
    },
  },
  scope: { linkId },
});

/** Noted batches published per transaction. */
const BATCH = 10;

/** The noted batches (each a list of clicks) as a drain's work: taken (removed), then published, in one transaction. */
const clickEventSource = (events: EventPublisher, shortUrl: (code: string) => string): DrainSource<unknown[]> => ({
  channel: repo.CLICK_EVENTS_CHANNEL,
  name: 'links: click events',
  batch: BATCH,
  pending: (db) => repo.collectionsWithClickEvents(db, 1000),
  take: repo.takeClickEvents,
  publish: (tx, collectionId, batches) =>
    events.publish(
      tx,
      collectionId,
      (batches.flat() as NotedClick[]).map((c) => clickedEvent(c, shortUrl)),
    ),
});

/** Publishes the noted click events in each process that runs jobs (see the top). */
export class ClickEventPublisher extends NotifiedDrain<unknown[]> {
  constructor(db: Db, events: EventPublisher, log: DrainLog, pollMs: number, shortUrl: (code: string) => string) {
    super(db, clickEventSource(events, shortUrl), log, pollMs);
  }
}
