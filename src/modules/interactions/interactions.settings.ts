/** The interactions module's own settings, parsed once from the environment. */
import { type Env, intFrom } from '../../platform/settings.ts';

export interface InteractionsSettings {
  /** work_mem for analytics queries (dedupeLatest, aggregate, funnels), in MB. */
  analyticsWorkMemMb: number;
}

export function interactionsSettings(env: Env): InteractionsSettings {
  return { analyticsWorkMemMb: intFrom(env, 'INTERACTIONS_ANALYTICS_WORK_MEM_MB', 64, 1, 4096) };
}
