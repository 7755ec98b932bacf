/** The interactions module's own settings, parsed once from the environment. */
import { intFrom } from '../../config.ts';

export interface InteractionsConfig {
  /** work_mem for analytics queries (dedupeLatest, aggregate, funnels), in MB. */
  analyticsWorkMemMb: number;
}

export function interactionsConfig(env: Readonly<Record<string, string | undefined>>): InteractionsConfig {
  return { analyticsWorkMemMb: intFrom(env, 'INTERACTIONS_ANALYTICS_WORK_MEM_MB', 64, 1, 4096) };
}
