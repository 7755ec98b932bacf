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
  if (poolOffset + ID_BYTES > pool.length) {
    pool = randomBytes(ID_BYTES * IDS_PER_POOL);
    poolOffset = 0;
  }
  const id = pool.toString('base64url', poolOffset, poolOffset + ID_BYTES);
  poolOffset += ID_BYTES;
  return `${prefix}_${id}`;
}

/** Identifiers that clients choose (collection ids, app ids): URL-safe, bounded. */
export const SLUG_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
/** The pattern's own bound, stated as maxLength too so that the OpenAPI document shows it. */
export const SLUG_MAX_LENGTH = 64;
