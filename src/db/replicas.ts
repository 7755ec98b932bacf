/**
 * Read replicas (DATABASE_READ_URL): streaming standbys that serve reads which may be a moment
 * old, so that analytics, lists and redirect lookups do not load the primary.
 *
 * Replica states, decided by a check every `checkMs` (and logged once per change, not per query)
 * - `ok`: reachable, in recovery (a standby), and behind the primary by at most `maxLagMs`.
 * - `lagging`: reachable but further behind: skipped until it catches up.
 * - `down`: unreachable, a read on it failed for a lost connection, or it is no standby any more
 *   (promoted: it may hold writes the primary never had). Skipped until a check finds it well.
 * A replica starts `down` (no log) until its first check.
 *
 * Lag: a replica that has replayed the primary's current WAL position is 0 s behind; otherwise
 * the age of the last transaction it replayed (`now() - pg_last_xact_replay_timestamp()`), which
 * alone would grow while an idle primary writes nothing.
 *
 * Read-your-writes, per scope (a collection id, or a name such as `links.redirect`): `wrote(scope)`
 * stamps the time this process wrote to it. Each check reads the primary's WAL position first
 * (`pg_current_wal_lsn()`), so a write committed before the check started is at or before that
 * position; a replica that has replayed it is `caughtUpAt` that check's start. A read of a scope
 * goes to a replica only if the replica caught up after the scope's last write: it then holds
 * that write. Otherwise it goes to the primary. This costs no query per read or write; a scope
 * written continuously stays on the primary, other scopes still use the replicas.
 */
import pg from 'pg';
import type { DbLogger } from './client.ts';
import { replicaName } from './hosts.ts';

export interface ReplicaStatus {
  name: string;
  /** Seconds behind the primary at the last check; null when down or never measured. */
  lagSeconds: number | null;
  state: 'ok' | 'lagging' | 'down';
}

export interface ReplicaOptions {
  urls: string[];
  /** DATABASE_READ_MAX_LAG_MS: a replica further behind is skipped. */
  maxLagMs: number;
  /** DATABASE_READ_CHECK_MS: how often each replica's state and lag are measured. */
  checkMs: number;
  poolSize: number;
  connectTimeoutMs: number;
  searchPath?: string;
  log: DbLogger;
}

export interface Replica {
  readonly name: string;
  readonly pool: pg.Pool;
  state: ReplicaStatus['state'];
  lagSeconds: number | null;
  /** The start of the last check at which it had replayed all the primary had (performance.now()). */
  caughtUpAt: number;
  checked: boolean;
}

export class Replicas {
  private readonly replicas: Replica[];
  private readonly lastWrite = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private next = 0;

  constructor(
    private readonly options: ReplicaOptions,
    /** The primary's current WAL position, as text. */
    private readonly primaryLsn: () => Promise<string>,
  ) {
    this.replicas = options.urls.map((url) => {
      const pool = new pg.Pool({
        connectionString: url,
        max: options.poolSize,
        options: options.searchPath ? `-c search_path=${options.searchPath}` : undefined,
        connectionTimeoutMillis: options.connectTimeoutMs,
        keepAlive: true,
      });
      // A replica's idle connection that dies must not end the process; the check notices.
      pool.on('error', () => {});
      pool.on('connect', (client) => client.on('error', () => {}));
      return { name: replicaName(url), pool, state: 'down', lagSeconds: null, caughtUpAt: -Infinity, checked: false };
    });
  }

  start(): void {
    this.check();
    this.timer = setInterval(() => this.check(), this.options.checkMs);
    this.timer.unref();
  }

  /** Runs one check of every replica (no two at once); resolves when it is done. */
  check(): Promise<void> {
    this.checking ??= this.checkAll().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  wrote(scope: string): void {
    this.lastWrite.set(scope, performance.now());
  }

  /** A replica that may serve a read of `scope` now, in turn among those that may; else none. */
  pick(scope: string): Replica | undefined {
    const since = this.lastWrite.get(scope) ?? -Infinity;
    const n = this.replicas.length;
    for (let i = 0; i < n; i++) {
      const r = this.replicas[(this.next + i) % n];
      if (r.state === 'ok' && r.caughtUpAt > since) {
        this.next = (this.next + i + 1) % n;
        return r;
      }
    }
    return undefined;
  }

  /** A read on `replica` failed for a lost connection: skip it until a check finds it well. */
  lost(replica: Replica, err: unknown): void {
    this.setState(replica, 'down', null, err);
  }

  status(): ReplicaStatus[] {
    return this.replicas.map((r) => ({ name: r.name, lagSeconds: r.lagSeconds, state: r.state }));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.checking?.catch(() => {});
    await Promise.all(this.replicas.map((r) => r.pool.end().catch(() => {})));
  }

  private async checkAll(): Promise<void> {
    const startedAt = performance.now();
    let lsn: string | undefined;
    try {
      lsn = await this.primaryLsn();
    } catch {
      // Without the primary's position no replica can be said to have caught up; their lag by
      // replay time is still measured, and reads of scopes never written here may use them.
    }
    await Promise.all(this.replicas.map((r) => this.checkOne(r, startedAt, lsn)));
    // Stamps every replica has caught up past are no longer needed.
    const oldest = Math.min(...this.replicas.map((r) => r.caughtUpAt));
    for (const [scope, at] of this.lastWrite) if (at < oldest) this.lastWrite.delete(scope);
  }

  private async checkOne(r: Replica, startedAt: number, lsn: string | undefined): Promise<void> {
    let row: { standby: boolean; caught_up: boolean | null; behind: number | null };
    try {
      const res = await r.pool.query(
        `SELECT pg_is_in_recovery() AS standby,
                CASE WHEN $1::text IS NULL THEN NULL ELSE pg_last_wal_replay_lsn() >= $1::pg_lsn END AS caught_up,
                EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8 AS behind`,
        [lsn ?? null],
      );
      row = res.rows[0];
    } catch (err) {
      this.setState(r, 'down', null, err);
      return;
    }
    if (!row.standby) {
      this.setState(r, 'down', null, new Error('it is not in recovery: no standby (promoted?)'));
      return;
    }
    if (row.caught_up) r.caughtUpAt = startedAt;
    const lag = row.caught_up ? 0 : row.behind === null ? null : Math.max(0, row.behind);
    const within = lag !== null && lag * 1000 <= this.options.maxLagMs;
    this.setState(r, within ? 'ok' : 'lagging', lag);
  }

  private setState(r: Replica, state: ReplicaStatus['state'], lag: number | null, err?: unknown): void {
    const was = r.checked ? r.state : undefined;
    r.checked = true;
    r.lagSeconds = lag;
    if (state === 'down') r.caughtUpAt = -Infinity;
    if (was === state || (was === undefined && state === 'ok')) {
      r.state = state;
      return;
    }
    r.state = state;
    const fields = { replica: r.name, lagSeconds: lag, maxLagMs: this.options.maxLagMs };
    if (state === 'ok') this.options.log.info(fields, 'database: read replica back in use');
    else if (state === 'lagging')
      this.options.log.warn(
        fields,
        'database: read replica skipped: lagging past DATABASE_READ_MAX_LAG_MS; reads go to the primary',
      );
    else
      this.options.log.warn(
        { ...fields, err: { message: String((err as Error)?.message ?? err) } },
        'database: read replica skipped: down; reads go to the primary',
      );
  }
}
