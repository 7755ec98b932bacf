/** The interactions module's own settings, parsed once from the environment. */
import { type Env, intFrom } from '../../platform/settings.ts';

export interface InteractionsSettings {
  /** How often one worker process folds the counters' slots of past hours (a system schedule; see compactCounters). */
  compactEveryMs: number;
  /**
   * Attempts of one effect's job (docs/interactions.md, Effects): a webhook effect without a 2xx
   * answer is tried again after the job engine's backoff (JOBS_BACKOFF_BASE_MS doubling, up to
   * JOBS_BACKOFF_MAX_MS), until this many attempts have failed.
   */
  effectMaxAttempts: number;
  /**
   * EVENTS_RETENTION_DAYS: events older than this many days are removed by whole months (their
   * partition dropped) by the `interactions.maintainPartitions` system schedule; 0, the default,
   * keeps every event (docs/operations.md "Tables that age out").
   */
  eventsRetentionDays: number;
}

export function interactionsSettings(env: Env): InteractionsSettings {
  return {
    compactEveryMs: intFrom(env, 'INTERACTIONS_COMPACT_EVERY_MS', 600_000, 1000),
    effectMaxAttempts: intFrom(env, 'INTERACTIONS_EFFECT_MAX_ATTEMPTS', 10, 1, 100),
    eventsRetentionDays: intFrom(env, 'EVENTS_RETENTION_DAYS', 0, 0, 365_000),
  };
}
