/** SQL conditions and assignments put together from the filters and fields a call gives. */
import { join, type Sql } from 'sql-template-tag';

/** What `cond && sql\`…\`` gives for a filter the query did not ask for. */
type Absent = false | '' | null | undefined;

/**
 * `a AND b AND …` of the conditions given, the absent ones left out, so that a list query
 * reads as the list of its filters. The first is the tenant's, so one always remains.
 */
export function allOf(first: Sql, ...more: (Sql | Absent)[]): Sql {
  return join([first, ...more.filter((c): c is Sql => Boolean(c))], ' AND ');
}

/**
 * `a = …, b = …` of the assignments given, the absent ones (fields the patch leaves alone)
 * left out. The first is always set (`updated_at = now()`), so one always remains.
 */
export function setList(first: Sql, ...more: (Sql | Absent)[]): Sql {
  return join([first, ...more.filter((c): c is Sql => Boolean(c))], ', ');
}
