/**
 * Retrying work that PostgreSQL aborted because of concurrency, not because it was wrong:
 * a deadlock (SQLSTATE 40P01: the server broke a lock cycle by failing one side) or a
 * serialization failure (40001). The aborted transaction changed nothing, so running the
 * whole unit again is safe and is what the server expects the client to do.
 *
 * Statements are first written so that they cannot deadlock (rows locked in one fixed order,
 * see docs/design/jobs.md and docs/design/webhooks.md); this is the backstop for what that misses, e.g. a
 * lock cycle through a table or index another module touches.
 *
 * Wrap a whole unit: one autocommit statement, or a whole `db.transaction(...)` call. Never
 * a statement inside a transaction: after an error the transaction is aborted and every
 * further statement in it fails.
 */

/** SQLSTATEs that mean "aborted by a concurrent transaction; try again". */
const RETRYABLE = new Set(['40P01', '40001']);

/** Whether `err` is a deadlock or a serialization failure reported by PostgreSQL. */
export function isConflictError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

/**
 * Delay before retry number `attempt` (1-based): exponential from `baseMs`, capped at
 * `maxMs`, with full jitter over the upper half, so that the two sides of a deadlock (both
 * retrying) do not collide again in lock step.
 */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

export interface RetryOptions {
  /** Tries in all, the first included (default 5). */
  attempts?: number;
  /** First delay (default 10 ms); doubles each time, jittered. */
  baseMs?: number;
  /** Longest delay (default 500 ms). */
  maxMs?: number;
  /** Called before each retry (for a log line). */
  onRetry?(err: unknown, attempt: number, delayMs: number): void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `fn`; when it fails with a deadlock or serialization failure, waits a short jittered
 * backoff and runs it again, up to `attempts` tries in all. Any other error, and the last
 * conflict, is thrown as is.
 */
export async function retryOnConflict<T>(fn: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 5;
  const baseMs = options.baseMs ?? 10;
  const maxMs = options.maxMs ?? 500;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= attempts || !isConflictError(err)) throw err;
      const delay = backoffMs(attempt, baseMs, maxMs);
      options.onRetry?.(err, attempt, delay);
      await sleep(delay);
    }
  }
}
