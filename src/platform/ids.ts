import { randomBytes } from 'node:crypto';

/**
 * Public identifiers: a short type prefix (so an id read in a log says what it is, as
 * Stripe's do) and 96 random bits in base64url. Random rather than sequential so ids do
 * not reveal volumes or let one tenant guess another's.
 */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url')}`;
}

/** Identifiers that clients choose (collection ids, app ids): URL-safe, bounded. */
export const SLUG_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
/** The pattern's own bound, stated as maxLength too so that the OpenAPI document shows it. */
export const SLUG_MAX_LENGTH = 64;
