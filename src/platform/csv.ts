/**
 * CSV cells and lines as every export of the service writes them (RFC 4180 quoting), with one
 * guard: a cell a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or a carriage
 * return first) is prefixed with `'` (CSV injection), since exports hold what visitors and
 * clients typed. Dates are ISO 8601, objects JSON, null and undefined empty.
 */
const FORMULA = /^[=+\-@\t\r]/;
const QUOTED = /[",\r\n]/;

export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const safe = FORMULA.test(s) ? `'${s}` : s;
  return QUOTED.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** A line of cells, ended by `eol` (`\n` unless a format asks for `\r\n`). */
export const csvLine = (cells: readonly unknown[], eol = '\n'): string => `${cells.map(csvCell).join(',')}${eol}`;
