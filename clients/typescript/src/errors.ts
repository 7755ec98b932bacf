/**
 * Every refusal of the service, as one error class. The service answers every 4xx/5xx with
 * `{code, errorCode, message, details?, requestId}` (docs/auth.md); a ServiceError carries
 * those fields, the HTTP status, and `retryAfter` when the service asked to wait (429, 503).
 */
import type { components } from './schema.ts';

export type ErrorBody = components['schemas']['ErrorBody'];

/**
 * The error codes the service uses (src/platform/errors.ts). The document types `errorCode`
 * as a string, so a code added later still arrives; it is then a plain string here.
 */
export type KnownErrorCode =
  | 'VALIDATION_FAILED'
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'REQUEST_TIMEOUT'
  | 'CONFLICT'
  | 'GONE'
  | 'PAYLOAD_TOO_LARGE'
  | 'URI_TOO_LONG'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'HEADERS_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'NOT_READY'
  | 'UNAVAILABLE'
  | 'INTERNAL';
// `string & {}` keeps the known codes offered by editors while accepting any other string.
export type ErrorCode = KnownErrorCode | (string & {});

export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The body's `code` (the same as `status` for the service's own answers). */
  readonly code: number;
  readonly errorCode: ErrorCode;
  /** The service's request id (body `requestId`, else the `x-request-id` header): quote it in a report. */
  readonly requestId: string | undefined;
  /** E.g. `{errors: [{path, message}]}` for VALIDATION_FAILED, `{knownTasks}` for an unknown task. */
  readonly details: Record<string, unknown> | undefined;
  /** Seconds the service asked to wait before retrying (`Retry-After`, on 429 and 503). */
  readonly retryAfter: number | undefined;
  /** Only on a refusal clients branch on (e.g. a refused interaction submit): why, e.g. `duplicate`. */
  readonly reason: string | undefined;
  /** The method and path of the call, e.g. `POST /v1/webhooks`. */
  readonly operation: string;
  /** The body as received: an ErrorBody, or the text of an answer that was not one (a proxy's page). */
  readonly body: unknown;

  constructor(init: {
    status: number;
    code?: number;
    errorCode: ErrorCode;
    message: string;
    requestId?: string;
    details?: Record<string, unknown>;
    retryAfter?: number;
    reason?: string;
    operation: string;
    body: unknown;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code ?? init.status;
    this.errorCode = init.errorCode;
    this.requestId = init.requestId;
    this.details = init.details;
    this.retryAfter = init.retryAfter;
    this.reason = init.reason;
    this.operation = init.operation;
    this.body = init.body;
  }
}

export const isServiceError = (err: unknown): err is ServiceError => err instanceof ServiceError;

/** What an answer without the service's error body (e.g. a proxy's 502 page) is called. */
const CODE_OF_STATUS: Record<number, KnownErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  410: 'GONE',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  431: 'HEADERS_TOO_LARGE',
  503: 'UNAVAILABLE',
};

/** `Retry-After` as seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false;
  const b = body as Record<string, unknown>;
  return typeof b.errorCode === 'string' && typeof b.message === 'string';
}

/** The ServiceError of an answer with status ≥ 400, from its (already read) body. */
export function serviceErrorFrom(response: Response, body: unknown, operation: string): ServiceError {
  const headerId = response.headers.get('x-request-id') ?? undefined;
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
  if (isErrorBody(body)) {
    return new ServiceError({
      status: response.status,
      code: typeof body.code === 'number' ? body.code : response.status,
      errorCode: body.errorCode,
      message: body.message,
      requestId: typeof body.requestId === 'string' ? body.requestId : headerId,
      details: body.details,
      retryAfter,
      reason: body.reason,
      operation,
      body,
    });
  }
  const text = typeof body === 'string' ? body.slice(0, 200) : '';
  return new ServiceError({
    status: response.status,
    errorCode: CODE_OF_STATUS[response.status] ?? (response.status >= 500 ? 'INTERNAL' : 'BAD_REQUEST'),
    message: `${operation} answered ${response.status} ${response.statusText}${text ? `: ${text}` : ''}`.trim(),
    requestId: headerId,
    retryAfter,
    operation,
    body,
  });
}
