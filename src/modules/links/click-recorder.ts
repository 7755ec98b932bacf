/**
 * The click recorder: buffers the clicks the redirect copies from its requests and stores
 * them in batches (CLICK_FLUSH_MS, or sooner when CLICK_BATCH_SIZE are waiting), each batch
 * one transaction with the links' counters and their `link.clicked` events. While the
 * database is unavailable the clicks stay buffered (up to CLICK_BUFFER_MAX, then new ones
 * are dropped) and are tried again after a delay growing from 1 s to 30 s. See clicks.ts for
 * what is captured and how it is enriched.
 */
import type { Db, Queryable } from '../../db/index.ts';
import type { NewEvent } from '../../platform/events.ts';
import { noteBatch, type ShortUrl } from './click-events.ts';
import { addToRollup } from './click-rollup.ts';
import { enrich, GeoIp, type RawClick } from './clicks.ts';
import { type EventPublisher, milestonesCrossed } from './links.events.ts';
import * as repo from './links.repository.ts';
import { VisitorHasher } from './visitors.ts';

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation). */
const refusesData = (err: unknown) => /^2[23]/.test(String((err as { code?: unknown })?.code ?? ''));

interface Log {
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** The links settings the recorder reads. */
export interface ClickSettings {
  clickFlushMs: number;
  clickBatchSize: number;
  clickBufferMax: number;
  /** GEOIP_DB: a MaxMind city database, opened on start. */
  geoipDb: string | undefined;
}

export class ClickRecorder {
  private geo: GeoIp | undefined;
  private buffer: RawClick[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** Set while the database is unavailable: the next attempt to store clicks, and its delay. */
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = 0;
  private stopping = false;
  private flushing: Promise<void> = Promise.resolve();
  private dropped = 0;
  /** The visitors' hashes under each day's salt (visitors.ts). */
  readonly visitors = new VisitorHasher();

  constructor(
    private readonly db: Db,
    private readonly settings: ClickSettings,
    private readonly log: Log,
    /** Where `link.clicked` events go: the webhooks module's outbox. */
    private readonly events: EventPublisher,
    /** The short address of a code on its domain, which the events carry. */
    private readonly shortUrl: ShortUrl,
  ) {}

  /** Opens the GeoIP database, if one is configured. */
  async start(): Promise<void> {
    if (this.settings.geoipDb) this.geo = await GeoIp.open(this.settings.geoipDb);
  }

  /** Stores what is buffered; what the database does not take then is reported lost. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of [this.timer, this.retryTimer]) if (t) clearTimeout(t);
    this.timer = this.retryTimer = undefined;
    await this.flush();
    if (this.buffer.length > 0) {
      this.log.error({ lost: this.buffer.length }, 'database unavailable at shutdown: buffered clicks lost');
    }
  }

  /** The country of an address by the GeoIP database (empty without one): the redirect's rules read it. */
  countryOf(ip: string): string {
    return this.geo ? this.geo.lookup(ip).country : '';
  }

  /** Clicks waiting to be stored, and those dropped since start because the buffer was full (the metrics). */
  get counts(): { buffered: number; dropped: number } {
    return { buffered: this.buffer.length, dropped: this.dropped };
  }

  /** Queues a click; never waits for the database. */
  record(click: RawClick): void {
    if (this.buffer.length >= this.settings.clickBufferMax) {
      // The database is not keeping up: shed load rather than grow without bound.
      this.dropped++;
      if (this.dropped % 1000 === 1) this.log.warn({ dropped: this.dropped }, 'click buffer full; clicks dropped');
      return;
    }
    this.buffer.push(click);
    if (this.retryTimer) return; // the database is unavailable: the retry stores this one too
    if (this.buffer.length >= this.settings.clickBatchSize) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.settings.clickFlushMs);
      this.timer.unref();
    }
  }

  /**
   * Writes every buffered click (one transaction per batch). Resolves when done, or when the
   * database turns out to be unavailable: the clicks then stay buffered (within
   * CLICK_BUFFER_MAX) and are tried again after a delay growing from 1 s to 30 s.
   */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      while (this.buffer.length > 0) {
        const batch = this.buffer.splice(0, this.settings.clickBatchSize);
        const later = await this.writeBatch(batch);
        if (later.length > 0) {
          this.buffer.unshift(...later);
          this.retryLater();
          return;
        }
      }
      if (this.retryDelayMs > 0) this.log.warn({}, 'click storage recovered');
      this.retryDelayMs = 0;
    });
    return this.flushing;
  }

  private retryLater(): void {
    if (this.stopping) return; // stop() reports what is left
    if (this.retryDelayMs === 0) {
      this.log.warn({ waiting: this.buffer.length }, 'database unavailable: clicks kept in memory, retrying');
    }
    this.retryDelayMs = Math.min(Math.max(this.retryDelayMs * 2, 1000), 30_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.flush();
    }, this.retryDelayMs);
    this.retryTimer.unref();
  }

  /** Whether someone subscribes to link.clicked in the collection (a publisher that cannot say: yes). */
  private subscribes(q: Queryable, collectionId: string): Promise<boolean> {
    return this.events.subscribes ? this.events.subscribes(q, collectionId, 'link.clicked') : Promise.resolve(true);
  }

  /** Stores a batch in one transaction; returns the clicks to try again later. */
  private async writeBatch(batch: RawClick[]): Promise<RawClick[]> {
    const clicks = batch.map((raw) => enrich(raw, this.geo));
    try {
      await this.visitors.fill(this.db, clicks);
      await this.db.transaction(async (tx) => {
        // A click of a link whose collection was removed meanwhile is not stored (nor announced).
        const { stored, counted } = await repo.insertClicks(tx, clicks);
        // The collection-wide analytics (click-rollup.ts), with the clicks or not at all.
        await addToRollup(
          tx,
          clicks.filter((_, i) => stored[i]),
        );
        // link.clicked: noted in one row per collection that subscribes to it, published by a
        // worker (click-events.ts); nothing at all for a collection that does not.
        const listening = new Set<string>();
        for (const collectionId of new Set(batch.filter((_, i) => stored[i]).map((raw) => raw.collectionId))) {
          if (await this.subscribes(tx, collectionId)) listening.add(collectionId);
        }
        const clicked = new Map<string, { raw: RawClick; stored: repo.NewClick }[]>();
        batch.forEach((raw, i) => {
          if (!stored[i] || !listening.has(raw.collectionId)) return;
          const list = clicked.get(raw.collectionId) ?? [];
          list.push({ raw, stored: clicks[i] });
          clicked.set(raw.collectionId, list);
        });
        for (const [collectionId, list] of clicked) await repo.noteClickEvents(tx, collectionId, noteBatch(list));
        // Thresholds crossed by this batch: each is crossed by exactly one batch (row locks);
        // rare, so published here, in the batch's transaction.
        const codes = new Map(batch.map((raw) => [raw.linkId, raw]));
        const at = new Date().toISOString();
        const reached = new Map<string, NewEvent[]>();
        for (const link of counted) {
          for (const milestone of milestonesCrossed(link.clicks - link.n, link.clicks, link.click_milestones)) {
            const events = reached.get(link.collection_id) ?? [];
            events.push({
              type: 'link.clicks.milestone',
              data: {
                link_id: link.id,
                short_url: this.shortUrl(codes.get(link.id)?.code ?? '', codes.get(link.id)?.domain ?? null),
                milestone,
                clicks: link.clicks,
                reached_at: at,
              },
              scope: { linkId: link.id },
            });
            reached.set(link.collection_id, events);
          }
        }
        for (const [collectionId, events] of reached) await this.events.publish(tx, collectionId, events);
      });
      return [];
    } catch (err) {
      // Not a refusal of the data (connection lost, database restarting, table locked away,
      // …): keep the whole batch for later rather than lose it.
      if (!refusesData(err)) {
        this.log.warn({ err }, 'could not store clicks; will retry');
        return batch;
      }
      // One click the database refuses must not sink the others: store them one by one, and
      // drop only the ones refused.
      if (batch.length === 1) {
        this.log.error({ err, linkId: batch[0].linkId }, 'a click was refused by the database and dropped');
        return [];
      }
      for (let i = 0; i < batch.length; i++) {
        const later = await this.writeBatch([batch[i]]);
        if (later.length > 0) return [...later, ...batch.slice(i + 1)];
      }
      return [];
    }
  }
}
