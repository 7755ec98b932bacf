/**
 * `link.clicked` events, published off the redirect's path. A click batch of a collection that
 * subscribes to them notes the batch in one row (`link_click_events`, in the batch's
 * transaction, so a batch that is not stored notes nothing): the links with what the event says
 * that the click row does not keep (the code and destination at the click), and the span of the
 * clicks' times, a `SpanNote`. It NOTIFYs; the processes that run jobs read the clicks back
 * (those of the noted links, in the span, written by the note's own transaction), build the
 * events, publish them to the webhooks outbox and remove the notes, in one transaction
 * (platform/drain.ts: exactly once, any number of processes).
 *
 * Why: written in the batch itself, each click was an event, a delivery and a share of a job,
 * three INSERTs and their JSON in the process serving redirects: a subscriber cut that
 * process's redirect rate to 0.55 of what it was without one. What a subscriber costs is the
 * volume noted, written by PostgreSQL on the cores the service shares with it, and built by the
 * redirect's process (2026-11-27, interleaved rounds on fresh processes): whole events in one
 * row per batch 0.90, a tuple per click 0.85–0.90, the click ids 0.83 (RETURNING, or grouped in
 * the statement), a `text` column 0.89, uncompressed storage 0.85, each link and user agent once
 * (`CompactNote`) 0.91. A span notes no click at all; the reading back is the worker's.
 * Trade-offs: a click's event reaches the outbox one NOTIFY and one transaction later (a poll,
 * CLICK_EVENTS_POLL_MS, catches one noted while no worker listened); an API-only deployment
 * (no worker) publishes none until a worker runs; a click removed before its note is published
 * (its collection removed) is not announced.
 * Why the transaction id is safe here: click rows are never updated (an update would give the
 * row another `xmin`), the batch writes its clicks and its note at one level (no savepoint), and
 * PostgreSQL keeps a row's `xmin` readable when it freezes the row (9.4 and later).
 */
import type { Db, Queryable } from '../../db/index.ts';
import { type DrainLog, type DrainSource, NotifiedDrain } from '../../platform/drain.ts';
import type { EventPublisher, NewEvent } from '../../platform/events.ts';
import type { RawClick } from './clicks.ts';
import * as repo from './links.repository.ts';

/**
 * A click as its event tells it: link id, code, destination, time, ip, user agent, referer,
 * country, city, device; then (issue 28) the trigger, the click id and the link's domain, absent
 * from notes written before them.
 */
type NotedClick = [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string?,
  (string | null)?,
  (string | null)?,
];

/** [link id, code, destination, custom domain (issue 28; absent: the deployment's own)] */
type NotedLink = [string, string, string, (string | null)?];

/**
 * A batch's clicks as noted (format 3): the links (with the code and destination their clicks
 * went to) and the span of the clicks' times. The clicks themselves are read back from
 * `link_clicks` by the publisher (`clicksWrittenBy`: the links, the span, and the transaction
 * that wrote both the clicks and this note). The redirect's side writes a few bytes a batch,
 * whatever its size.
 */
export interface SpanNote {
  v: 3;
  /** [link id, code, destination, domain]: each link once. */
  links: NotedLink[];
  /** The first and the last click's time (ms since the epoch). */
  from: number;
  to: number;
}

/**
 * Format 2, written on 2026-11-27, and still what a batch notes when a link changed while its
 * clicks waited (two destinations for one link: the stored click does not say which it went
 * to): each link and each user agent once, a click as offsets into them. Format 1, before, was
 * a list of `NotedClick`s.
 */
export interface CompactNote {
  v: 2;
  /** [link id, code, destination, domain]; a link changed while its clicks waited appears twice. */
  links: NotedLink[];
  /** [user agent, device type] of each distinct user agent. */
  agents: [string, string][];
  /** The first click's time (ms since the epoch). */
  t0: number;
  /** [link index, ms after t0, ip, agent index, referer, country, city, trigger, click id] */
  clicks: [number, number, string, number, string, string, string, string?, (string | null)?][];
}

export type NotedBatch = SpanNote | CompactNote;

/** A click's link as noted: the domain only when it is a custom one (the own domain notes as before). */
const notedLink = (raw: RawClick): NotedLink =>
  raw.domain ? [raw.linkId, raw.code, raw.destinationUrl, raw.domain] : [raw.linkId, raw.code, raw.destinationUrl];

/** Notes stored clicks (`stored`: the rows written, geo and device resolved) for their events. */
export function noteBatch(clicks: { raw: RawClick; stored: repo.NewClick }[]): NotedBatch {
  const links = new Map<string, NotedLink>();
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (const { raw } of clicks) {
    const seen = links.get(raw.linkId);
    const domain = raw.domain ?? null;
    if (seen && (seen[1] !== raw.code || seen[2] !== raw.destinationUrl || (seen[3] ?? null) !== domain)) {
      return compactNote(clicks);
    }
    if (!seen) links.set(raw.linkId, notedLink(raw));
    const at = raw.at.getTime();
    if (at < from) from = at;
    if (at > to) to = at;
  }
  return { v: 3, links: [...links.values()], from, to };
}

function compactNote(clicks: { raw: RawClick; stored: repo.NewClick }[]): CompactNote {
  const links = new Map<string, number>();
  const agents = new Map<string, number>();
  const batch: CompactNote = { v: 2, links: [], agents: [], t0: clicks[0]?.raw.at.getTime() ?? 0, clicks: [] };
  for (const { raw, stored } of clicks) {
    const linkKey = `${raw.linkId}\u0000${raw.code}\u0000${raw.destinationUrl}\u0000${raw.domain ?? ''}`;
    let link = links.get(linkKey);
    if (link === undefined) {
      link = batch.links.push(notedLink(raw)) - 1;
      links.set(linkKey, link);
    }
    let agent = agents.get(stored.userAgent);
    if (agent === undefined) {
      agent = batch.agents.push([stored.userAgent, stored.deviceType]) - 1;
      agents.set(stored.userAgent, agent);
    }
    const { ipAddress, referer, country, city, trigger, clickId } = stored;
    batch.clicks.push([
      link,
      raw.at.getTime() - batch.t0,
      ipAddress,
      agent,
      referer,
      country,
      city,
      trigger,
      clickId ?? null,
    ]);
  }
  return batch;
}

/** The clicks of a noted batch, of any format (a span's read back from the clicks it spans). */
async function clicksOf(tx: Queryable, collectionId: string, { clicks: noted, xmin }: repo.TakenClickEvents) {
  if (Array.isArray(noted)) return noted as NotedClick[];
  const b = noted as NotedBatch;
  if (b.v === 3) {
    const links = new Map(b.links.map((l) => [l[0], l]));
    const written = await repo.clicksWrittenBy(tx, collectionId, {
      linkIds: [...links.keys()],
      from: new Date(b.from),
      to: new Date(b.to),
      xmin,
    });
    return written.map((c): NotedClick => {
      const [linkId, code, destination, domain] = links.get(c.link_id) ?? [c.link_id, '', ''];
      const at = c.clicked_at.toISOString();
      const { ip_address: ip, user_agent: agent, referer, country, city, device_type: device } = c;
      return [linkId, code, destination, at, ip, agent, referer, country, city, device, c.trigger, c.click_id, domain];
    });
  }
  return b.clicks.map(([link, dt, ip, agent, referer, country, city, trigger, clickId]): NotedClick => {
    const [linkId, code, destination, domain] = b.links[link];
    const [userAgent, device] = b.agents[agent];
    const at = new Date(b.t0 + dt).toISOString();
    return [linkId, code, destination, at, ip, userAgent, referer, country, city, device, trigger, clickId, domain];
  });
}

/** The event of a noted click (the catalogue's link.clicked, links.events.ts). */
const clickedEvent = (
  [linkId, code, destination, at, ip, userAgent, referer, country, city, device, trigger, clickId, domain]: NotedClick,
  shortUrl: ShortUrl,
): NewEvent => ({
  type: 'link.clicked',
  data: {
    link_id: linkId,
    short_url: shortUrl(code, domain ?? null),
    destination_url: destination,
    clicked_at: at,
    click: {
      ip_address: ip,
      user_agent: userAgent,
      referer,
      country,
      city,
      device_type: device,
      trigger: trigger ?? 'link',
      click_id: clickId ?? null,
    },
  },
  scope: { linkId },
});

/** A code's short address on its domain (null: the deployment's own). */
export type ShortUrl = (code: string, domain: string | null) => string;

/** Noted batches published per transaction. */
const BATCH = 10;

/** The noted batches as a drain's work: taken (removed), then published, in one transaction. */
const clickEventSource = (events: EventPublisher, shortUrl: ShortUrl): DrainSource<repo.TakenClickEvents> => ({
  channel: repo.CLICK_EVENTS_CHANNEL,
  name: 'links: click events',
  batch: BATCH,
  pending: (db) => repo.collectionsWithClickEvents(db, 1000),
  take: repo.takeClickEvents,
  publish: async (tx, collectionId, batches) => {
    const clicks: NotedClick[] = [];
    for (const batch of batches) clicks.push(...(await clicksOf(tx, collectionId, batch)));
    return events.publish(
      tx,
      collectionId,
      clicks.map((c) => clickedEvent(c, shortUrl)),
    );
  },
});

/** Publishes the noted click events in each process that runs jobs (see the top). */
export class ClickEventPublisher extends NotifiedDrain<repo.TakenClickEvents> {
  constructor(db: Db, events: EventPublisher, log: DrainLog, pollMs: number, shortUrl: ShortUrl) {
    super(db, clickEventSource(events, shortUrl), log, pollMs);
  }
}
