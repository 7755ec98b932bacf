/**
 * Reading settings from the environment: the helpers every module's `settings(env)` uses, so a
 * bad value stops the process at start-up with a message naming the variable, instead of
 * surfacing later as a confusing runtime error. Every key is documented in
 * docs/configuration.md and .env.example.
 */

/** The process environment as modules see it (read-only; tests pass their own). */
export type Env = Readonly<Record<string, string | undefined>>;

export class ConfigError extends Error {}

export function intFrom(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

export function boolFrom(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}
