/** The job engine's settings: slots, lanes and fair shares, prefetch, timers, retries, retention. */
import { type Env, intFrom } from '../../platform/settings.ts';

export interface JobsSettings {
  /** Jobs one process runs at the same time. */
  concurrency: number;
  pollIntervalMs: number;
  lockTimeoutMs: number;
  /** How often a worker extends its claims; well under the lock timeout. */
  heartbeatMs: number;
  maxAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  retentionMs: number;
  stopTimeoutMs: number;
  /** Jobs claimed ahead of free slots while jobs are short (see the design); 0: none. */
  prefetch: number;
  /** A prefetched job not started within this is handed back to the queue. */
  prefetchHoldMs: number;
  /**
   * The most slots one collection's jobs take in a worker's lane (see "Fairness"); with
   * prefetch, a completion batch may also claim `prefetch` more of them to wait for a slot.
   */
  collectionConcurrency: number;
  /** The lanes besides `default`: their own slots and per-collection share in every worker. */
  lanes: Record<string, { concurrency: number; collectionConcurrency: number }>;
}

/** The lanes every worker runs: `default`, and `deliveries` for webhook deliveries. */
export const JOBS_LANES = ['default', 'deliveries'] as const;

/**
 * The lane of an app's own tasks (declared through POST .../tasks): their jobs are leased by
 * the app's workers over HTTP, so no engine of ours claims this lane.
 */
export const APP_LANE = 'app';

/**
 * A collection's share of a lane's slots unless configured: all but a quarter of them (at
 * least one held back from any single collection once there are two slots).
 */
const shareOf = (concurrency: number) => Math.max(1, concurrency - Math.max(1, Math.floor(concurrency / 4)));

/** `shutdownTimeoutMs`: the process's own budget (SHUTDOWN_TIMEOUT_MS), which the stop timeout stays under. */
export function jobsSettings(env: Env, shutdownTimeoutMs = 10_000): JobsSettings {
  const lockTimeoutMs = intFrom(env, 'JOBS_LOCK_TIMEOUT_MS', 60_000, 100);
  const concurrency = intFrom(env, 'JOBS_CONCURRENCY', 4, 1, 1000);
  const deliveries = intFrom(env, 'JOBS_DELIVERIES_CONCURRENCY', 16, 1, 1000);
  return {
    concurrency,
    collectionConcurrency: intFrom(env, 'JOBS_COLLECTION_CONCURRENCY', shareOf(concurrency), 1, concurrency),
    lanes: {
      deliveries: {
        concurrency: deliveries,
        collectionConcurrency: intFrom(
          env,
          'JOBS_DELIVERIES_COLLECTION_CONCURRENCY',
          shareOf(deliveries),
          1,
          deliveries,
        ),
      },
    },
    prefetch: intFrom(env, 'JOBS_PREFETCH', concurrency, 0, 1000),
    // Well under the heartbeat, so a held job never depends on it to stay claimed.
    prefetchHoldMs: intFrom(env, 'JOBS_PREFETCH_HOLD_MS', 250, 1, 60_000),
    pollIntervalMs: intFrom(env, 'JOBS_POLL_INTERVAL_MS', 2000, 10),
    lockTimeoutMs,
    // At most half the lock timeout, so one late beat never costs a live worker its claims.
    heartbeatMs: intFrom(
      env,
      'JOBS_HEARTBEAT_MS',
      Math.max(50, Math.floor(lockTimeoutMs / 3)),
      10,
      Math.floor(lockTimeoutMs / 2),
    ),
    maxAttempts: intFrom(env, 'JOBS_MAX_ATTEMPTS', 5, 1, 100),
    backoffBaseMs: intFrom(env, 'JOBS_BACKOFF_BASE_MS', 1000, 0),
    backoffMaxMs: intFrom(env, 'JOBS_BACKOFF_MAX_MS', 3_600_000, 0),
    retentionMs: intFrom(env, 'JOBS_RETENTION_HOURS', 7 * 24, 0, 24 * 3650) * 3_600_000,
    // A little under the process's own shutdown budget, so releasing claims still fits in it.
    stopTimeoutMs: intFrom(env, 'JOBS_STOP_TIMEOUT_MS', Math.max(0, shutdownTimeoutMs - 2000), 0),
  };
}

/** The settings of one lane's engine: the lane's slots and share, the rest as configured. */
export function laneSettings(settings: JobsSettings, lane: string): JobsSettings {
  const own = settings.lanes[lane];
  if (!own) return settings;
  return {
    ...settings,
    concurrency: own.concurrency,
    collectionConcurrency: own.collectionConcurrency,
    prefetch: Math.min(settings.prefetch, own.concurrency),
  };
}
