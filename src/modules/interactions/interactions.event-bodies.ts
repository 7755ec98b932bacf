/**
 * What an event body holds besides its named fields: the collection it names, the anonymous
 * id (in two places), its extra fields, and the columns append and submit fill alike.
 */
import { badRequest, validationFailed } from '../../platform/errors.ts';
import {
  type AppendInteractionBody,
  EVENT_EXTRA_MAX_BYTES,
  type SubmitInteractionBody,
} from './interactions.schema.ts';

/** A body's `collectionId` is the original's required field; it must name the path's collection. */
export function checkCollection(collectionId: string, body: { collectionId?: string }) {
  if (body.collectionId !== undefined && body.collectionId !== collectionId) {
    throw validationFailed([{ path: 'body.collectionId', message: 'must equal the collectionId of the path' }]);
  }
}

/**
 * The anonymous id: `anonId`, or `metadata.anonId`, where clients of the original service put
 * it ("pass anonId inside metadata" for uniquePerAnonId). Both given must agree.
 */
export function anonIdOf(body: { anonId?: string; metadata?: Record<string, unknown> }): string | null {
  if (!body.metadata || !Object.hasOwn(body.metadata, 'anonId')) return body.anonId ?? null;
  const inMetadata = body.metadata.anonId;
  if (typeof inMetadata !== 'string' || inMetadata.length === 0 || inMetadata.length > 200) {
    throw validationFailed([{ path: 'body.metadata.anonId', message: 'must be a string of 1 to 200 characters' }]);
  }
  if (body.anonId !== undefined && body.anonId !== inMetadata) {
    throw validationFailed([{ path: 'body.anonId', message: 'must equal metadata.anonId when both are given' }]);
  }
  return inMetadata;
}

/**
 * The fields of a body its schema does not name, kept with the event and returned with it.
 * Names of row fields the service sets are refused: stored, they would never be seen.
 */
export function extrasOf(
  body: Record<string, unknown>,
  named: Record<string, unknown>,
  serviceSet: readonly string[],
): Record<string, unknown> | null {
  const extra = Object.entries(body).filter(([key]) => !Object.hasOwn(named, key));
  if (extra.length === 0) return null;
  const taken = extra.find(([key]) => serviceSet.includes(key));
  if (taken) throw validationFailed([{ path: `body.${taken[0]}`, message: 'is set by the service' }]);
  const extras = Object.fromEntries(extra);
  if (Buffer.byteLength(JSON.stringify(extras)) > EVENT_EXTRA_MAX_BYTES) {
    throw badRequest(
      `The fields other than the event's own take more than ${EVENT_EXTRA_MAX_BYTES} bytes as JSON; large data belongs in metadata`,
      { fields: extra.map(([key]) => key) },
    );
  }
  return extras;
}

/** The body's fields that append and submit store alike, each in the column of its name. */
const STORED_AS_IS = [
  'outcome',
  'scope',
  'broadcastId',
  'journeyId',
  'metadata',
  'orgId',
  'productId',
  'proofId',
  'variantId',
  'batchId',
  'eventType',
  'clickId',
] as const;
type EventBody = AppendInteractionBody | SubmitInteractionBody;
type StoredAsIs = { [K in (typeof STORED_AS_IS)[number]]: NonNullable<EventBody[K]> | null };

/** The columns append and submit fill alike from the body (null for a field not sent). */
export function bodyColumns(body: EventBody): StoredAsIs & { sourceTag: string | null } {
  const columns = Object.fromEntries(STORED_AS_IS.map((k) => [k, body[k] ?? null])) as StoredAsIs;
  return { ...columns, sourceTag: body.source ?? null };
}
