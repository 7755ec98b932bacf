/**
 * The pool of connections to the primary, when DATABASE_URL may name several hosts (libpq's
 * form, hosts.ts). node-postgres pools connect to one fixed host, so this keeps one pool per
 * primary it has found and replaces it when that primary is lost.
 *
 * States
 * - `unknown`: no pool. The next caller runs a discovery: each host in the listed order gets
 *   one connection; with target_session_attrs=read-write the first whose `transaction_read_only`
 *   is off wins (what libpq does), else the first that answers. One discovery at a time; every
 *   caller waits for it. When none qualifies the callers get `NoPrimaryError` (SQLSTATE 57P03,
 *   transient: answered 503 with Retry-After), and for RETRY_AFTER_MS later callers get the same
 *   at once, so that an outage does not become a storm of connection attempts.
 * - `found`: a pool on that host. A query on it that fails because the connection was lost, or
 *   with 25006 read_only_sql_transaction (the host was demoted to a standby while we held
 *   connections to it), drops the pool: its connections are ended, and the state is `unknown`.
 *
 * With one host and no target_session_attrs, the pool is made once and never replaced: the
 * behaviour of a plain single-host address, where node-postgres itself replaces dead connections.
 */
import pg from 'pg';
import type { DbLogger } from './client.ts';
import { isServerGone } from './faults.ts';
import type { HostTarget, ParsedDatabaseUrl } from './hosts.ts';

/** How long a failed discovery is reused before the next one (ms). */
const RETRY_AFTER_MS = 250;

export class NoPrimaryError extends Error {
  /** cannot_connect_now: transient to faults.ts, so the caller is told to come back. */
  readonly code = '57P03';
}

export interface PoolSettings {
  max: number;
  searchPath?: string;
  connectTimeoutMs: number;
}

export class PrimaryPool {
  private pool: pg.Pool | undefined;
  private host: HostTarget | undefined;
  private discovering: Promise<pg.Pool> | undefined;
  private failure: { err: Error; until: number } | undefined;
  private closed = false;
  private everFound = false;
  /** Connections that reported an error at some point: never reused (see postgres.ts). */
  readonly lostConnections = new WeakSet<pg.ClientBase>();
  private readonly fixed: boolean;

  constructor(
    private readonly url: ParsedDatabaseUrl,
    private readonly settings: PoolSettings,
    private readonly log: DbLogger,
  ) {
    this.fixed = url.targets.length === 1 && !url.readWrite;
  }

  /** The pool on the primary, discovering it first when it is not known. */
  current(): Promise<pg.Pool> {
    if (this.pool) return Promise.resolve(this.pool);
    if (this.closed) return Promise.reject(new Error('Cannot use a pool after calling end'));
    if (this.failure && performance.now() < this.failure.until) return Promise.reject(this.failure.err);
    this.discovering ??= this.discover().finally(() => {
      this.discovering = undefined;
    });
    return this.discovering;
  }

  /** The pool if one is open now (for callers that only need one when it exists). */
  get open(): pg.Pool | undefined {
    return this.pool;
  }

  /** The primary's single-host address, for a dedicated connection (LISTEN). */
  async connectionString(): Promise<string> {
    await this.current();
    return (this.host as HostTarget).connectionString;
  }

  /**
   * A query on `pool` failed with `err`: when that says the primary is gone or is no longer
   * one, forget the pool, so that the next caller finds the new primary.
   */
  failed(pool: pg.Pool, err: unknown): void {
    if (this.fixed || pool !== this.pool) return;
    if (!isServerGone(err)) return;
    const demoted = (err as { code?: string } | null)?.code === '25006';
    this.log.warn(
      { host: this.host?.name, err: { message: String((err as Error)?.message ?? err) } },
      demoted
        ? 'database: the primary became read-only; looking for the new one'
        : 'database: primary lost; looking for it',
    );
    this.pool = undefined;
    this.host = undefined;
    pool.end().catch(() => {});
  }

  private async discover(): Promise<pg.Pool> {
    const tried: string[] = [];
    for (const target of this.url.targets) {
      const verdict = await this.probe(target);
      tried.push(`${target.name} (${verdict})`);
      if (verdict !== 'accepts writes' && !(verdict === 'read-only' && !this.url.readWrite)) continue;
      if (this.closed) break;
      const hadOne = this.failure !== undefined || this.everFound;
      this.everFound = true;
      this.failure = undefined;
      this.host = target;
      this.pool = this.newPool(target);
      if (hadOne || this.url.targets.length > 1)
        this.log.info({ host: target.name }, 'database: connected to the primary');
      return this.pool;
    }
    const err = new NoPrimaryError(
      `No database host ${this.url.readWrite ? 'accepts writes' : 'answers'}: ${tried.join(', ')}`,
    );
    if (!this.failure) this.log.warn({ tried }, 'database: no primary found; answering 503 until one is');
    this.failure = { err, until: performance.now() + RETRY_AFTER_MS };
    throw err;
  }

  private async probe(target: HostTarget): Promise<'accepts writes' | 'read-only' | 'unreachable'> {
    if (this.fixed) return 'accepts writes';
    const client = new pg.Client({
      connectionString: target.connectionString,
      connectionTimeoutMillis: this.settings.connectTimeoutMs,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
      return rows[0]?.transaction_read_only === 'off' ? 'accepts writes' : 'read-only';
    } catch {
      return 'unreachable';
    } finally {
      client.end().catch(() => {});
    }
  }

  private newPool(target: HostTarget): pg.Pool {
    const pool = new pg.Pool({
      connectionString: target.connectionString,
      max: this.settings.max,
      options: this.settings.searchPath ? `-c search_path=${this.settings.searchPath}` : undefined,
      // Without a bound, a request waits forever for a connection while the server is away.
      connectionTimeoutMillis: this.settings.connectTimeoutMs,
      // Finds half-open connections (a peer that vanished without a FIN) sooner.
      keepAlive: true,
    });
    // A dropped idle connection must not crash the process; the pool replaces it.
    pool.on('error', (err) =>
      this.log.warn(
        { err: { message: err.message, code: (err as { code?: string }).code } },
        'database: an idle connection was lost',
      ),
    );
    // Every connection gets an error listener for its whole life. The pool removes its own
    // listener before it hands a connection out, and a promise-based checkout resumes only after
    // the current socket read is parsed: a server that terminates the connection right after
    // accepting it (both messages in one read) would otherwise end the process in between.
    pool.on('connect', (client) => {
      client.on('error', () => this.lostConnections.add(client));
    });
    return pool;
  }

  async end(): Promise<void> {
    this.closed = true;
    await this.discovering?.catch(() => {});
    const pool = this.pool;
    this.pool = undefined;
    await pool?.end();
  }
}
