/**
 * Case rules: public create (owner from the token), owner PATCH of `data`/`owner` only,
 * admin PATCH of anything, soft delete, history entries, the audit trail of every change,
 * summaries and related objects. Every change and its audit row commit together.
 */
import type { Db, Queryable } from '../../../db/index.ts';
import { badRequest, notFound } from '../../../platform/errors.ts';
import type { EventPublisher } from '../../../platform/events.ts';
import { isoWeek } from '../shared/aggregate.ts';
import { EVENT_JSON_MAX_BYTES, THREAD_LATEST_REPLIES } from '../shared/bounds.ts';
import { CASE, RECORD, THREAD } from '../shared/kinds.ts';
import type { Condition, ListSpec } from '../shared/list-query.ts';
import * as objects from '../shared/objects.repository.ts';
import { type ChangeEvent, ObjectService, userIdentity } from '../shared/objects.service.ts';
import { type Actor, isAdmin, present, seesAdminSection } from '../shared/sections.ts';
import { latestReplies } from '../threads/threads.repository.ts';
import * as repo from './cases.repository.ts';
import type { AppendHistoryInput, CaseListQuery, CreateCaseInput, UpdateCaseInput } from './cases.schema.ts';

export const HISTORY_LIMIT = 1000;
export const RELATED_LIMIT = 500;

const actor = (c: Actor) => ({ actorId: c.actorId, actorRole: c.role });

/** Apps GET .../case-apps lists at most. */
const APPS_LISTED = 200;

export class CasesService extends ObjectService<CreateCaseInput, UpdateCaseInput, CaseListQuery> {
  constructor(db: Db, publisher?: EventPublisher) {
    super(db, CASE, publisher);
  }

  /**
   * Users open cases for themselves: the owner is the token's contact (a `contactId` sent must
   * be it, see `userIdentity`), the initial status is theirs to give (default `open`), the
   * assignee is for admins only (400).
   */
  protected override createValues(_collectionId: string, caller: Actor, input: CreateCaseInput) {
    const values: Record<string, unknown> = { ...input };
    if (isAdmin(caller)) return values;
    if (input.assignedTo !== undefined) {
      throw badRequest('assignedTo can only be set by admins', { fields: ['assignedTo'] });
    }
    if (input.visibility === 'admin')
      throw badRequest('visibility "admin" can only be set by admins', { fields: ['visibility'] });
    delete values.admin;
    values.contactId = userIdentity(caller, { contactId: input.contactId }).contactId;
    return values;
  }

  /** Every create, update and delete leaves a row in the audit trail, in the same transaction. */
  protected override record = (q: Queryable, collectionId: string, appId: string, e: ChangeEvent) =>
    repo.insertHistory(q, collectionId, {
      caseId: e.id,
      appId,
      action: e.action,
      ...actor(e.caller),
      changedFields: e.changedFields,
      changes: e.changes,
    });

  /**
   * An admin's list of live cases filtered by status alone (the common dashboard query) takes
   * its exact total from the status counters instead of counting matching rows.
   */
  protected override fastCount(collectionId: string, appId: string, caller: Actor, spec: ListSpec) {
    if (!isAdmin(caller) || spec.includeDeleted) return undefined;
    if (spec.conditions.length > 1) return undefined;
    const c = spec.conditions[0];
    if (c && !((c.op === 'eq' || c.op === 'in') && c.col === 'status')) return undefined;
    const statuses = c ? (c.op === 'eq' ? [c.value] : c.op === 'in' ? c.value : undefined) : undefined;
    return () => repo.countByStatus(this.db, collectionId, appId, statuses);
  }

  /** Admin: append an entry to the owner's or admin's history, optionally changing status/priority/assignee. */
  async appendHistory(collectionId: string, appId: string, id: string, caller: Actor, input: AppendHistoryInput) {
    const target = input.historyTarget ?? 'admin';
    // The original types `entry` as optional: without one the history still gets when and who.
    const entry = { ...input.entry, at: new Date().toISOString(), actorId: caller.actorId };
    const named = [
      ...(input.status !== undefined ? ['status', 'closedAt'] : []),
      ...(input.priority !== undefined ? ['priority'] : []),
      ...(input.assignedTo !== undefined ? ['assignedTo'] : []),
    ];
    const change = { status: input.status, priority: input.priority, assignedTo: input.assignedTo };
    return this.db.transaction(async (tx) => {
      const done = await repo.appendEntry(tx, collectionId, appId, id, target, entry, change);
      if (!done) {
        // Refused by a size bound (413, naming it), or the case is gone (404).
        const grown = new Map([[target, repo.historyAppended(target, entry)]]);
        throw (await objects.sizeRefusal(tx, CASE, collectionId, appId, id, grown)) ?? notFound('Case');
      }
      const { changedFields, changes } = this.changes(done.previous, done.row, named);
      await repo.insertHistory(tx, collectionId, {
        caseId: id,
        appId,
        action: 'entry',
        ...actor(caller),
        changedFields: [`${target}.history`, ...changedFields],
        changes,
        entry,
        target,
      });
      // The entry travels with the event while it is small (a note, a status reason); a large
      // one is read from the history.
      const small = Buffer.byteLength(JSON.stringify(entry), 'utf8') <= EVENT_JSON_MAX_BYTES;
      await this.events.publish(tx, collectionId, [
        this.events.updated(
          done.row,
          caller,
          { changedFields: [`${target}.history`, ...changedFields], changes },
          { history_entry: { target, entry: small ? entry : null } },
        ),
      ]);
      return this.present(done.row, caller);
    });
  }

  /** The audit trail, oldest first. Owners see it without admin-only entries and admin-section fields. */
  async history(collectionId: string, appId: string, id: string, caller: Actor) {
    await this.readable(this.db, collectionId, appId, id, caller);
    const rows = await repo.listHistory(this.db, collectionId, id, HISTORY_LIMIT);
    const admin = seesAdminSection(caller);
    const data = rows
      .filter((r) => admin || r.target !== 'admin')
      .map((r) => {
        const e: Record<string, unknown> = {
          id: r.id,
          action: r.action,
          at: r.at.toISOString(),
          actorId: r.actor_id,
          actorRole: r.actor_role,
          changedFields: admin ? r.changed_fields : r.changed_fields.filter((f) => !f.startsWith('admin.')),
          changes: r.changes,
        };
        if (r.entry) e.entry = r.entry;
        if (r.target) e.historyTarget = r.target;
        return e;
      });
    return { data };
  }

  /**
   * Collection-level summary (admin): totals by status and priority and a weekly trend over a
   * period. Trend items are `{week, start, count}`, `week` the ISO week (`2026-W07`), `start`
   * its Monday 00:00 UTC; weeks without cases are left out.
   */
  /** The apps that hold live cases (the console's app picker), at most APPS_LISTED. */
  async apps(collectionId: string): Promise<{ items: { appId: string }[] }> {
    const ids = await repo.appsWithCases(this.db, collectionId, APPS_LISTED);
    return { items: ids.map((appId) => ({ appId })) };
  }

  async summary(collectionId: string, appId: string, period: { from?: string; to?: string } = {}) {
    const to = period.to ? new Date(period.to) : new Date();
    const from = period.from ? new Date(period.from) : new Date(to.getTime() - 30 * 86_400_000);
    if (from > to) throw badRequest('period.from must not be after period.to');
    const s = await repo.summary(this.db, collectionId, appId, from, to);
    // fromEntries defines own properties: a status named `__proto__` is counted, not swallowed
    // by the prototype setter an assignment would call.
    const byStatus: Record<string, number> = Object.fromEntries(s.byStatus.map((r) => [r.k, r.n]));
    const byPriority: Record<string, number> = Object.fromEntries(s.byPriority.map((r) => [r.k ?? 'none', r.n]));
    return {
      total: s.byStatus.reduce((n, r) => n + r.n, 0),
      byStatus,
      byPriority,
      trend: s.trend.map((r) => ({ week: isoWeek(r.d), start: r.d.toISOString(), count: r.n })),
    };
  }

  /** One case with counts of its related objects, its age, time to close and last activity. */
  async caseSummary(collectionId: string, appId: string, id: string, caller: Actor) {
    const row = await this.readable(this.db, collectionId, appId, id, caller);
    const of = { collectionId, appId, caller, parentType: 'case', parentId: id };
    const threads = await objects.countChildren(this.db, { kind: THREAD, ...of });
    const records = await objects.countChildren(this.db, { kind: RECORD, ...of });
    const created = (row.created_at as Date).getTime();
    const closed = row.closed_at ? (row.closed_at as Date).getTime() : null;
    const last = Math.max(
      (row.updated_at as Date).getTime(),
      threads.last?.getTime() ?? 0,
      records.last?.getTime() ?? 0,
    );
    return {
      case: this.present(row, caller),
      threads: threads.count,
      records: records.count,
      ageSeconds: ((closed ?? Date.now()) - created) / 1000,
      timeToCloseSeconds: closed === null ? null : (closed - created) / 1000,
      lastActivityAt: new Date(last).toISOString(),
    };
  }

  async related(collectionId: string, appId: string, id: string, caller: Actor) {
    await this.readable(this.db, collectionId, appId, id, caller);
    const of = { collectionId, appId, caller, parentType: 'case', parentId: id };
    const threads = await objects.childrenOf(this.db, { kind: THREAD, ...of }, RELATED_LIMIT);
    const records = await objects.childrenOf(this.db, { kind: RECORD, ...of }, RELATED_LIMIT);
    // Each thread with its latest replies, as a thread is answered everywhere.
    const latest = await latestReplies(
      this.db,
      collectionId,
      threads.map((r) => r.id),
      THREAD_LATEST_REPLIES,
    );
    return {
      threads: threads.map((r) => present(THREAD, { ...r, replies: latest.get(r.id) ?? [] }, caller)),
      records: records.map((r) => present(RECORD, r, caller)),
    };
  }

  /**
   * Sets the status of every live case matching `conditions`, in batches of `batchSize`, each
   * change with its audit row in the batch's transaction. Used by the `cases.bulkStatus` task.
   */
  async bulkSetStatus(
    collectionId: string,
    appId: string,
    conditions: Condition[],
    status: string,
    caller: Actor,
    progress: (done: number, total: number) => Promise<void> = async () => {},
    batchSize = 200,
  ): Promise<{ matched: number; changed: number; unchanged: number }> {
    const total = await repo.countMatching(this.db, collectionId, appId, conditions);
    let after = '';
    let matched = 0;
    let changed = 0;
    await progress(0, total);
    for (;;) {
      const ids = await repo.matchingIds(this.db, collectionId, appId, conditions, after, batchSize);
      if (ids.length === 0) break;
      after = ids[ids.length - 1];
      changed += await this.db.transaction(async (tx) =>
        this.setStatusOf(tx, collectionId, appId, ids, status, caller),
      );
      matched += ids.length;
      await progress(matched, Math.max(total, matched));
    }
    return { matched, changed, unchanged: matched - changed };
  }

  private async setStatusOf(
    tx: Queryable,
    collectionId: string,
    appId: string,
    ids: string[],
    status: string,
    caller: Actor,
  ): Promise<number> {
    const built = this.buildPatch({ status }, caller);
    const events = [];
    for (const id of ids) {
      const done = await objects.patchObject(tx, CASE, collectionId, appId, id, built.patch);
      if (!done) continue; // deleted since it was matched
      const change = this.changes(done.previous, done.row, built.named);
      if (change.changedFields.length === 0) continue;
      await repo.insertHistory(tx, collectionId, {
        caseId: id,
        appId,
        action: 'status',
        ...actor(caller),
        ...change,
      });
      events.push(this.events.updated(done.row, caller, change));
    }
    // One case.updated per changed case, with the batch that changed them.
    await this.events.publish(tx, collectionId, events);
    return events.length;
  }
}
