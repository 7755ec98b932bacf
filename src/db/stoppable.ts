/**
 * Reads their caller may stop: a client that went away (`ReadSignal`), or a bound on how long
 * the read may run (`timeoutMs`). Two places wait on the same two things, each with
 * `watchUntil`: the analytics slots' line (a waiting read leaves it) and `onStoppableClient`
 * below (a running read's statement is cancelled in the database).
 *
 * The signal is looked at, not listened to: a read of a few milliseconds makes no listener and
 * no EventTarget (an AbortController per request was measured at about a tenth of the
 * service's CPU on 3-ms reads), and a hang-up is noticed within READ_WATCH_MS.
 */
import type pg from 'pg';

/**
 * Whether whoever asked for a read has stopped waiting for it (a client that went away). An
 * AbortSignal is one; the routes pass a cheaper view of their connection (platform/routes.ts).
 */
export interface ReadSignal {
  readonly aborted: boolean;
}

/** How often a read that may be stopped looks at its signal: how soon a hang-up stops it. */
export const READ_WATCH_MS = 200;

/** When to stop a read: its caller's signal, and how long it may run (ms). */
export interface ReadStop {
  signal?: ReadSignal;
  timeoutMs?: number;
}

/** A read its caller may stop: it runs on a connection of its own, which can be cancelled. */
export const stoppable = (o: ReadStop | undefined): boolean => o?.signal !== undefined || o?.timeoutMs !== undefined;

/**
 * Calls `onEnd` once, when `signal` has aborted or the time `until` (epoch ms) has come,
 * whichever is first: the signal looked at every READ_WATCH_MS, the time on one timer when
 * there is no signal. Answers the function that ends the watch without calling `onEnd`.
 */
export function watchUntil(
  signal: ReadSignal | undefined,
  until: number,
  onEnd: (why: 'aborted' | 'due') => void,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  const look = () => {
    const left = until - Date.now();
    if (signal?.aborted) onEnd('aborted');
    else if (left <= 0) onEnd('due');
    else timer = setTimeout(look, signal ? Math.min(READ_WATCH_MS, left) : left);
  };
  look();
  return () => clearTimeout(timer);
}

/**
 * `work` on one of `pool`'s connections, released after; destroyed rather than pooled when
 * the work found it lost (`lose`, or `isLost`). When the read may be stopped (`stop`), the
 * backend is asked to cancel what it runs once the signal aborts or the time is up, from
 * another connection (pg_cancel_backend; a backend between statements ignores it), and the
 * connection is then closed, not pooled, so that no cancel still on its way can reach its
 * next user. A read nobody may stop (every write) makes no timer.
 */
export async function onStoppableClient<T>(
  pool: pg.Pool,
  stop: ReadStop,
  isLost: (client: pg.PoolClient, err: unknown) => boolean,
  work: (client: pg.PoolClient, lose: (err: Error) => void) => Promise<T>,
): Promise<T> {
  if (stop.signal?.aborted) throw new Error('the read was stopped before it began');
  const client = await pool.connect();
  let lost: Error | undefined;
  let cancelling: Promise<unknown> | undefined;
  const unwatch = stoppable(stop)
    ? watchUntil(stop.signal, Date.now() + (stop.timeoutMs ?? Number.POSITIVE_INFINITY), () => {
        const pid = (client as pg.PoolClient & { processID?: number }).processID;
        cancelling = pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => {});
      })
    : undefined;
  try {
    return await work(client, (err) => {
      lost = err;
    });
  } catch (err) {
    if (isLost(client, err)) lost ??= err as Error;
    throw err;
  } finally {
    unwatch?.();
    if (cancelling) {
      await cancelling;
      lost ??= new Error('cancelled by its caller');
    }
    // Released with an error, the pool destroys the connection rather than reuse it.
    client.release(lost);
  }
}
