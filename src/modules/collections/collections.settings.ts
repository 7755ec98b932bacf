/** The collections module's settings: the super admin, user tokens, the credential cache. */
import { ConfigError, type Env, intFrom } from '../../platform/settings.ts';

export interface CollectionsSettings {
  /** SUPER_ADMIN_KEY; when unset the server generates one and stores it (see generatedSuperAdminKey). */
  superAdminKey: string | undefined;
  /** SUPER_ADMIN_FEATURES: comma-separated features of the super admin (default `adminApps`). */
  superAdminFeatures: string[];
  /** AUTH_SECRET signs user tokens; when unset one is generated and stored on first start. */
  authSecret: string | undefined;
  /**
   * AUTH_CACHE_TTL_MS: how long this process trusts a resolved admin key. Revocations reach
   * every process at once by notification; this bounds a notification lost meanwhile.
   */
  authCacheTtlMs: number;
  userTokenDefaultTtlSeconds: number;
  userTokenMaxTtlSeconds: number;
}

export function collectionsSettings(env: Env): CollectionsSettings {
  const superAdminKey = env.SUPER_ADMIN_KEY || undefined;
  if (superAdminKey !== undefined && superAdminKey.length < 16) {
    throw new ConfigError('SUPER_ADMIN_KEY must be at least 16 characters long');
  }
  const authSecret = env.AUTH_SECRET || undefined;
  if (authSecret !== undefined && authSecret.length < 32)
    throw new ConfigError('AUTH_SECRET must be at least 32 characters long');
  return {
    superAdminKey,
    superAdminFeatures: (env.SUPER_ADMIN_FEATURES ?? 'adminApps')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    authSecret,
    authCacheTtlMs: intFrom(env, 'AUTH_CACHE_TTL_MS', 5_000, 0),
    userTokenDefaultTtlSeconds: intFrom(env, 'USER_TOKEN_DEFAULT_TTL_SECONDS', 3600, 60),
    userTokenMaxTtlSeconds: intFrom(env, 'USER_TOKEN_MAX_TTL_SECONDS', 30 * 24 * 3600, 60),
  };
}
