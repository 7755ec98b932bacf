/**
 * A type's permissions as every part reads them: whether it is enabled, whether a new set is
 * valid to store, and the refusal that names why a public call was not allowed.
 */
import { type AppError, badRequest, refused, validationFailed } from '../../platform/errors.ts';
import { unmatchableOrigin } from './interactions.origins.ts';
import type { InteractionPermissions } from './interactions.schema.ts';

/**
 * Why a public call was refused; stable names clients branch on. A refused submit is named as
 * clients of the original service know it (its `SubmitInteractionError.reason`): `disabled`,
 * `not_public`, `auth_required`, `origin_forbidden`, `before_start`, `after_end`, `duplicate`,
 * `duplicate_anon`. The rest name refusals it has no name for.
 */
export type RefusalReason =
  | 'disabled'
  | 'not_public'
  | 'auth_required'
  | 'origin_forbidden'
  | 'before_start'
  | 'after_end'
  | 'duplicate'
  | 'duplicate_anon'
  | 'identity_mismatch'
  | 'own_read_not_allowed'
  | 'summary_not_allowed';

/**
 * Every refusal is `error: FORBIDDEN` with its reason. The status follows the interface: 401
 * for a caller who may not do this (UNAUTHORIZED when a user token would help), 409 for a
 * duplicate, which other credentials would not make acceptable.
 */
export function refusal(reason: RefusalReason, message: string): AppError {
  const named = { error: 'FORBIDDEN', reason };
  if (reason === 'duplicate' || reason === 'duplicate_anon') return refused(409, 'CONFLICT', message, named);
  return refused(401, reason === 'auth_required' ? 'UNAUTHORIZED' : 'FORBIDDEN', message, named);
}

/** "Enabled" means permissions.enabled is not false. */
export const enabled = (p: InteractionPermissions) => p.enabled !== false;

/**
 * Checks on permissions about to be stored: a window that holds at least one instant (startAt
 * is included and so is endAt, so they may be equal), and allowedOrigins entries that can
 * each match some origin (an entry that could match none is a mistake better told at once).
 */
export function checkPermissions(p: {
  startAt?: string | null;
  endAt?: string | null;
  allowedOrigins?: string[] | null;
}) {
  if (p.startAt && p.endAt && Date.parse(p.startAt) > Date.parse(p.endAt)) {
    throw badRequest('permissions.startAt must not be after permissions.endAt', {
      fields: ['permissions.startAt', 'permissions.endAt'],
    });
  }
  const bad = p.allowedOrigins ? unmatchableOrigin(p.allowedOrigins) : -1;
  if (bad >= 0) {
    throw validationFailed([
      {
        path: `body.permissions.allowedOrigins.${bad}`,
        message:
          'must be *, an origin (https://shop.example.com, https://*.example.com) or a host (shop.example.com, *.example.com), with an optional port',
      },
    ]);
  }
}
