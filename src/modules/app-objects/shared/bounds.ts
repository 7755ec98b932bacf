/**
 * Size bounds of app objects, in one place (docs/app-objects.md, "Bounds"). Without them any
 * user could grow a shared object without end: replies were one array on the thread and owner
 * PATCH merges (`data || $patch`) add keys, each request within the 1 MiB body limit (8 PATCHes
 * of 900 KB made a 6.9 MiB case; 60 replies a 54 MB thread).
 *
 * Sizes are measured as PostgreSQL prints the JSON, `octet_length(value::text)`: the merged
 * value exists only inside the UPDATE, so the database measures it, in the statement that
 * writes it, and concurrent writes cannot race past a bound. That text has a space after each
 * `:` and `,`, so it is at least the JSON the API answers and at most about 1.5 times it.
 * Measuring costs 1–3 ms per MB on PostgreSQL 15 (a 1 MB string 1 ms, 50,000 keys in 830 KB
 * 3.3 ms); `pg_column_size` was not used: it gives the compressed size of a stored value (a
 * 1 MB run of one letter is 11 KB), which says nothing about what a read answers.
 */
import { AppError } from '../../../platform/errors.ts';

/** One reply: the entry `{at, authorId, authorType, …extra}` as stored. */
export const REPLY_MAX_BYTES = 64 * 1024;

/**
 * One JSON column of an object after a write: the sections `data`, `owner`, `admin`, a
 * record's `metadata` and `facetRule`, a thread's `body` and `tags`.
 */
export const SECTION_MAX_BYTES = 1024 * 1024;

/** All JSON columns of one object together (its other fields are bounded by their schemas). */
export const OBJECT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * A JSON field of an object (a section, a thread's body, a record's metadata, a reply's own
 * fields) travels in a webhook event's `data` when it measures at most this (as
 * `JSON.stringify` writes it); a larger one is named in the event's `omitted` and read from
 * the API. An object may hold 4 MiB, and each event is written to the outbox and sent to
 * every subscribed registration: an event stays under about 100 KiB (5 fields of a record)
 * while the small sections most apps keep travel whole.
 */
export const EVENT_JSON_MAX_BYTES = 16 * 1024;

/** The latest replies a thread answers with; the rest are paged at `…/threads/{threadId}/replies`. */
export const THREAD_LATEST_REPLIES = 20;

/** The page size of `…/threads/{threadId}/replies`: default and most. */
export const REPLIES_PAGE_DEFAULT = 50;
export const REPLIES_PAGE_MAX = 200;

/** What a write past a bound was measured at, for the refusal (413) that names it. */
export interface Oversize {
  /** The field (`data`, `body`, …), `reply`, or `object` for the whole. */
  field: string;
  bytes: number;
  limit: number;
}

const kib = (n: number) => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n / 1024} KiB`);

/** The first bound a write would pass, from the sizes the database measured; undefined when none. */
export function firstOversize(
  sections: Record<string, number>,
  total: number | undefined,
  sectionLimit = SECTION_MAX_BYTES,
  objectLimit = OBJECT_MAX_BYTES,
): Oversize | undefined {
  for (const [field, bytes] of Object.entries(sections)) {
    if (bytes > sectionLimit) return { field, bytes, limit: sectionLimit };
  }
  if (total !== undefined && total > objectLimit) return { field: 'object', bytes: total, limit: objectLimit };
  return undefined;
}

/** The refusal's message: which bound, its size, and what to do. */
export function oversizeMessage(o: Oversize, what: string): string {
  if (o.field === 'reply') {
    return `A reply may hold at most ${kib(o.limit)} (this one: ${o.bytes} bytes); send a shorter reply, or link to large content`;
  }
  if (o.field === 'object') {
    return `A ${what} may hold at most ${kib(o.limit)} in its JSON fields together; after this write it would hold ${o.bytes} bytes. Nothing was written: remove keys (send them as null) or store large content elsewhere`;
  }
  return `${o.field} of a ${what} may hold at most ${kib(o.limit)}; after this write it would hold ${o.bytes} bytes. Nothing was written: remove keys (send them as null) or store large content elsewhere`;
}

/**
 * The refusal of a write past a size bound: 413 PAYLOAD_TOO_LARGE, as a body over the body
 * limit is, naming the field (`data`, `reply`, or `object` for the whole), the bound and the
 * size the write would have made. Nothing was written.
 */
export const tooLarge = (o: Oversize, what: string) =>
  new AppError(413, 'PAYLOAD_TOO_LARGE', oversizeMessage(o, what), {
    fields: [o.field],
    reason: o.field === 'object' ? 'object_too_large' : o.field === 'reply' ? 'reply_too_large' : 'section_too_large',
    limitBytes: o.limit,
    bytes: o.bytes,
  });
