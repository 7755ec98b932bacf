/** SQL of threads beyond the shared object SQL: the atomic reply append. */
import sql, { join } from 'sql-template-tag';
import type { Queryable } from '../../../db/index.ts';
import { THREAD } from '../shared/kinds.ts';
import { findObject, visibleTo } from '../shared/objects.repository.ts';
import type { Actor, Row } from '../shared/sections.ts';

/**
 * Appends one reply, increments replyCount and sets lastReplyAt in a single UPDATE: N
 * concurrent replies give N stored replies and replyCount N, on any number of connections.
 * The visibility rule is part of the WHERE, so a reply never lands on a thread the caller
 * cannot see. `undefined` when no row matched (missing, invisible, deleted, or full).
 */
export async function appendReply(
  q: Queryable,
  collectionId: string,
  appId: string,
  threadId: string,
  caller: Actor,
  reply: Record<string, unknown> & { at: string },
  maxReplies: number,
): Promise<Row | undefined> {
  const where = [
    sql`collection_id = ${collectionId}`,
    sql`app_id = ${appId}`,
    sql`id = ${threadId}`,
    ...visibleTo(caller),
    sql`deleted_at IS NULL`,
    sql`reply_count < ${maxReplies}`,
  ];
  const { rows } = await q.query<Row>(sql`
    UPDATE app_threads SET
      replies = replies || jsonb_build_array(${JSON.stringify(reply)}::jsonb),
      reply_count = reply_count + 1,
      last_reply_at = ${reply.at}::timestamptz,
      updated_at = now()
    WHERE ${join(where, ' AND ')}
    RETURNING *`);
  return rows[0];
}

export const findThread = (q: Queryable, collectionId: string, appId: string, id: string) =>
  findObject(q, THREAD, collectionId, appId, id);
