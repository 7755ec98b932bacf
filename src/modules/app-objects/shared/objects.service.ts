/**
 * Rules every kind shares: who may read (visibility), who may write (owner or admin), the
 * PATCH merge rule, soft delete, lists and aggregates. Kind services add their own rules.
 *
 * PATCH merge rule: a section (`data`, `owner`, `admin`, and a record's `metadata`) in a
 * PATCH is merged into the stored one key by key at the top level; a key sent as `null` is
 * removed; a nested object replaces the stored value of its key whole. The merge runs
 * inside one UPDATE statement, so concurrent PATCHes of different keys all survive.
 */
import type { Sql } from 'sql-template-tag';
import type { Db, Queryable } from '../../../db/index.ts';
import { badRequest, notFound, notPermitted } from '../../../platform/errors.ts';
import { type AggregateRequest, parseAggregate } from './aggregate.ts';
import { type FieldDef, fieldOf, type ObjectKind, type Section } from './kinds.ts';
import { type Condition, type FilterDefs, type ListSpec, parseList } from './list-query.ts';
import * as repo from './objects.repository.ts';
import { type Actor, type AppObject, canSee, isAdmin, isOwner, present, type Row } from './sections.ts';

export interface Page {
  data: AppObject[];
  pagination: { total: number; limit: number; offset: number; hasMore: boolean };
}

const MERGED_SECTIONS = new Set(['data', 'owner', 'admin', 'metadata']);

export interface BuiltPatch {
  patch: repo.Patch;
  /** Fields named by the request (section keys as `data.key`). */
  named: string[];
}

const label = (kind: ObjectKind) => kind.name[0].toUpperCase() + kind.name.slice(1);

/**
 * The values a create stores, given who calls. A public user's thread or record is theirs:
 * contactId and author come from the token (sending them is a 400, not silently replaced),
 * the admin section is dropped, and admin visibility is refused.
 */
export function createValues(caller: Actor, input: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = { ...input };
  if (isAdmin(caller)) return values;
  const refused = ['authorId', 'authorType', 'contactId'].filter((k) => input[k] !== undefined);
  if (refused.length) throw badRequest(`Set by the service for users: ${refused.join(', ')}`, { fields: refused });
  if (input.visibility === 'admin')
    throw badRequest('visibility "admin" can only be set by admins', { fields: ['visibility'] });
  delete values.admin;
  if (caller.role === 'user') {
    values.contactId = caller.contactId;
    values.authorId = caller.userId;
    values.authorType = 'user';
  }
  return values;
}

/** A create's values as column values: sections as jsonb, fields through the kind's table. */
export function columnValues(kind: ObjectKind, values: Record<string, unknown>): Record<string, Sql> {
  const cols: Record<string, Sql> = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined) continue;
    if (MERGED_SECTIONS.has(k)) {
      cols[k] = repo.value('json', v);
      continue;
    }
    const def = fieldOf(kind, k);
    if (!def) throw badRequest(`Unknown field ${k}`);
    cols[def.col] = repo.value(def.kind, v);
  }
  return cols;
}

export class ObjectService {
  constructor(
    protected readonly db: Db,
    readonly kind: ObjectKind,
  ) {}

  present(row: Row, caller: Actor): AppObject {
    return present(this.kind, row, caller);
  }

  /** The object if the caller may see it; 404 otherwise (existence is not leaked). */
  async readable(q: Queryable, collectionId: string, appId: string, id: string, caller: Actor): Promise<Row> {
    const row = await repo.findObject(q, this.kind, collectionId, appId, id);
    if (!row || !canSee(caller, row)) throw notFound(label(this.kind));
    return row;
  }

  /**
   * The object if the caller may change it. Admins: any live object. Users: their own live
   * objects; 404 for missing, deleted and admin-visibility objects (those do not exist on the
   * public zone); 401 FORBIDDEN for another contact's object (ids are random, so this tells
   * nothing a caller could have guessed).
   */
  async writable(q: Queryable, collectionId: string, appId: string, id: string, caller: Actor): Promise<Row> {
    const row = await repo.findObject(q, this.kind, collectionId, appId, id);
    if (!row || row.deleted_at !== null) throw notFound(label(this.kind));
    if (isAdmin(caller)) return row;
    if (row.visibility === 'admin') throw notFound(label(this.kind));
    if (isOwner(caller, row)) return row;
    throw notPermitted(`Only the owner of this ${this.kind.name} or an admin may change it`);
  }

  async get(collectionId: string, appId: string, id: string, caller: Actor): Promise<AppObject> {
    return this.present(await this.readable(this.db, collectionId, appId, id, caller), caller);
  }

  async listWith(
    collectionId: string,
    appId: string,
    caller: Actor,
    query: Record<string, unknown>,
    filters: FilterDefs,
    extra: Condition[] = [],
    fastCount?: (spec: ListSpec) => (() => Promise<number | undefined>) | undefined,
  ): Promise<Page> {
    const spec = parseList(this.kind, filters, query, isAdmin(caller));
    spec.conditions.push(...extra);
    const { rows, total } = await repo.listObjects(
      this.db,
      this.kind,
      collectionId,
      appId,
      caller,
      spec,
      fastCount?.(spec),
    );
    return {
      data: rows.map((r) => this.present(r, caller)),
      pagination: { total, limit: spec.limit, offset: spec.offset, hasMore: spec.offset + rows.length < total },
    };
  }

  /**
   * Turns a validated PATCH body into column sets and section merges. Non-admins: the
   * `admin` section is ignored; any field outside the kind's owner-updatable list is a 400
   * naming every such field.
   */
  buildPatch(body: Record<string, unknown>, caller: Actor): BuiltPatch {
    const entries = Object.entries(body).filter(([k, v]) => v !== undefined && (isAdmin(caller) || k !== 'admin'));
    if (!isAdmin(caller)) {
      const refused = entries.map(([k]) => k).filter((k) => !this.kind.ownerUpdatable.includes(k));
      if (refused.length > 0) {
        throw badRequest(
          `Only ${this.kind.ownerUpdatable.join(', ')} may be changed by the owner; not allowed: ${refused.join(', ')}`,
          { fields: refused },
        );
      }
    }
    const patch: repo.Patch = { columns: {}, sections: {} };
    const named: string[] = [];
    for (const [key, v] of entries) {
      if (MERGED_SECTIONS.has(key)) {
        const section = v as Record<string, unknown>;
        const set: Record<string, unknown> = {};
        const remove: string[] = [];
        for (const [k, sv] of Object.entries(section)) {
          if (sv === null) remove.push(k);
          else set[k] = sv;
          named.push(`${key}.${k}`);
        }
        patch.sections[key as Section] = { set, remove };
        continue;
      }
      const def = fieldOf(this.kind, key);
      if (!def) throw badRequest(`Unknown field ${key}`);
      patch.columns[def.col] = repo.value(def.kind, v);
      named.push(key);
    }
    return { patch, named };
  }

  /** Fields whose stored value actually changed, for the audit trail; scalar ones with from/to. */
  changes(previous: Record<string, unknown>, row: Row, named: string[]) {
    const changedFields: string[] = [];
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    const norm = (v: unknown) => (v instanceof Date ? v.toISOString() : v);
    for (const name of named) {
      const dot = name.indexOf('.');
      if (dot > 0) {
        const [section, key] = [name.slice(0, dot), name.slice(dot + 1)];
        const before = (previous[section] as Record<string, unknown> | null)?.[key];
        const after = (row[section] as Record<string, unknown> | null)?.[key];
        if (JSON.stringify(before) !== JSON.stringify(after)) changedFields.push(name);
        continue;
      }
      const col = (fieldOf(this.kind, name) as FieldDef).col;
      const before = previous[col] === null || previous[col] === undefined ? null : previous[col];
      const after = norm(row[col]) ?? null;
      const sameTime =
        typeof before === 'string' &&
        typeof after === 'string' &&
        new Date(before).getTime() === new Date(after).getTime();
      if (JSON.stringify(before) !== JSON.stringify(after) && !sameTime) {
        changedFields.push(name);
        changes[name] = { from: before, to: after };
      }
    }
    return { changedFields, changes };
  }

  async update(q: Queryable, collectionId: string, appId: string, id: string, caller: Actor, built: BuiltPatch) {
    const row = await this.writable(q, collectionId, appId, id, caller);
    // The owner condition is repeated in the UPDATE itself, so the check and the write agree.
    const done = await repo.patchObject(
      q,
      this.kind,
      collectionId,
      appId,
      id,
      built.patch,
      isAdmin(caller) ? undefined : (row.contact_id as string),
    );
    if (!done) throw notFound(label(this.kind));
    return { ...done, ...this.changes(done.previous, done.row, built.named) };
  }

  async remove(q: Queryable, collectionId: string, appId: string, id: string, caller: Actor): Promise<Row> {
    const row = await this.writable(q, collectionId, appId, id, caller);
    const [deleted] = await repo.softDelete(
      q,
      this.kind,
      collectionId,
      appId,
      [id],
      isAdmin(caller) ? undefined : (row.contact_id as string),
    );
    if (!deleted) throw notFound(label(this.kind));
    return deleted;
  }

  async aggregate(collectionId: string, appId: string, caller: Actor, body: AggregateRequest) {
    const spec = parseAggregate(this.kind.name, body);
    const { totals, groups, timeSeries } = await repo.aggregate(this.db, this.kind, collectionId, appId, caller, spec);
    return {
      ...totals,
      count: totals.count ?? 0,
      ...(groups ? { groups } : {}),
      ...(timeSeries ? { timeSeries } : {}),
    };
  }
}
