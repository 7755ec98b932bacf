/**
 * Points in time as clients write them. Requests may give an ISO 8601 calendar date
 * (`2026-11-21`) or a date-time with or without seconds, a fraction or an offset
 * (`2026-11-21T10:00Z`, `2026-11-21T10:00:00.5+01:00`); responses always carry full RFC 3339
 * in UTC (`2026-11-21T10:00:00.000Z`).
 *
 * Two rules fill in what such a text leaves open:
 * - A date-time without an offset is UTC: timestamps in this service are UTC, and a server has
 *   no idea of the caller's local zone.
 * - A date alone names a whole day. As the start of a window (or a point in time) it is that
 *   day's first instant; as the end of a window it includes that whole day, so it stands for
 *   the next day's first instant, window ends in this service being exclusive. `to: '2026-11-24'`
 *   therefore covers all of the 24th. An end that is itself included (an interaction type's
 *   `endAt`: "up to and including") stands for the day's last millisecond instead, which
 *   covers the same day and nothing of the next.
 *
 * Request schemas mark such fields with `Instant()` (platform/schemas.ts); the validator
 * rewrites the value in place to the normalised RFC 3339 text (the `x-instant` keyword,
 * platform/validation.ts), so services and repositories only ever see full instants.
 */

/**
 * Which end of a window a field is: decides what a date alone stands for. `end` is an
 * exclusive end (the next day's first instant), `last` an inclusive one (the day's last
 * millisecond).
 */
export type InstantEdge = 'start' | 'end' | 'last';

/** The schema keyword that marks an instant field and names its edge. */
export const INSTANT_KEYWORD = 'x-instant';

/** Longest text accepted (`2024-01-01T00:00:00.123456789+01:00` is 35). */
export const INSTANT_MAX_LENGTH = 64;

/**
 * ISO 8601 extended format, date or date-time (`T`, `t` or a space between them, as RFC 3339
 * allows), minutes required, seconds and fraction optional, offset `Z`, `±HH`, `±HHMM` or
 * `±HH:MM` optional. Ranges (month 13, 30 February) are checked after the match.
 */
const SHAPE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

const DAY_MS = 86_400_000;

/** Where in its day a date alone falls, by edge. */
const DATE_ALONE_SHIFT: Record<InstantEdge, number> = { start: 0, end: DAY_MS, last: DAY_MS - 1 };

/**
 * The instant a text names, or undefined when it is not an ISO 8601 date or date-time of a
 * real day and time (years 0001 to 9999).
 */
export function parseInstant(text: string, edge: InstantEdge = 'start'): Date | undefined {
  if (text.length > INSTANT_MAX_LENGTH) return undefined;
  const m = SHAPE.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  // Date.UTC maps years 0 to 99 onto 1900 to 1999; setUTCFullYear does not.
  const midnight = new Date(0);
  midnight.setUTCFullYear(year, month - 1, day);
  if (h === undefined) return inRange(new Date(midnight.getTime() + DATE_ALONE_SHIFT[edge]));
  const hour = Number(h);
  const minute = Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (zone !== undefined && sign !== undefined) {
    const offH = Number(oh);
    const offM = om === undefined ? 0 : Number(om);
    if (offH > 23 || offM > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM);
  }
  // Milliseconds are what a timestamp here keeps; finer digits are dropped, not rounded up
  // into the next second.
  const ms = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, '0'));
  return inRange(new Date(midnight.getTime() + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + ms));
}

/** An offset or a day's end can step past year 9999, which RFC 3339 text cannot write. */
function inRange(d: Date): Date | undefined {
  const year = d.getUTCFullYear();
  return year >= 1 && year <= 9999 ? d : undefined;
}

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** True when the text is a date alone (`2026-11-21`), which names a whole day. */
export const isDateOnly = (text: string): boolean => /^\d{4}-\d{2}-\d{2}$/.test(text);

/**
 * What the API's validator does to a request (platform/validation.ts), for a value checked by
 * TypeBox instead (a task payload, an item of an import): each `Instant()` field of a value
 * that already passed its schema is replaced by its full RFC 3339 text. Returns the JSON
 * pointer of the first one that names no real day or time, or undefined when all are good.
 */
export function normaliseInstants(schema: unknown, value: unknown, path = ''): string | undefined {
  const s = schema as { properties?: Record<string, unknown>; items?: unknown };
  if (Array.isArray(value) && s.items) {
    for (const [i, item] of value.entries()) {
      const bad = normaliseInstants(s.items, item, `${path}/${i}`);
      if (bad !== undefined) return bad;
    }
    return undefined;
  }
  if (!s.properties || typeof value !== 'object' || value === null) return undefined;
  const obj = value as Record<string, unknown>;
  for (const [key, sub] of Object.entries(s.properties)) {
    if (!Object.hasOwn(obj, key)) continue;
    const edge = instantEdgeOf(sub);
    if (edge !== undefined && typeof obj[key] === 'string') {
      const instant = parseInstant(obj[key], edge);
      if (!instant) return `${path}/${key}`;
      obj[key] = instant.toISOString();
    } else {
      const bad = normaliseInstants(sub, obj[key], `${path}/${key}`);
      if (bad !== undefined) return bad;
    }
  }
  return undefined;
}

/** The edge of an instant field, also when it may be null (`Nullable(Instant())` is an anyOf). */
function instantEdgeOf(schema: unknown): InstantEdge | undefined {
  const s = schema as Record<string, unknown>;
  if (typeof s[INSTANT_KEYWORD] === 'string') return s[INSTANT_KEYWORD] as InstantEdge;
  const branches = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  return branches?.map(instantEdgeOf).find((e) => e !== undefined);
}
