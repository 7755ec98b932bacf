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
}

export function interactionsSettings(env: Env): InteractionsSettings {
  return {
    compactEveryMs: intFrom(env, 'INTERACTIONS_COMPACT_EVERY_MS', 600_000, 1000),
    effectMaxAttempts: intFrom(env, 'INTERACTIONS_EFFECT_MAX_ATTEMPTS', 10, 1, 100),
  };
}
