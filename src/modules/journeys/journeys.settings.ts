/**
 * The journeys module's settings: the analytics work_mem of its funnel queries (the platform's
 * ANALYTICS_WORK_MEM_MB), and the milestone publisher's safety-net poll.
 */
import type { PlatformSettings } from '../../platform/module.ts';
import { type Env, intFrom } from '../../platform/settings.ts';

export interface JourneysSettings {
  /** work_mem for funnel and progress queries, in MB. */
  analyticsWorkMemMb: number;
  /**
   * How often a worker process looks for milestones not yet published (journeys.milestones.ts):
   * a NOTIFY publishes them at once; this catches those noted while no worker listened.
   */
  milestonesPollMs: number;
}

export function journeysSettings(
  env: Env,
  platform: Pick<PlatformSettings, 'analyticsWorkMemMb'> = { analyticsWorkMemMb: 64 },
): JourneysSettings {
  return {
    analyticsWorkMemMb: platform.analyticsWorkMemMb,
    milestonesPollMs: intFrom(env, 'JOURNEY_MILESTONES_POLL_MS', 5000, 50, 3_600_000),
  };
}
