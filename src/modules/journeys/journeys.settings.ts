/** The journeys module's setting: the milestone publisher's safety-net poll. */
import { type Env, intFrom } from '../../platform/settings.ts';

export interface JourneysSettings {
  /**
   * How often a worker process looks for milestones not yet published (journeys.milestones.ts):
   * a NOTIFY publishes them at once; this catches those noted while no worker listened.
   */
  milestonesPollMs: number;
}

export function journeysSettings(env: Env): JourneysSettings {
  return { milestonesPollMs: intFrom(env, 'JOURNEY_MILESTONES_POLL_MS', 5000, 50, 3_600_000) };
}
