/**
 * The one error module. Every 4xx/5xx leaves the service as
 * `{ code, errorCode, message, details?, requestId }`, including Fastify's own errors
 * (unknown route, malformed JSON, body too large, wrong content type) and the database's
 * complaints about values a client sent. 5xx bodies never carry internals.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES as HTTP_STATUS, maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isTransient } from '../db/index.ts';

/**
 * Seconds a client is asked to wait after a 503 caused by the database (a lost connection, a
 * restart, a deadlock victim): long enough for a pool to reconnect, short enough that a retry
 * after a blip succeeds at once.
 */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

export const ERROR_CODES = [
  'VALIDATION_FAILED',
  'BAD_REQUEST',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'REQUEST_TIMEOUT',
  'CONFLICT',
  'GONE',
  'PAYLOAD_TOO_LARGE',
  'URI_TOO_LONG',
  'UNSUPPORTED_MEDIA_TYPE',
  'HEADERS_TOO_LARGE',
  'RATE_LIMITED',
  'NOT_READY',
  'UNAVAILABLE',
  'INTERNAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * A refusal clients branch on by name: the body repeats `error` and `reason` at its top level
 * (next to `details.error` and `details.reason`), the shape clients of the original service
 * read a refused interaction submit in (`{error: 'FORBIDDEN', reason}`).
 */
export interface Refusal {
  error: string;
  reason: string;
}

export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorCode: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly refusal?: Refusal,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new AppError(400, 'BAD_REQUEST', message, details);
export const validationFailed = (errors: { path: string; message: string }[], message = 'Request validation failed') =>
  new AppError(400, 'VALIDATION_FAILED', message, { errors });
export const unauthorized = (message = 'A valid credential is required') => new AppError(401, 'UNAUTHORIZED', message);
/**
 * A valid credential that may not do this: still 401, since the interface answers 401 for
 * both "who are you?" and "not you" (docs/auth.md); errorCode FORBIDDEN tells them apart.
 */
export const notPermitted = (message = 'This credential may not perform this operation') =>
  new AppError(401, 'FORBIDDEN', message);
export const notFound = (what = 'Resource') => new AppError(404, 'NOT_FOUND', `${what} not found`);
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new AppError(409, 'CONFLICT', message, details);
export const gone = (message: string) => new AppError(410, 'GONE', message);
/** A refusal named by `reason`, in `details` and at the top level of the body (see `Refusal`). */
export const refused = (statusCode: number, errorCode: ErrorCode, message: string, refusal: Refusal) =>
  new AppError(statusCode, errorCode, message, { ...refusal }, refusal);
/** The database is away or the transaction lost a race: nothing was changed; retry shortly. */
export const unavailable = (message = 'The service is briefly unavailable (database); retry shortly') =>
  new AppError(503, 'UNAVAILABLE', message);

export interface ErrorBody {
  code: number;
  errorCode: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  requestId: string;
  /** Only on a refusal (`Refusal`): its kind, e.g. FORBIDDEN. */
  error?: string;
  /** Only on a refusal (`Refusal`): why, e.g. duplicate. */
  reason?: string;
}

const STATUS_CODES: Record<number, ErrorCode> = {
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
  503: 'NOT_READY',
};

interface AjvLikeError {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
  keyword?: string;
}

/** Validation errors listed in one answer; a query string can break many rules at once. */
const MAX_LISTED_ERRORS = 10;

function validationErrors(err: FastifyError): { path: string; message: string }[] {
  const part = (err as { validationContext?: string }).validationContext ?? 'body';
  return ((err.validation ?? []) as AjvLikeError[]).slice(0, MAX_LISTED_ERRORS).map((v) => {
    let path = `${part}${(v.instancePath ?? '').replace(/\//g, '.')}`;
    if (v.keyword === 'additionalProperties' && v.params?.additionalProperty) {
      path = `${path}.${String(v.params.additionalProperty)}`;
      return { path, message: 'unknown field' };
    }
    if (v.keyword === 'required' && v.params?.missingProperty) {
      path = `${path}.${String(v.params.missingProperty)}`;
      return { path, message: 'is required' };
    }
    return { path, message: v.message ?? 'is invalid' };
  });
}

/** PostgreSQL SQLSTATE classes that mean "the value the client sent is not acceptable". */
function fromDatabase(err: { code?: unknown }): AppError | undefined {
  const code = typeof err.code === 'string' ? err.code : '';
  if (!/^[0-9A-Z]{5}$/.test(code)) return undefined;
  if (code === '23505') return conflict('A resource with the same unique value already exists');
  if (code.startsWith('22')) return badRequest('A value in the request is out of range or malformed');
  if (code === '23503') return badRequest('A referenced resource does not exist');
  return undefined;
}

export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as FastifyError & { code?: string };
  if (e?.validation) return validationFailed(validationErrors(e));
  const fromDb = fromDatabase(e ?? {});
  if (fromDb) return fromDb;
  if (isTransient(e)) return unavailable();
  const status = typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || e instanceof SyntaxError) {
      return new AppError(400, 'BAD_REQUEST', 'The request body is not valid JSON');
    }
    return new AppError(status, STATUS_CODES[status] ?? 'BAD_REQUEST', e.message || 'Bad request');
  }
  return new AppError(500, 'INTERNAL', 'Internal server error');
}

/*
 * An error body stays small whatever the request held: messages and details often quote
 * what the caller sent (an unknown field's name, a value), and a caller controls its length.
 * Strings are clipped, lists shortened, and details that still serialise large (e.g. text
 * of control characters, which JSON escapes to six bytes each) are replaced by a marker.
 * Worst case: 500 chars × 6 bytes of message + 8 KiB of details, well under 16 KiB.
 */
const MAX_MESSAGE_CHARS = 500;
const MAX_DETAIL_CHARS = 200;
const MAX_DETAIL_ITEMS = 20;
const MAX_DETAILS_BYTES = 8 * 1024;

const clip = (s: string, max: number) => (s.length > max ? `${s.slice(0, max)}…` : s);

function bounded(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return clip(v, MAX_DETAIL_CHARS);
  if (v === null || typeof v !== 'object') return v;
  if (depth >= 4) return '…';
  if (Array.isArray(v)) return v.slice(0, MAX_DETAIL_ITEMS).map((x) => bounded(x, depth + 1));
  return Object.fromEntries(
    Object.entries(v)
      .slice(0, MAX_DETAIL_ITEMS)
      .map(([k, x]) => [clip(k, MAX_DETAIL_CHARS), bounded(x, depth + 1)]),
  );
}

export function errorBody(err: AppError, requestId: string): ErrorBody {
  const message = clip(err.message, MAX_MESSAGE_CHARS);
  const body: ErrorBody = { code: err.statusCode, errorCode: err.errorCode, message, requestId };
  if (err.details) {
    const details = bounded(err.details, 0) as Record<string, unknown>;
    body.details = Buffer.byteLength(JSON.stringify(details)) <= MAX_DETAILS_BYTES ? details : { truncated: true };
  }
  if (err.refusal) {
    body.error = clip(err.refusal.error, MAX_DETAIL_CHARS);
    body.reason = clip(err.refusal.reason, MAX_DETAIL_CHARS);
  }
  return body;
}

function answer(req: FastifyRequest, reply: FastifyReply, err: unknown, appErr: AppError): void {
  if (appErr.statusCode === 503) req.log.warn({ err }, 'request failed: service unavailable');
  else if (appErr.statusCode >= 500) req.log.error({ err }, 'request failed');
  else req.log.info({ errorCode: appErr.errorCode, message: appErr.message }, 'request refused');
  if (appErr.statusCode === 503 && !reply.hasHeader('retry-after')) {
    reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
  }
  reply.code(appErr.statusCode).type('application/json').send(errorBody(appErr, req.id));
}

/** `onNotFound`: told of each request no route matched (the metrics count them). */
export function registerErrorHandling(
  app: FastifyInstance,
  onNotFound?: (req: FastifyRequest, reply: FastifyReply) => void,
): void {
  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const headers = (err as { headers?: Record<string, string> })?.headers;
    if (headers) reply.headers(headers);
    answer(req, reply, err, toAppError(err));
  });
  app.setNotFoundHandler((req, reply) => {
    onNotFound?.(req, reply);
    reply
      .code(404)
      .type('application/json')
      .send(
        errorBody(new AppError(404, 'NOT_FOUND', `Route ${req.method} ${req.url.split('?')[0]} not found`), req.id),
      );
  });
}

/**
 * Node's HTTP parser refuses some requests before Fastify sees them (a request line and
 * headers over `maxHeaderSize`, malformed HTTP, a request not received within the server's
 * timeouts). Fastify's `clientErrorHandler` option: the answer is the same body as every
 * other error, written straight to the socket, which is then closed.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection is gone: there is nobody to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const appErr = fromClientError(err);
  const requestId = randomUUID();
  this.log.info({ requestId, errorCode: appErr.errorCode, reason: err.code }, 'request refused by the HTTP parser');
  // As Node's own handler: write only when no response of this connection has begun, so that
  // a half-written answer is never followed by a second one.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const body = JSON.stringify(errorBody(appErr, requestId));
    socket.write(
      `HTTP/1.1 ${appErr.statusCode} ${HTTP_STATUS[appErr.statusCode]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

function fromClientError(err: NodeJS.ErrnoException): AppError {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError(408, 'REQUEST_TIMEOUT', 'The request was not received in time');
    case 'HPE_HEADER_OVERFLOW':
      return new AppError(
        431,
        'HEADERS_TOO_LARGE',
        `The request line and headers are larger than ${maxHeaderSize} bytes (a URL that long is refused too)`,
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError(413, 'PAYLOAD_TOO_LARGE', 'The chunk extensions of the request body are too large');
    default:
      return badRequest('The request is not valid HTTP/1.1');
  }
}

/**
 * Fastify's `frameworkErrors` option: errors its router raises before any route or hook runs
 * (a path that is not valid percent-encoding, a path parameter over `maxParamLength`).
 */
export function frameworkErrorHandler(maxParamLength: number) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    let appErr: AppError;
    if (err.code === 'FST_ERR_BAD_URL') appErr = badRequest('The URL path is not valid percent-encoded UTF-8');
    else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
      appErr = new AppError(414, 'URI_TOO_LONG', `A path segment is longer than ${maxParamLength} characters`);
    } else appErr = toAppError(err);
    // No onRequest hook ran for this request, so the request id header is set here.
    reply.header('x-request-id', req.id);
    answer(req, reply, err, appErr);
  };
}
