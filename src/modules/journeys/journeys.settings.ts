/**
 * The journeys module's settings: the interactions module's (funnels are analytics queries of
 * interaction events, with its work_mem), and the milestone publisher's safety-net poll.
 */
import { type Env, intFrom } from '../../platform/settings.ts';
import { type InteractionsSettings, interactionsSettings } from '../interactions/index.ts';

export interface JourneysSettings extends InteractionsSettings {
  /**
   * How often a worker process looks for milestones not yet published (journeys.milestones.ts):
   * a NOTIFY publishes them at once; this catches those noted while no worker listened.
   */
  milestonesPollMs: number;
}

export function journeysSettings(env: Env): JourneysSettings {
  return {
    ...interactionsSettings(env),
    milestonesPollMs: intFrom(env, 'JOURNEY_MILESTONES_POLL_MS', 5000, 50, 3_600_000),
  };
}
