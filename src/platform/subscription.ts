/**
 * A LISTEN held while a service runs: `start` subscribes, `stop` unsubscribes. `onReconnect`
 * runs when a lost LISTEN connection is back: what was announced while it was down reached no
 * one, so a cache drops what it holds and a drain looks for work at once. Used by the
 * credential cache (collections), the redirect cache (links) and the notified drains (drain.ts).
 */
import type { Db } from '../db/index.ts';

export class Subscription {
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Db,
    private readonly channel: string,
    private readonly onPayload: (payload: string) => void,
    private readonly onReconnect: () => void,
  ) {}

  async start(): Promise<void> {
    this.unlisten = await this.db.listen(this.channel, this.onPayload, this.onReconnect);
  }

  /** Never throws: a connection already gone has nothing left to end. */
  async stop(): Promise<void> {
    await this.unlisten?.().catch(() => {});
    this.unlisten = undefined;
  }
}
