/** The console module's settings: where the built console is. */
import { isAbsolute, resolve } from 'node:path';
import type { Env } from '../../platform/settings.ts';

export interface ConsoleSettings {
  /** CONSOLE_DIR: the Vite build output (index.html and assets/). */
  dir: string;
}

/** The repository's console/dist, found from this file, so the working directory does not matter. */
const DEFAULT_DIR = resolve(import.meta.dirname, '../../../console/dist');

export function consoleSettings(env: Env): ConsoleSettings {
  const raw = env.CONSOLE_DIR;
  return { dir: raw ? (isAbsolute(raw) ? raw : resolve(raw)) : DEFAULT_DIR };
}
