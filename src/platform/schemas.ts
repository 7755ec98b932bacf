/**
 * Shared TypeBox shapes. Route schemas are the single source for validation,
 * serialisation, TypeScript types and the OpenAPI document.
 */
import { type TProperties, type TSchema, Type } from 'typebox';
import { SLUG_PATTERN } from './ids.ts';

/** A closed object: unknown fields are a 400, not silently dropped. */
export const Closed = <P extends TProperties>(properties: P, options: Record<string, unknown> = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options });

/** An open JSON object (the `data`, `owner`, `admin`, `metadata`, `payload` sections). */
export const OpenObject = (options: Record<string, unknown> = {}) =>
  Type.Record(Type.String(), Type.Unknown(), options);

export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const CollectionIdParam = Type.String({ pattern: SLUG_PATTERN, description: 'The collection (tenant) id' });

export const ErrorBody = Type.Object(
  {
    code: Type.Integer(),
    errorCode: Type.String(),
    message: Type.String(),
    details: Type.Optional(OpenObject()),
    requestId: Type.String(),
  },
  { $id: 'ErrorBody', description: 'The one error body of the service' },
);

const errorRef = (description: string) => ({ ...Type.Ref('ErrorBody'), description });

/** The error responses every route documents (seed 4.0: 400, 401, 404). */
export const errorResponses = {
  400: errorRef('Bad request: validation failed or a malformed body'),
  401: errorRef('Missing, invalid, or insufficient credential'),
  404: errorRef('Not found (also for resources of another collection)'),
  429: errorRef('Rate limited; see Retry-After'),
};

export const SuccessBody = Closed({ success: Type.Boolean() });
