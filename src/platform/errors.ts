/**
 * The one error module. Every 4xx/5xx leaves the service as
 * `{ code, errorCode, message, details?, requestId }`, including Fastify's own errors
 * (unknown route, malformed JSON, body too large, wrong content type) and the database's
 * complaints about values a client sent. 5xx bodies never carry internals.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const ERROR_CODES = [
  'VALIDATION_FAILED',
  'BAD_REQUEST',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'GONE',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RATE_LIMITED',
  'NOT_READY',
  'INTERNAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorCode: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new AppError(400, 'BAD_REQUEST', message, details);
export const validationFailed = (errors: { path: string; message: string }[], message = 'Request validation failed') =>
  new AppError(400, 'VALIDATION_FAILED', message, { errors });
export const unauthorized = (message = 'A valid credential is required') => new AppError(401, 'UNAUTHORIZED', message);
/** The seed answers 401 to unauthorised calls too; errorCode tells the two apart. */
export const forbidden = (message = 'This credential may not perform this operation') =>
  new AppError(401, 'FORBIDDEN', message);
export const notFound = (what = 'Resource') => new AppError(404, 'NOT_FOUND', `${what} not found`);
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new AppError(409, 'CONFLICT', message, details);
export const gone = (message: string) => new AppError(410, 'GONE', message);

export interface ErrorBody {
  code: number;
  errorCode: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  requestId: string;
}

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  410: 'GONE',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  503: 'NOT_READY',
};

interface AjvLikeError {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
  keyword?: string;
}

function validationErrors(err: FastifyError): { path: string; message: string }[] {
  const part = (err as { validationContext?: string }).validationContext ?? 'body';
  return ((err.validation ?? []) as AjvLikeError[]).map((v) => {
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
  const status = typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || e instanceof SyntaxError) {
      return new AppError(400, 'BAD_REQUEST', 'The request body is not valid JSON');
    }
    return new AppError(status, STATUS_CODES[status] ?? 'BAD_REQUEST', e.message || 'Bad request');
  }
  return new AppError(500, 'INTERNAL', 'Internal server error');
}

export function errorBody(err: AppError, requestId: string): ErrorBody {
  const body: ErrorBody = { code: err.statusCode, errorCode: err.errorCode, message: err.message, requestId };
  if (err.details) body.details = err.details;
  return body;
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const appErr = toAppError(err);
    if (appErr.statusCode >= 500) req.log.error({ err }, 'request failed');
    else req.log.info({ errorCode: appErr.errorCode, message: appErr.message }, 'request refused');
    const headers = (err as { headers?: Record<string, string> })?.headers;
    if (headers) reply.headers(headers);
    reply.code(appErr.statusCode).type('application/json').send(errorBody(appErr, req.id));
  });
  app.setNotFoundHandler((req, reply) => {
    reply
      .code(404)
      .type('application/json')
      .send(
        errorBody(new AppError(404, 'NOT_FOUND', `Route ${req.method} ${req.url.split('?')[0]} not found`), req.id),
      );
  });
}
