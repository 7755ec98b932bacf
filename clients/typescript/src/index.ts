/**
 * The collection platform's typed client (docs/client.md): `createClient` for calls,
 * `ServiceError` for every refusal, `verifyWebhook` for receivers, `runWorker` for an app's
 * own tasks (docs/workers.md), and the generated types.
 */
export {
  type Call,
  type CallOptions,
  type ClientOptions,
  createClient,
  type HttpMethod,
  type PathsWith,
  type ResponseBody,
  type ServiceClient,
} from './client.ts';
export {
  type ErrorBody,
  type ErrorCode,
  isServiceError,
  type KnownErrorCode,
  parseRetryAfter,
  ServiceError,
} from './errors.ts';
export type { components, operations, paths } from './schema.ts';
export {
  isValidWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventOf,
  type WebhookEventType,
  type WebhookFailure,
  type WebhookHeaders,
  type WebhookScheme,
  WebhookVerificationError,
} from './webhooks.ts';

export {
  type LeasedJob,
  RetryLaterError,
  type RunWorkerOptions,
  runWorker,
  type Worker,
  type WorkerContext,
} from './worker.ts';

import type { components } from './schema.ts';
/** The document's named schemas: `Schemas['Link']`, `Schemas['Webhook']`, … */
export type Schemas = components['schemas'];
