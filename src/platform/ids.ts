import { randomBytes } from 'node:crypto';

const ID_BYTES = 12;
/**
 * Random bytes are drawn for 256 ids at a time, as Node's randomUUID does: a call into the
 * CSPRNG per id took 2 % of a webhook worker's CPU at thousands of deliveries a second. Each
 * byte still serves one id only.
 */
const IDS_PER_POOL = 256;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/**
 * Public identifiers: a short type prefix (so an id read in a log says what it is, as
 * Stripe's do) and 96 random bits in base64url. Random rather than sequential so ids do
 * not reveal volumes or let one tenant guess another's.
 */
export function newId(prefix: string): string {
  return `${prefix}_${randomPart()}`;
}

/** 96 random bits, base64url (16 characters). */
function randomPart(): string {
  if (poolOffset + ID_BYTES > pool.length) {
    pool = randomBytes(ID_BYTES * IDS_PER_POOL);
    poolOffset = 0;
  }
  const part = pool.toString('base64url', poolOffset, poolOffset + ID_BYTES);
  poolOffset += ID_BYTES;
  return part;
}

/** Width of the time part of `newTimeOrderedId`: base 36 milliseconds fit 9 digits until the year 5188. */
const TIME_DIGITS = 9;

/**
 * An id that sorts by its creation time, for rows written at a high rate into a table keyed by
 * it (webhook events and deliveries, interaction events' generated ids): the creation time in
 * milliseconds (9 base-36 digits, lowercase, so the order is the same under the C collation and
 * any other that sorts digits before letters), then the same 96 random bits as `newId`. A
 * B-tree keyed by random ids takes each insert at a random leaf, and once the index outgrows
 * the cache each costs a page read, and after each checkpoint a full-page image in the WAL;
 * these land at its right-hand end.
 * They reveal when a row was made (as the row's own timestamps do), not how many there are, and
 * are no easier to guess. Svix's message ids (KSUIDs) sort by time for the same reason.
 */
export function newTimeOrderedId(prefix: string, now = Date.now()): string {
  const time = now.toString(36).padStart(TIME_DIGITS, '0');
  return `${prefix}_${time}${randomPart()}`;
}

/** Identifiers that clients choose (collection ids, app ids): URL-safe, bounded. */
export const SLUG_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
/** The pattern's own bound, stated as maxLength too so that the OpenAPI document shows it. */
export const SLUG_MAX_LENGTH = 64;
