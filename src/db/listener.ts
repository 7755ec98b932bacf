/**
 * The one dedicated connection a PostgreSQL `Db` holds for LISTEN, re-established after it is
 * lost (states in postgres.ts, `openPostgres`). It connects to whatever `address()` names when it
 * (re)connects: the primary the pool found (primary.ts), so that after a failover it listens
 * on the promoted standby (a standby refuses LISTEN).
 */
import pg from 'pg';
import type { DbLogger, DbStatus } from './client.ts';

export function describe(err: unknown): { message: string; code?: string } {
  const e = err as { message?: string; code?: string };
  return { message: String(e?.message ?? err), code: e?.code };
}

interface Subscription {
  onPayload: (payload: string) => void;
  onReconnect?: () => void;
}

export class Listener {
  state: DbStatus['listener'] = 'idle';
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private readonly channels = new Map<string, Set<Subscription>>();
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = 0;
  private closed = false;
  /** Why the last connection ended, handed to `address` (the pool may have to look for a new primary). */
  private lastError: Error | undefined;

  constructor(
    private readonly address: (lastError: Error | undefined) => Promise<string>,
    private readonly log: DbLogger,
    private readonly retryMaxMs = 5000,
  ) {}

  async subscribe(
    channel: string,
    onPayload: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>> {
    const sub: Subscription = { onPayload, onReconnect };
    let set = this.channels.get(channel);
    const isNew = !set;
    if (!set) {
      set = new Set();
      this.channels.set(channel, set);
    }
    set.add(sub);
    if (!this.client) await this.connect();
    else if (isNew) {
      // If the connection dies now, the reconnect LISTENs every channel of the map anyway.
      await this.client.query(`LISTEN ${quoteIdent(channel)}`).catch(() => {});
    }
    return async () => {
      set.delete(sub);
    };
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    let connectionString: string;
    try {
      connectionString = await this.address(this.lastError);
    } catch (err) {
      // No primary now (a failover under way): the same as a lost connection, retried.
      if (this.closed) return;
      if (this.state !== 'lost')
        this.log.warn({ err: describe(err) }, 'database: LISTEN connection lost; reconnecting');
      this.state = 'lost';
      this.scheduleRetry();
      return;
    }
    const client = new pg.Client({ connectionString, keepAlive: true });
    let failed = false;
    const onLost = (err?: Error) => {
      if (failed) return;
      failed = true;
      this.lastError = err ?? new Error('Connection terminated');
      if (this.client === client) this.client = undefined;
      client.end().catch(() => {});
      if (this.closed) return;
      if (this.state !== 'lost') {
        this.log.warn({ err: err && describe(err) }, 'database: LISTEN connection lost; reconnecting');
      }
      this.state = 'lost';
      this.scheduleRetry();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (msg) => {
      for (const sub of this.channels.get(msg.channel) ?? []) sub.onPayload(msg.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      // Never thrown to the subscriber: it is registered, and hears `onReconnect` once the
      // connection is up. A worker started during an outage runs on its poll until then.
      onLost(err as Error);
      return;
    }
    if (failed || this.closed) {
      await client.end().catch(() => {});
      return;
    }
    const wasLost = this.state === 'lost';
    this.client = client;
    this.state = 'connected';
    this.retryDelay = 0;
    this.lastError = undefined;
    if (wasLost) {
      this.log.info({ channels: [...this.channels.keys()] }, 'database: LISTEN connection re-established');
      // Notifications sent while we were away are lost: let each subscriber catch up.
      for (const set of this.channels.values()) {
        for (const sub of set) {
          try {
            sub.onReconnect?.();
          } catch {}
        }
      }
    }
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.closed) return;
    const max = this.retryMaxMs;
    this.retryDelay = Math.min(max, this.retryDelay ? this.retryDelay * 2 : 100);
    const delay = this.retryDelay / 2 + Math.random() * (this.retryDelay / 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect().catch(() => {});
    }, delay);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.connecting?.catch(() => {});
    await this.client?.end().catch(() => {});
    this.client = undefined;
  }
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
