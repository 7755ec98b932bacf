/** Thread rules: public create (author and owner are the caller's own), owner edits, soft delete, atomic replies. */
import type { Db } from '../../../db/index.ts';
import { conflict, notFound, notPermitted } from '../../../platform/errors.ts';
import { THREAD } from '../shared/kinds.ts';
import { ObjectService, userIdentity } from '../shared/objects.service.ts';
import { type Actor, type AppObject, canSee, isAdmin } from '../shared/sections.ts';
import * as repo from './threads.repository.ts';
import type { CreateThreadInput, ReplyInput, ThreadListQuery, UpdateThreadInput } from './threads.schema.ts';

export class ThreadsService extends ObjectService<CreateThreadInput, UpdateThreadInput, ThreadListQuery> {
  constructor(
    db: Db,
    private readonly maxReplies: number,
  ) {
    super(db, THREAD);
  }

  /**
   * Anyone who can see the thread may reply. An admin may name the author (default: the
   * admin credential, authorType `admin`); a user's reply carries their own identity by the
   * rule of their creates (`userIdentity`): their own authorId, an authorType that is not staff.
   */
  async reply(collectionId: string, appId: string, id: string, caller: Actor, input: ReplyInput): Promise<AppObject> {
    const { at: _ignored, ...extra } = input;
    const entry: Record<string, unknown> & { at: string } = { ...extra, at: new Date().toISOString() };
    if (isAdmin(caller)) {
      entry.authorId = input.authorId ?? caller.actorId;
      entry.authorType = input.authorType ?? 'admin';
    } else {
      const { authorId, authorType } = userIdentity(caller, { authorId: input.authorId, authorType: input.authorType });
      entry.authorId = authorId;
      entry.authorType = authorType;
    }
    const row = await repo.appendReply(this.db, collectionId, appId, id, caller, entry, this.maxReplies);
    if (row) return this.present(row, caller);
    // Tell "full" apart from "not there" (404) and "not yours to see" (401), as other writes do.
    const existing = await repo.findThread(this.db, collectionId, appId, id);
    if (!existing || existing.deleted_at !== null || (!isAdmin(caller) && existing.visibility === 'admin')) {
      throw notFound('Thread');
    }
    if (!canSee(caller, existing)) throw notPermitted('Only users who can see this thread may reply to it');
    if ((existing.reply_count as number) >= this.maxReplies) {
      throw conflict(`This thread has reached its limit of ${this.maxReplies} replies`);
    }
    throw conflict('The thread changed while replying; retry');
  }
}
