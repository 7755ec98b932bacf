/**
 * SQL of threads beyond the shared object SQL: replies, one row each in `app_thread_replies`
 * (migration 0104), appended with the thread's counters in one statement, read latest first
 * for the thread and in pages for the replies route.
 */
import sql, { join, raw } from 'sql-template-tag';
import type { Queryable } from '../../../db/index.ts';
import { THREAD } from '../shared/kinds.ts';
import { findObject, visibleTo } from '../shared/objects.repository.ts';
import type { Actor, Row } from '../shared/sections.ts';

/** A stored reply as the API answers it: `{at, authorId, authorType, …extra}`, the original's entry. */
export type ReplyEntry = Record<string, unknown> & { at: string; authorId: string; authorType: string };

interface ReplyRow {
  thread_id: string;
  seq: number;
  at: Date;
  author_id: string;
  author_type: string;
  extra: Record<string, unknown>;
}

/** The extra fields first, so that the three every reply has win, as they did in the array. */
const entryOf = (r: ReplyRow): ReplyEntry => ({
  ...r.extra,
  at: r.at.toISOString(),
  authorId: r.author_id,
  authorType: r.author_type,
});

/**
 * Appends one reply: increments the thread's replyCount, sets lastReplyAt and inserts the reply
 * numbered with the new count, in one statement. The UPDATE locks the thread's row, so N
 * concurrent replies get numbers 1..N and replyCount N, on any number of connections. The
 * visibility rule, the reply limit and the reply's size bound (measured as PostgreSQL prints
 * the entry, as the object bounds are) are part of the WHERE: a reply never lands on a thread
 * the caller cannot see, past the limit, or past the bound. `undefined` when nothing was
 * written (`replyBytes` and `findThread` tell why). Answers the thread's row and the reply's
 * number (`seq`, 1 the first).
 */
export async function appendReply(
  q: Queryable,
  collectionId: string,
  appId: string,
  threadId: string,
  caller: Actor,
  reply: ReplyEntry,
  limits: { maxReplies: number; maxBytes: number },
): Promise<{ thread: Row; seq: number } | undefined> {
  const { at, authorId, authorType, ...extra } = reply;
  const where = [
    sql`collection_id = ${collectionId}`,
    sql`app_id = ${appId}`,
    sql`id = ${threadId}`,
    ...visibleTo(caller),
    sql`deleted_at IS NULL`,
    sql`reply_count < ${limits.maxReplies}`,
    sql`octet_length((${JSON.stringify(reply)}::jsonb)::text) <= ${limits.maxBytes}`,
  ];
  // A data-modifying WITH runs once, whether or not the outer SELECT reads it.
  const { rows } = await q.query<Row & { _seq: number }>(sql`
    WITH t AS (
      UPDATE app_threads SET
        reply_count = reply_count + 1,
        last_reply_at = ${at}::timestamptz,
        updated_at = now()
      WHERE ${join(where, ' AND ')}
      RETURNING *
    ), r AS (
      INSERT INTO app_thread_replies (collection_id, thread_id, seq, at, author_id, author_type, extra)
      SELECT collection_id, id, reply_count, ${at}::timestamptz, ${authorId}, ${authorType}, ${JSON.stringify(extra)}::jsonb
      FROM t
      RETURNING seq
    )
    SELECT t.*, r.seq AS _seq FROM t JOIN r ON true`);
  if (!rows[0]) return undefined;
  const { _seq, ...thread } = rows[0];
  return { thread: thread as Row, seq: Number(_seq) };
}

/** A reply's size as the bound measures it (for the refusal that names it). */
export async function replyBytes(q: Queryable, reply: ReplyEntry): Promise<number> {
  const { rows } = await q.query<{ n: number }>(sql`SELECT octet_length((${JSON.stringify(reply)}::jsonb)::text) AS n`);
  return Number(rows[0].n);
}

/**
 * The latest `n` replies of each thread, oldest first within each: one index scan per thread
 * (a LATERAL join with LIMIT on the primary key), however many replies a thread holds.
 */
export async function latestReplies(
  q: Queryable,
  collectionId: string,
  threadIds: string[],
  n: number,
): Promise<Map<string, ReplyEntry[]>> {
  const out = new Map<string, ReplyEntry[]>(threadIds.map((id) => [id, []]));
  if (threadIds.length === 0 || n <= 0) return out;
  const { rows } = await q.query<ReplyRow>(sql`
    SELECT r.* FROM unnest(${threadIds}::text[]) AS t(id)
    CROSS JOIN LATERAL (
      SELECT thread_id, seq, at, author_id, author_type, extra FROM app_thread_replies
      WHERE collection_id = ${collectionId} AND thread_id = t.id
      ORDER BY seq DESC LIMIT ${n}
    ) r
    ORDER BY r.thread_id, r.seq`);
  for (const r of rows) out.get(r.thread_id)?.push(entryOf(r));
  return out;
}

/**
 * One page of a thread's replies in `seq` order (the order they were stored), and how many it
 * holds. New replies go after the last, so ascending pages never repeat or skip one.
 */
export async function pageReplies(
  q: Queryable,
  collectionId: string,
  threadId: string,
  page: { limit: number; offset: number; descending: boolean },
): Promise<{ entries: ReplyEntry[]; total: number }> {
  const dir = raw(page.descending ? 'DESC' : 'ASC');
  const { rows } = await q.query<ReplyRow>(sql`
    SELECT thread_id, seq, at, author_id, author_type, extra FROM app_thread_replies
    WHERE collection_id = ${collectionId} AND thread_id = ${threadId}
    ORDER BY seq ${dir} LIMIT ${page.limit} OFFSET ${page.offset}`);
  const count = await q.query<{ total: number }>(sql`
    SELECT count(*) AS total FROM app_thread_replies WHERE collection_id = ${collectionId} AND thread_id = ${threadId}`);
  return { entries: rows.map(entryOf), total: Number(count.rows[0].total) };
}

export const findThread = (q: Queryable, collectionId: string, appId: string, id: string) =>
  findObject(q, THREAD, collectionId, appId, id);
