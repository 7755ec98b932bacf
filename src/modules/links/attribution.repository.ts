/** SQL of attribution: a link's (or the collection's) conversions, events joined to their clicks. */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';

export interface ConversionRow {
  link_id: string;
  interaction_id: string;
  outcome: string | null;
  n: number;
  clicks: number;
  /** With `byRoute` only. */
  route?: string;
}

/** Rows of an answer, at most. */
const ROWS_MAX = 1000;

/**
 * Events in [from, to) carrying a click id of the collection's clicks (of one link, or all),
 * by link, interaction and outcome (and the clicks' route with `byRoute`). The events' side is
 * read through their click-id index (window included), each click looked up through its own
 * (0600); deleted events do not count.
 */
export async function conversionRows(
  db: Queryable,
  collectionId: string,
  q: { linkId?: string; byRoute?: boolean; from: Date; to: Date },
): Promise<ConversionRow[]> {
  const route = q.byRoute ? sql`, c.route` : sql``;
  const { rows } = await db.query<ConversionRow>(sql`
    SELECT c.link_id, e.interaction_id, e.outcome, count(*)::int AS n, count(DISTINCT e.click_id)::int AS clicks ${route}
    FROM interaction_events e
    JOIN link_clicks c ON c.collection_id = e.collection_id AND c.click_id = e.click_id
    WHERE e.collection_id = ${collectionId} AND e.click_id IS NOT NULL AND e.deleted_at IS NULL
      AND e.occurred_at >= ${q.from} AND e.occurred_at < ${q.to}
      ${q.linkId !== undefined ? sql`AND c.link_id = ${q.linkId}` : sql``}
    GROUP BY c.link_id, e.interaction_id, e.outcome ${route}
    ORDER BY n DESC, c.link_id, e.interaction_id, e.outcome NULLS FIRST ${route}
    LIMIT ${ROWS_MAX}`);
  return rows;
}
