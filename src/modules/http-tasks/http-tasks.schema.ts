import { Type } from 'typebox';
import { HEADER_NAME } from '../../platform/outbound-http.ts';
import { Closed, Nullable, OpenObject, Timestamp } from '../../platform/schemas.ts';

/** Bounds of an `http` job's request (its payload is stored and shown with the job). */
export const HTTP_TASK_LIMITS = {
  urlLength: 2048,
  headers: 50,
  headerValueLength: 4096,
  /** A string body, in characters; a JSON body is bounded by the API's request size. */
  bodyLength: 262_144,
  defaultTimeoutMs: 10_000,
  maxTimeoutMs: 30_000,
  /** The answer kept in the job's result. */
  excerptBytes: 2048,
};

export const HttpTaskPayload = Closed({
  url: Type.String({
    minLength: 1,
    maxLength: HTTP_TASK_LIMITS.urlLength,
    description: 'An http(s) address; public unless WEBHOOK_ALLOW_PRIVATE_NETWORKS=true',
  }),
  method: Type.Optional(
    Type.Union(
      [Type.Literal('GET'), Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH'), Type.Literal('DELETE')],
      { default: 'POST' },
    ),
  ),
  headers: Type.Optional(
    Type.Record(
      Type.String({ pattern: HEADER_NAME.source }),
      Type.String({ maxLength: HTTP_TASK_LIMITS.headerValueLength }),
      {
        maxProperties: HTTP_TASK_LIMITS.headers,
        description: 'Sent as given, except the signature headers, which the service sets',
      },
    ),
  ),
  body: Type.Optional(
    Type.Union([Type.String({ maxLength: HTTP_TASK_LIMITS.bodyLength }), OpenObject(), Type.Array(Type.Unknown())], {
      description:
        'A string is sent as it is; an object or an array as JSON (content-type application/json unless given)',
    }),
  ),
  timeoutMs: Type.Optional(
    Type.Integer({
      minimum: 100,
      maximum: HTTP_TASK_LIMITS.maxTimeoutMs,
      default: HTTP_TASK_LIMITS.defaultTimeoutMs,
      description: 'From connect to the last byte of the answer',
    }),
  ),
});
export type HttpTaskPayload = Type.Static<typeof HttpTaskPayload>;

export const HttpTaskSecret = Closed(
  {
    secret: Type.String({ description: 'Signs every request of the collection’s http jobs (Standard Webhooks)' }),
    previousSecretExpiresAt: Nullable(Timestamp),
    createdAt: Timestamp,
    rotatedAt: Nullable(Timestamp),
  },
  { $id: 'HttpTaskSecret' },
);
export type HttpTaskSecret = Type.Static<typeof HttpTaskSecret>;
