/** The app objects' settings. */
import { type Env, intFrom } from '../../platform/settings.ts';

export interface AppObjectsSettings {
  /** APP_THREAD_MAX_REPLIES: replies one thread may hold (default 10000). */
  maxReplies: number;
}

export function appObjectsSettings(env: Env): AppObjectsSettings {
  return { maxReplies: intFrom(env, 'APP_THREAD_MAX_REPLIES', 10_000, 1, 1_000_000) };
}
