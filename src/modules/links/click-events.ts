/**
 * `link.clicked` events, published off the redirect's path. A click batch of a collection that
 * subscribes to them notes the batch's clicks in one row (`link_click_events`, in the batch's
 * transaction, so a batch that is not stored notes nothing), with what the event says that the
 * click row does not keep (the code and destination at the click): a `NotedBatch`. It NOTIFYs;
 * the processes that run jobs build the events from the noted rows, publish them to the
 * webhooks outbox and remove the rows in one transaction (platform/drain.ts: exactly once, any
 * number of processes).
 *
 * Why: written in the batch itself, each click was an event, a delivery and a share of a job,
 * three INSERTs and their JSON in the process serving redirects: a subscriber cut that
 * process's redirect rate to 0.55 of what it was without one. Whole events noted in one row
 * per batch gave 0.90, a tuple per click 0.85–0.90 (2026-11-27, four interleaved rounds on fresh
 * processes). What a subscriber costs is the volume noted: PostgreSQL's CPU for writing it, on
 * the cores the service shares with it (1.6 µs a click for tuples), and the JSON built by the
 * redirect's process. Measured and dropped: the click ids instead of the clicks (the ids answered
 * by RETURNING, or grouped in the statement, cost PostgreSQL more than the tuples: 0.83), a
 * `text` column (0.89), uncompressed storage (0.85). The compact batch (each link and user agent
 * once) costs it 1.2 µs a click: 0.91.
 * Trade-off: a click's event reaches the outbox one NOTIFY and one transaction later (a poll,
 * CLICK_EVENTS_POLL_MS, catches one noted while no worker listened); an API-only deployment
 * (no worker) publishes none until a worker runs.
 */
import type { Db } from '../../db/index.ts';
import { type DrainLog, type DrainSource, NotifiedDrain } from '../../platform/drain.ts';
import type { EventPublisher, NewEvent } from '../../platform/events.ts';
import type { RawClick } from './clicks.ts';
import * as repo from './links.repository.ts';

/** A click as its event tells it: link id, code, destination, time, ip, user agent, referer, country, city, device. */
type NotedClick = [string, string, string, string, string, string, string, string, string, string];

/**
 * A batch's clicks as noted (format 2): each link (with the code and destination its clicks went
 * to) and each user agent once, a click as offsets into them. Format 1, written before
 * 2026-11-27, was a list of `NotedClick`s: it repeated the link, its destination and the user
 * agent in every click, and that volume, built by the process serving redirects and written by
 * PostgreSQL, was most of what a subscriber cost the redirect.
 */
export interface NotedBatch {
  v: 2;
  /** [link id, code, destination]; a link changed while its clicks waited appears twice. */
  links: [string, string, string][];
  /** [user agent, device type] of each distinct user agent. */
  agents: [string, string][];
  /** The first click's time (ms since the epoch). */
  t0: number;
  /** [link index, ms after t0, ip, agent index, referer, country, city] */
  clicks: [number, number, string, number, string, string, string][];
}

/** Notes stored clicks (`stored`: the rows written, geo and device resolved) for their events. */
export function noteBatch(clicks: { raw: RawClick; stored: repo.NewClick }[]): NotedBatch {
  const links = new Map<string, number>();
  const agents = new Map<string, number>();
  const batch: NotedBatch = { v: 2, links: [], agents: [], t0: clicks[0]?.raw.at.getTime() ?? 0, clicks: [] };
  for (const { raw, stored } of clicks) {
    const linkKey = `${raw.linkId}\u0000${raw.code}\u0000${raw.destinationUrl}`;
    let link = links.get(linkKey);
    if (link === undefined) {
      link = batch.links.push([raw.linkId, raw.code, raw.destinationUrl]) - 1;
      links.set(linkKey, link);
    }
    let agent = agents.get(stored.userAgent);
    if (agent === undefined) {
      agent = batch.agents.push([stored.userAgent, stored.deviceType]) - 1;
      agents.set(stored.userAgent, agent);
    }
    const { ipAddress, referer, country, city } = stored;
    batch.clicks.push([link, raw.at.getTime() - batch.t0, ipAddress, agent, referer, country, city]);
  }
  return batch;
}

/** The clicks of a noted batch, of either format. */
function clicksOf(noted: unknown): NotedClick[] {
  if (Array.isArray(noted)) return noted as NotedClick[];
  const b = noted as NotedBatch;
  return b.clicks.map(([link, dt, ip, agent, referer, country, city]) => {
    const [linkId, code, destination] = b.links[link];
    const [userAgent, device] = b.agents[agent];
    const at = new Date(b.t0 + dt).toISOString();
    return [linkId, code, destination, at, ip, userAgent, referer, country, city, device];
  });
}

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

/** The noted batches as a drain's work: taken (removed), then published, in one transaction. */
const clickEventSource = (events: EventPublisher, shortUrl: (code: string) => string): DrainSource<unknown> => ({
  channel: repo.CLICK_EVENTS_CHANNEL,
  name: 'links: click events',
  batch: BATCH,
  pending: (db) => repo.collectionsWithClickEvents(db, 1000),
  take: repo.takeClickEvents,
  publish: (tx, collectionId, batches) =>
    events.publish(
      tx,
      collectionId,
      batches.flatMap(clicksOf).map((c) => clickedEvent(c, shortUrl)),
    ),
});

/** Publishes the noted click events in each process that runs jobs (see the top). */
export class ClickEventPublisher extends NotifiedDrain<unknown> {
  constructor(db: Db, events: EventPublisher, log: DrainLog, pollMs: number, shortUrl: (code: string) => string) {
    super(db, clickEventSource(events, shortUrl), log, pollMs);
  }
}
