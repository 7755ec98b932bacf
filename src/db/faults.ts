/**
 * Which database failures are the database's weather rather than the caller's mistake or our
 * bug. A lost connection, a server restarting, a deadlock victim: waiting and trying again
 * helps, so the HTTP layer answers 503 with `Retry-After` instead of 500, and background work
 * retries instead of dropping what it held.
 *
 * node-postgres reports these three ways: a SQLSTATE in `code` (the server said so before it
 * went), a Node socket errno in `code` (ECONNRESET…), or only a message (the socket ended with
 * nothing said). All three are read here, and nowhere else.
 */

/** SQLSTATEs that mean "the connection or the server is going away / cannot serve now". */
const UNAVAILABLE_STATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, a fast shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
  '53300', // too_many_connections
  '55P03', // lock_not_available (lock_timeout)
  '57014', // query_canceled (statement_timeout)
  // read_only_sql_transaction: a write reached a host that has become a standby (a failover
  // demoted it while we held connections); the pool looks for the new primary (primary.ts).
  '25006',
]);

/** SQLSTATEs of a transaction that lost a race; running it again normally succeeds. */
const CONFLICT_STATES = new Set(['40001', '40P01']);

const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

// node-postgres' own words when a socket ends or a pool cannot hand out a connection.
const LOST_MESSAGES =
  /Connection terminated|not queryable|timeout exceeded when trying to connect|Cannot use a pool after calling end|Client was closed|connection error/i;

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/** The connection (or the server behind it) is gone or cannot serve now. */
export function isConnectionLost(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const code = codeOf(err);
  if (code.startsWith('08') || UNAVAILABLE_STATES.has(code) || SOCKET_CODES.has(code)) return true;
  const message = (err as { message?: unknown }).message;
  return !code && typeof message === 'string' && LOST_MESSAGES.test(message);
}

/** Unavailable, but the server is there: a busy server or a statement that waited too long. */
const SERVER_STILL_THERE = new Set(['53300', '55P03', '57014']);

/**
 * The server behind the connection is gone, or is no longer the primary (25006): the failover
 * pool (primary.ts) then looks for the primary again, and a read replica is skipped. A lock or
 * statement timeout, or a full server, is not that.
 */
export function isServerGone(err: unknown): boolean {
  return isConnectionLost(err) && !SERVER_STILL_THERE.has(codeOf(err));
}

/** A deadlock victim or a serialization failure: the transaction may simply be run again. */
export function isRetryableConflict(err: unknown): boolean {
  return CONFLICT_STATES.has(codeOf(err));
}

/** A statement cancelled (57014): its read's caller stopped it, or a statement_timeout ran out. */
export function isCancelled(err: unknown): boolean {
  return codeOf(err) === '57014';
}

/** Anything where waiting helps: answered 503 with Retry-After over HTTP. */
export function isTransient(err: unknown): boolean {
  return isConnectionLost(err) || isRetryableConflict(err);
}
