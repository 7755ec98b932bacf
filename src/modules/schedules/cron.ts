/**
 * The cron of a schedule: parsed and stepped by `cron-parser` (the field's common library; no
 * parsing of our own), read in an IANA time zone. Here only what the library leaves open: the
 * expression must have exactly five fields (minute resolution; no seconds field, no `@daily`
 * nicknames, no Jenkins `H`), and the zone must be one the runtime knows.
 *
 * Daylight saving, as cron-parser steps it (and as Vixie cron does; tested in
 * test/schedules.test.ts): a wall-clock time the spring change skips runs once, an hour later
 * (02:30 → 03:30); a time the autumn change repeats runs once, at its first occurrence; an
 * expression with a wildcard or step in its hour field (`*\/30 * * * *`) keeps its real-time
 * cadence through both changes.
 */
import { CronExpressionParser } from 'cron-parser';
import { badRequest } from '../../platform/errors.ts';

/** A Jenkins-style hash (`H`, `H/5`, `H(0-29)`): cron-parser takes it and picks a random value. */
const HASH = /\bH\b/i;

/** A cron expression that can be stepped: from a checked one only (see `checkCron`). */
export interface Cron {
  expression: string;
  timezone: string;
}

/** Whether the runtime knows the IANA time zone (case as given). */
function knownZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** Checks an expression and zone as a request gives them; a 400 names what is wrong. */
export function checkCron(expression: string, timezone: string): Cron {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 || HASH.test(expression)) {
    throw badRequest(
      `cron "${expression}" must have five fields: minute hour day-of-month month day-of-week (e.g. "0 9 * * 1-5")`,
      { field: 'cron' },
    );
  }
  if (!knownZone(timezone)) {
    throw badRequest(`timezone "${timezone}" is not an IANA time zone (e.g. "UTC", "Europe/Berlin")`, {
      field: 'timezone',
    });
  }
  const cron = { expression: fields.join(' '), timezone };
  try {
    nextTick(cron, new Date());
  } catch (err) {
    throw badRequest(`cron "${expression}": ${(err as Error).message}`, { field: 'cron' });
  }
  return cron;
}

/** The first tick strictly after `after`. Throws when the expression never fires again. */
export function nextTick(cron: Cron, after: Date): Date {
  return CronExpressionParser.parse(cron.expression, { currentDate: after, tz: cron.timezone }).next().toDate();
}

/**
 * The latest tick at or before `at`, as `nextTick` steps (the ticks are what it answers).
 * cron-parser's prev() can land a day early across a spring change (02:30 on the day 02:30 is
 * skipped: it answers the day before, where next() answers 03:30), so its answer is only the
 * start: stepped forward with next() while still at or before `at`.
 */
export function latestTick(cron: Cron, at: Date): Date {
  // prev() answers the tick strictly before its start; a millisecond on includes `at` itself.
  const it = CronExpressionParser.parse(cron.expression, {
    currentDate: new Date(at.getTime() + 1),
    tz: cron.timezone,
  });
  let tick = it.prev().toDate();
  for (let i = 0; i < 100; i++) {
    const following = nextTick(cron, tick);
    if (following.getTime() > at.getTime()) break;
    tick = following;
  }
  return tick;
}
