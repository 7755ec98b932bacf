/**
 * A page of a list (`pageOf`), and with `pageWithTotal` how many rows match in all. The count rides along with the page
 * (`count(*) OVER ()`), one statement instead of two; only past the last page, where no row
 * carries it, does a second statement count. Each repository writes its own SQL: the columns,
 * the `FROM … WHERE …` and the order; this only puts the page and its count around them.
 */
import sql, { type Sql } from 'sql-template-tag';
import type { Queryable } from './client.ts';

export interface PageQuery {
  /** The columns of a row (`SELECT` list). */
  columns: Sql;
  /** `FROM … WHERE …`: the rows that match, counted as well as paged. */
  from: Sql;
  orderBy: Sql;
  limit: number;
  offset: number;
}

export async function pageWithTotal<R>(db: Queryable, q: PageQuery): Promise<{ rows: R[]; total: number }> {
  const { rows } = await db.query<R & { total?: number }>(sql`
    SELECT ${q.columns}, count(*) OVER () AS total ${q.from}
    ORDER BY ${q.orderBy} LIMIT ${q.limit} OFFSET ${q.offset}`);
  if (rows.length > 0 || q.offset === 0) return { rows, total: rows[0]?.total ?? 0 };
  const count = await db.query<{ total: number }>(sql`SELECT count(*) AS total ${q.from}`);
  return { rows, total: count.rows[0].total };
}

/** A page of a list, without its total. */
export async function pageOf<R>(db: Queryable, q: PageQuery): Promise<R[]> {
  const { rows } = await db.query<R>(sql`
    SELECT ${q.columns} ${q.from} ORDER BY ${q.orderBy} LIMIT ${q.limit} OFFSET ${q.offset}`);
  return rows;
}
