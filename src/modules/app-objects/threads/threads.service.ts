/**
 * Thread rules: public create (author and owner are the caller's own), owner edits, soft
 * delete, atomic replies. Replies are rows of their own (migration 0104): a thread answers
 * with its latest `THREAD_LATEST_REPLIES` of them and `replyCount`, the rest are paged by
 * `replies`, and each reply is bounded (`REPLY_MAX_BYTES`), so neither a reply nor a read of a
 * thread grows with the thread.
 */
import type { Db, Queryable } from '../../../db/index.ts';
import { conflict, notFound, notPermitted } from '../../../platform/errors.ts';
import type { EventPublisher } from '../../../platform/events.ts';
import { paging } from '../../../platform/schemas.ts';
import { REPLIES_PAGE_DEFAULT, REPLY_MAX_BYTES, THREAD_LATEST_REPLIES } from '../shared/bounds.ts';
import { THREAD } from '../shared/kinds.ts';
import { ObjectService, tooLarge, userIdentity } from '../shared/objects.service.ts';
import { type Actor, type AppObject, canSee, isAdmin, type Row } from '../shared/sections.ts';
import * as repo from './threads.repository.ts';
import type {
  CreateThreadInput,
  RepliesQuery,
  ReplyInput,
  ThreadListQuery,
  UpdateThreadInput,
} from './threads.schema.ts';

export class ThreadsService extends ObjectService<CreateThreadInput, UpdateThreadInput, ThreadListQuery> {
  constructor(
    db: Db,
    private readonly maxReplies: number,
    publisher?: EventPublisher,
  ) {
    super(db, THREAD, publisher);
  }

  /** Each thread with its latest replies, oldest first, as the original's `replies` array. */
  protected override async withDetails(q: Queryable, collectionId: string, rows: Row[]): Promise<Row[]> {
    const latest = await repo.latestReplies(
      q,
      collectionId,
      rows.map((r) => r.id),
      THREAD_LATEST_REPLIES,
    );
    return rows.map((r) => ({ ...r, replies: latest.get(r.id) ?? [] }));
  }

  /** A thread without its replies attached (a new one) answers an empty array, never null. */
  override present(row: Row, caller: Actor): AppObject {
    return super.present({ ...row, replies: row.replies ?? [] }, caller);
  }

  /**
   * Anyone who can see the thread may reply. An admin may name the author (default: the
   * admin credential, authorType `admin`); a user's reply carries their own identity by the
   * rule of their creates (`userIdentity`): their own authorId, an authorType that is not staff.
   * Answers the thread with its latest replies (the new one last, unless others came after it).
   * The reply and its `thread.replied` event commit together.
   */
  async reply(collectionId: string, appId: string, id: string, caller: Actor, input: ReplyInput): Promise<AppObject> {
    const { at: _ignored, ...extra } = input;
    const at = new Date().toISOString();
    let author: { authorId: string; authorType: string };
    if (isAdmin(caller)) {
      author = { authorId: input.authorId ?? caller.actorId, authorType: input.authorType ?? 'admin' };
    } else {
      const { authorId, authorType } = userIdentity(caller, { authorId: input.authorId, authorType: input.authorType });
      author = { authorId, authorType };
    }
    const entry: repo.ReplyEntry = { ...extra, at, ...author };
    const limits = { maxReplies: this.maxReplies, maxBytes: REPLY_MAX_BYTES };
    const row = await this.db.transaction(async (tx) => {
      const done = await repo.appendReply(tx, collectionId, appId, id, caller, entry, limits);
      if (!done) return undefined;
      await this.events.publish(tx, collectionId, [
        this.events.replied(done.thread, caller, { ...entry, seq: done.seq }),
      ]);
      return done.thread;
    });
    if (row) {
      const [detailed] = await this.withDetails(this.db, collectionId, [row]);
      return this.present(detailed, caller);
    }
    // Tell "not there" (404) and "not yours to see" (401) apart from "too large" (413) and
    // "full" (409), as other writes do.
    const existing = await repo.findThread(this.db, collectionId, appId, id);
    if (!existing || existing.deleted_at !== null || (!isAdmin(caller) && existing.visibility === 'admin')) {
      throw notFound('Thread');
    }
    if (!canSee(caller, existing)) throw notPermitted('Only users who can see this thread may reply to it');
    const bytes = await repo.replyBytes(this.db, entry);
    if (bytes > REPLY_MAX_BYTES) throw tooLarge({ field: 'reply', bytes, limit: REPLY_MAX_BYTES }, 'thread');
    if ((existing.reply_count as number) >= this.maxReplies) {
      throw conflict(`This thread has reached its limit of ${this.maxReplies} replies`);
    }
    throw conflict('The thread changed while replying; retry');
  }

  /**
   * A page of a thread's replies, for anyone who may read the thread (the same rule: 404
   * otherwise), in the list envelope every list answers: oldest first by default, as the
   * thread's `replies` array is ordered; `sort=at:desc` pages from the newest.
   */
  async replies(collectionId: string, appId: string, id: string, caller: Actor, query: RepliesQuery) {
    await this.readable(this.db, collectionId, appId, id, caller);
    const { limit, offset } = paging(query, REPLIES_PAGE_DEFAULT);
    const { entries, total } = await repo.pageReplies(this.db, collectionId, id, {
      limit,
      offset,
      descending: query.sort === 'at:desc',
    });
    return { data: entries, pagination: { total, limit, offset, hasMore: offset + entries.length < total } };
  }
}
