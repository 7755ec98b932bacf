/** The webhooks module's settings, parsed once from the environment (see docs/webhooks.md). */
import { boolFrom, type Env, intFrom } from '../../platform/settings.ts';

export interface WebhooksSettings {
  /** An event outside the catalogue fails its change (tests) instead of being logged once (catalogue.ts). */
  eventsStrict: boolean;
  /** Let receivers live on loopback/private networks (tests, local development). */
  allowPrivateNetworks: boolean;
  /** Per-attempt timeout, connect to last byte read. */
  timeoutMs: number;
  /** First retry delay; later ones grow by `retryFactor`. */
  retryBaseMs: number;
  retryFactor: number;
  /** No retry is ever scheduled further out than this (default one hour). */
  retryMaxDelayMs: number;
  /** Automatic retries after the first attempt (default 3). */
  maxRetries: number;
  /** Consecutive failed deliveries (each after its last retry) that disable a registration (default 10). */
  disableAfterFailures: number;
  /** How much of a receiver's answer is read and kept in the delivery log. */
  responseExcerptBytes: number;
  /** Registrations per collection. */
  maxRegistrations: number;
  /** Finished deliveries (and their events and attempts) are deleted after this long. */
  logRetentionMs: number;
  /** How long a rotated-out secret keeps signing, unless the rotation says otherwise. */
  secretGraceSeconds: number;
  /** Attempts one worker process makes at once to one registration; more wait (delivery.ts). */
  maxInFlight: number;
  /**
   * A failing registration's attempts are held back this long after its first failure,
   * doubling with each further one up to `backoffMaxMs`; 0 turns the backoff off.
   */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export function webhooksSettings(env: Env): WebhooksSettings {
  return {
    eventsStrict: boolFrom(env, 'WEBHOOK_EVENTS_STRICT', false),
    allowPrivateNetworks: boolFrom(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    timeoutMs: intFrom(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    retryBaseMs: intFrom(env, 'WEBHOOK_RETRY_BASE_MS', 60_000, 1, 3_600_000),
    retryFactor: intFrom(env, 'WEBHOOK_RETRY_FACTOR', 10, 1, 100),
    retryMaxDelayMs: intFrom(env, 'WEBHOOK_RETRY_MAX_DELAY_MS', 3_600_000, 1, 3_600_000),
    maxRetries: intFrom(env, 'WEBHOOK_MAX_RETRIES', 3, 0, 10),
    disableAfterFailures: intFrom(env, 'WEBHOOK_DISABLE_AFTER_FAILURES', 10, 1, 1000),
    responseExcerptBytes: intFrom(env, 'WEBHOOK_RESPONSE_EXCERPT_BYTES', 2048, 0, 65_536),
    maxRegistrations: intFrom(env, 'WEBHOOK_MAX_REGISTRATIONS', 50, 1, 10_000),
    logRetentionMs: intFrom(env, 'WEBHOOK_LOG_RETENTION_DAYS', 30, 1, 3650) * 86_400_000,
    secretGraceSeconds: intFrom(env, 'WEBHOOK_SECRET_GRACE_SECONDS', 86_400, 0, 604_800),
    maxInFlight: intFrom(env, 'WEBHOOK_MAX_IN_FLIGHT', 8, 1, 1000),
    backoffBaseMs: intFrom(env, 'WEBHOOK_BACKOFF_BASE_MS', 1000, 0, 3_600_000),
    backoffMaxMs: intFrom(env, 'WEBHOOK_BACKOFF_MAX_MS', 300_000, 0, 86_400_000),
  };
}
