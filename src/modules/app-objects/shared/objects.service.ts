/**
 * Rules every kind shares: who may read (visibility), who may write (owner or admin), the
 * PATCH merge rule, soft delete, lists and aggregates. Kind services add their own rules.
 *
 * PATCH merge rule: a section (`data`, `owner`, `admin`, and a record's `metadata`) in a
 * PATCH is merged into the stored one key by key at the top level; a key sent as `null` is
 * removed; a nested object replaces the stored value of its key whole. The merge runs
 * inside one UPDATE statement, so concurrent PATCHes of different keys all survive.
 */
import type { Db, Queryable } from '../../../db/index.ts';
import { AppError, badRequest, notFound, notPermitted } from '../../../platform/errors.ts';
import type { EventPublisher } from '../../../platform/events.ts';
import { newId } from '../../../platform/ids.ts';
import { type AggregateRequest, bucketLabel, parseAggregate } from './aggregate.ts';
import { firstOversize, tooLarge } from './bounds.ts';
import { type Change, ObjectEvents } from './events.ts';
import { type FieldDef, fieldOf, type ObjectKind, type Section } from './kinds.ts';
import { type Condition, type ListSpec, parseList } from './list-query.ts';
import * as repo from './objects.repository.ts';
import { type Actor, type AppObject, canSee, isAdmin, isOwner, present, type Row } from './sections.ts';

export interface Page {
  data: AppObject[];
  pagination: { total: number; limit: number; offset: number; hasMore: boolean };
}

export interface BuiltPatch {
  patch: repo.Patch;
  /** Fields named by the request (section keys as `data.key`). */
  named: string[];
}

/** A change a kind may record (the cases' audit trail), in the transaction of the change. */
export interface ChangeEvent {
  id: string;
  action: 'create' | 'update' | 'delete';
  caller: Actor;
  changedFields: string[];
  changes?: Record<string, unknown>;
}

/** Input shapes of a kind's create, PATCH and list query (the statics of its schemas). */
type Input = Record<string, unknown>;

const label = (kind: ObjectKind) => kind.name[0].toUpperCase() + kind.name.slice(1);

export { tooLarge };

/**
 * A create the size bounds refused (`insertObject` answered no row): measures its values and
 * throws the 413 naming the bound. Answers nothing: the caller goes on only with a row.
 */
export async function refuseNewValues(q: Queryable, kind: ObjectKind, values: Input): Promise<never> {
  const m = await repo.measureValues(q, kind, values);
  const over = firstOversize(m.sections, m.total);
  // Unreachable unless the bounds changed between the two statements (a new deployment).
  if (!over) throw new AppError(500, 'INTERNAL', 'The size check refused a create it then measured as fitting');
  throw tooLarge(over, kind.name);
}

/**
 * authorType values that name the service's own people. A user describing themselves
 * (`customer`, `member`, `brand_fan`) is stored as sent; one of these would let a user's
 * thread, record or reply pass for staff, so it is refused.
 */
export const STAFF_AUTHOR_TYPES: ReadonlySet<string> = new Set(['admin', 'agent', 'staff', 'system']);

/**
 * An author type as a reader would take it: NFKC (fullwidth `ａｄｍｉｎ` is `admin`),
 * default-ignorable code points removed (zero-width space, soft hyphen, word joiner, variation
 * selectors: invisible where the type is shown), then lower-cased and trimmed. Lower-casing
 * after NFKC stands in for Unicode case folding: the staff names are ASCII, and every
 * character whose fold is an ASCII letter lower-cases to it too (the Kelvin sign K is already
 * `K` after NFKC). Look-alikes from other scripts (Cyrillic `а`) are not caught: NFKC keeps
 * them apart, as a confusables table would not.
 */
export function normaliseAuthorType(s: string): string {
  return s
    .normalize('NFKC')
    .replace(/\p{Default_Ignorable_Code_Point}/gu, '')
    .toLowerCase()
    .normalize('NFKC')
    .trim();
}

type UserActor = Extract<Actor, { role: 'user' }>;

/** What a user's create or reply may say about who wrote it. */
export interface ClaimedIdentity {
  contactId?: unknown;
  authorId?: unknown;
  authorType?: unknown;
}

/**
 * The identity a user's create or reply stores. Clients send the caller's own ids
 * (`contactId`, `authorId`) and a description of them (`authorType: 'customer'`). The ids are
 * accepted when they are the token's own (an `authorId` may be the token's user or its
 * contact: both name the caller); another value would make the object someone else's, so it
 * is refused with 401 FORBIDDEN, as an interaction submit naming another user is. `authorType`
 * is kept as sent unless it names staff (also 401 FORBIDDEN: a user may not speak as staff);
 * default `user`. Nothing is written when a claim is refused.
 */
export function userIdentity(
  caller: UserActor,
  claimed: ClaimedIdentity,
): { contactId: string; authorId: string; authorType: string } {
  const foreign: string[] = [];
  if (claimed.contactId !== undefined && claimed.contactId !== caller.contactId) foreign.push('contactId');
  if (claimed.authorId !== undefined && claimed.authorId !== caller.userId && claimed.authorId !== caller.contactId) {
    foreign.push('authorId');
  }
  if (foreign.length > 0) {
    throw new AppError(
      401,
      'FORBIDDEN',
      `${foreign.join(' and ')} must be the user token's own (or left out); a user may not act for someone else`,
      { fields: foreign, reason: 'identity_mismatch' },
    );
  }
  const authorType = typeof claimed.authorType === 'string' ? claimed.authorType : 'user';
  if (STAFF_AUTHOR_TYPES.has(authorType.trim().toLowerCase())) {
    throw new AppError(
      401,
      'FORBIDDEN',
      `authorType "${authorType}" names staff (${[...STAFF_AUTHOR_TYPES].join(', ')}); only admins may set it`,
      { fields: ['authorType'], reason: 'staff_author_type' },
    );
  }
  // A look-alike (fullwidth letters, invisible characters inside) would be shown as staff. It
  // is a malformed value rather than a request to act as staff, so a 400 that says what to send.
  const normalised = normaliseAuthorType(authorType);
  if (STAFF_AUTHOR_TYPES.has(normalised)) {
    throw badRequest(
      `authorType reads as "${normalised}" once normalised (NFKC, invisible characters removed, lower case), which names staff; describe the author in plain letters (e.g. "customer") or leave authorType out (default "user")`,
      { fields: ['authorType'], reason: 'staff_author_type_lookalike', normalised },
    );
  }
  return {
    contactId: caller.contactId,
    authorId: typeof claimed.authorId === 'string' ? claimed.authorId : caller.userId,
    authorType,
  };
}

/**
 * The values a thread's or record's create stores, given who calls. An admin's object is
 * authored by `admin` unless the admin names another authorType. A user's object is theirs:
 * contactId and author are the token's (see `userIdentity`), the admin section is dropped,
 * and admin visibility is refused (400).
 */
export function createValues(caller: Actor, input: Input): Input {
  const values: Input = { ...input };
  if (isAdmin(caller)) {
    values.authorType ??= 'admin';
    return values;
  }
  if (input.visibility === 'admin')
    throw badRequest('visibility "admin" can only be set by admins', { fields: ['visibility'] });
  delete values.admin;
  return { ...values, ...userIdentity(caller, input) };
}

/**
 * A validated change (by field name) as column sets and section merges: a section is merged
 * by top-level key, a key sent as null removed; any other field is set, null clearing it.
 */
export function patchOf(kind: ObjectKind, body: Input): BuiltPatch {
  const patch: repo.Patch = { fields: {}, sections: {} };
  const named: string[] = [];
  for (const [key, v] of Object.entries(body)) {
    if (v === undefined) continue;
    if (repo.MERGED_SECTIONS.has(key)) {
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
    if (!fieldOf(kind, key)) throw badRequest(`Unknown field ${key}`);
    patch.fields[key] = v;
    named.push(key);
  }
  // A status change moves closedAt in kinds with closing statuses (the repository sets it).
  if (kind.closedStatuses && typeof patch.fields.status === 'string') named.push('closedAt');
  return { patch, named };
}

/**
 * The operations every kind shares: create, list, get, PATCH, delete, aggregate. A kind
 * changes them through the hooks below (`createValues`, `listConditions`, `fastCount`,
 * `derivedFields`, `record`) and adds its own operations in its subclass. Every change
 * publishes its webhook event (`events`, shared/events.ts) in its own transaction.
 */
export class ObjectService<Create extends Input, Update extends Input, Query extends Input> {
  /** The kind's webhook events; publishes nothing when the service was built without a publisher. */
  protected readonly events: ObjectEvents;

  constructor(
    protected readonly db: Db,
    readonly kind: ObjectKind,
    publisher?: EventPublisher,
  ) {
    this.events = new ObjectEvents(kind, publisher);
  }

  /** Hook: the values a create stores, by field name. */
  protected createValues(_collectionId: string, caller: Actor, input: Create): Input {
    return createValues(caller, input);
  }

  /** Hook: conditions a list adds to the kind's filters. */
  protected listConditions(_caller: Actor, _query: Query): Condition[] {
    return [];
  }

  /** Hook: a cheaper exact count for this list, when the kind has one; undefined to count rows. */
  protected fastCount(
    _collectionId: string,
    _appId: string,
    _caller: Actor,
    _spec: ListSpec,
  ): (() => Promise<number | undefined>) | undefined {
    return undefined;
  }

  /** Hook: fields a PATCH derives from the body (set unless the body sets them itself). */
  protected derivedFields(_collectionId: string, _caller: Actor, _body: Update): Input {
    return {};
  }

  /** Hook: records a change in the transaction that makes it (the cases' audit trail). */
  protected record?: (q: Queryable, collectionId: string, appId: string, event: ChangeEvent) => Promise<void>;

  /**
   * Hook: the rows as the kind presents them, given what is not in its table (a thread's
   * latest replies). Called before `present` by every read and write that answers objects.
   */
  protected async withDetails(_q: Queryable, _collectionId: string, rows: Row[]): Promise<Row[]> {
    return rows;
  }

  async create(collectionId: string, appId: string, caller: Actor, input: Create): Promise<AppObject> {
    const values = this.createValues(collectionId, caller, input);
    return this.db.transaction(async (q) => {
      const row =
        (await repo.insertObject(q, this.kind, collectionId, appId, newId(this.kind.idPrefix), values)) ??
        (await refuseNewValues(q, this.kind, values));
      await this.record?.(q, collectionId, appId, {
        id: row.id,
        action: 'create',
        caller,
        changedFields: Object.keys(values).filter((k) => values[k] !== undefined),
      });
      await this.events.publish(q, collectionId, [this.events.created(row, caller)]);
      return this.present(row, caller);
    });
  }

  list(collectionId: string, appId: string, caller: Actor, query: Query): Promise<Page> {
    return this.listWith(collectionId, appId, caller, query, this.listConditions(caller, query));
  }

  async patch(collectionId: string, appId: string, id: string, caller: Actor, body: Update): Promise<AppObject> {
    const built = this.buildPatch(body, caller);
    for (const [name, v] of Object.entries(this.derivedFields(collectionId, caller, body))) {
      if (v !== undefined && !Object.hasOwn(built.patch.fields, name)) built.patch.fields[name] = v;
    }
    return this.db.transaction(async (q) => {
      const done = await this.update(q, collectionId, appId, id, caller, built);
      await this.record?.(q, collectionId, appId, {
        id,
        action: 'update',
        caller,
        changedFields: done.changedFields,
        changes: done.changes,
      });
      await this.events.publish(q, collectionId, [this.events.updated(done.row, caller, done)]);
      const [row] = await this.withDetails(q, collectionId, [done.row]);
      return this.present(row, caller);
    });
  }

  async delete(collectionId: string, appId: string, id: string, caller: Actor): Promise<{ success: true }> {
    await this.db.transaction(async (q) => {
      const row = await this.remove(q, collectionId, appId, id, caller);
      await this.record?.(q, collectionId, appId, { id, action: 'delete', caller, changedFields: ['deletedAt'] });
      await this.events.publish(q, collectionId, [this.events.deleted(row, caller)]);
    });
    return { success: true };
  }

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
    const row = await this.readable(this.db, collectionId, appId, id, caller);
    const [detailed] = await this.withDetails(this.db, collectionId, [row]);
    return this.present(detailed, caller);
  }

  private async listWith(
    collectionId: string,
    appId: string,
    caller: Actor,
    query: Query,
    extra: Condition[],
  ): Promise<Page> {
    const spec = parseList(this.kind, query, isAdmin(caller));
    spec.conditions.push(...extra);
    const fastCount = this.fastCount(collectionId, appId, caller, spec);
    // Reads only: a read replica serves them when one may (db/client.ts, `Db.read`).
    const { rows, total, detailed } = await this.db.read(collectionId, async (r) => {
      const page = await repo.listObjects(r, this.kind, collectionId, appId, caller, spec, fastCount);
      return { ...page, detailed: await this.withDetails(r, collectionId, page.rows) };
    });
    return {
      data: detailed.map((r) => this.present(r, caller)),
      pagination: { total, limit: spec.limit, offset: spec.offset, hasMore: spec.offset + rows.length < total },
    };
  }

  /**
   * Turns a validated PATCH body into column sets and section merges (`patchOf`). Non-admins:
   * the `admin` section is ignored; any field outside the kind's owner-updatable list is a 400
   * naming every such field.
   */
  buildPatch(body: Input, caller: Actor): BuiltPatch {
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
    return patchOf(this.kind, Object.fromEntries(entries));
  }

  /**
   * What a write that names no fields changed (an upsert by ref, a singleton create, a
   * restore): every field compared, a section key by key, and `deletedAt` when it revived the
   * object. `previous` null (the object was inserted by another transaction after this
   * statement began: an upsert that lost the race to insert its ref) names the fields the
   * write set (`written`), without values before and after, which it cannot know.
   */
  changesOf(previous: Record<string, unknown> | null, row: Row, written: string[]): Change {
    if (!previous) return { changedFields: written, changes: {} };
    const sections = this.kind.sized.filter((col) => repo.MERGED_SECTIONS.has(col));
    // Plain fields and whole JSON fields (a thread's body and tags, a record's facet rule);
    // not the sections (key by key below) nor what is no column (a thread's replies).
    const named = Object.entries(this.kind.fields)
      .filter(([, d]) => d.kind !== 'json' || (this.kind.sized.includes(d.col) && !sections.includes(d.col)))
      .map(([name]) => name);
    for (const section of sections) {
      const keys = new Set([
        ...Object.keys((previous[section] as Record<string, unknown> | null) ?? {}),
        ...Object.keys((row[section] as Record<string, unknown> | null) ?? {}),
      ]);
      for (const k of keys) named.push(`${section}.${k}`);
    }
    const done = this.changes(previous, row, named);
    if (previous.deleted_at !== null && previous.deleted_at !== undefined && row.deleted_at === null) {
      done.changedFields.push('deletedAt');
      done.changes.deletedAt = { from: previous.deleted_at, to: null };
    }
    return done;
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
    if (!done) {
      // Gone since it was read, or past a size bound: measure what the change would make.
      const changed = repo.changedJson(this.kind, built.patch);
      throw (await repo.sizeRefusal(q, this.kind, collectionId, appId, id, changed)) ?? notFound(label(this.kind));
    }
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

  /**
   * Time-series items are `{bucket, start, count, <metrics>}`: `bucket` is the label clients of
   * the original read (`2026-W07`, see `bucketLabel`), `start` the bucket's first instant, for
   * placing it on a time axis without parsing a week or quarter label. A metric with no value
   * (the close time of cases none of which closed) is left out rather than answered as null:
   * the original types the metrics as optional numbers. A group's own values may be null
   * (the group of cases without a category).
   */
  async aggregate(collectionId: string, appId: string, caller: Actor, body: AggregateRequest) {
    const spec = parseAggregate(this.kind, body);
    const { totals, groups, timeSeries } = await repo.aggregate(this.db, this.kind, collectionId, appId, caller, spec);
    const metrics: ReadonlySet<string> = new Set(spec.metrics);
    const metricsOf = (row: Record<string, unknown>) =>
      Object.fromEntries(spec.metrics.filter((m) => row[m] !== null && row[m] !== undefined).map((m) => [m, row[m]]));
    /** A group's values as they are, its metrics without the empty ones. */
    const group = (g: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(g).filter(([k, v]) => v !== null || !metrics.has(k)));
    const interval = spec.timeSeries?.interval;
    return {
      ...metricsOf(totals),
      count: totals.count ?? 0,
      ...(groups ? { groups: groups.map(group) } : {}),
      ...(timeSeries && interval
        ? {
            timeSeries: timeSeries.map((r) => ({
              bucket: bucketLabel(interval, r.start),
              start: r.start.toISOString(),
              ...metricsOf(r),
            })),
          }
        : {}),
    };
  }
}
