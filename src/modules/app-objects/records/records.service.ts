/**
 * Record rules: default status `active`; public callers list only active records inside
 * their schedule window; owner edits of data/owner; soft delete and restore (admin);
 * upsert by ref; bulk upsert of at most 500 in one transaction (all or nothing); bulk delete
 * by ids/refs or by scope (the records' anchors), optionally of one recordType. Every write
 * publishes one event per record it created, changed or deleted, in its transaction
 * (shared/events.ts): an upsert or a singleton create publishes what it did.
 * Derived fields: customIdNormalized (trimmed, lower case), scopeType/scopeId and
 * specificity (proof 50 > batch 40 > variant 30 > product 20 > facet 10 > collection 0), also
 * after a change of the anchors. A field sent as null on a create or an upsert is its default
 * (see `upsertOne`).
 */
import { type Db, isConflictError, type Queryable, retryOnConflict } from '../../../db/index.ts';
import { AppError, badRequest, conflict, notFound, toAppError } from '../../../platform/errors.ts';
import type { EventPublisher, NewEvent } from '../../../platform/events.ts';
import { newId } from '../../../platform/ids.ts';
import { RECORD } from '../shared/kinds.ts';
import type { Condition } from '../shared/list-query.ts';
import type { Patch } from '../shared/objects.repository.ts';
import * as objects from '../shared/objects.repository.ts';
import { createValues, ObjectService, patchOf } from '../shared/objects.service.ts';
import { type Actor, type AppObject, isAdmin } from '../shared/sections.ts';
import * as repo from './records.repository.ts';
import type {
  BulkDeleteInput,
  CreateRecordInput,
  RecordListQuery,
  UpdateRecordInput,
  UpsertRecordInput,
} from './records.schema.ts';
import { SINGLETON_FIELD, type SingletonPer } from './records.schema.ts';

/**
 * Scopes, most specific first: a record's scope is the first whose field it has, else the
 * collection (its id the collection's). The specificity orders records that apply to the same
 * target.
 */
const SCOPE_TIERS: readonly repo.ScopeTier[] = [
  { type: 'proof', field: 'proofId', specificity: 50, idIsValue: true },
  { type: 'batch', field: 'batchId', specificity: 40, idIsValue: true },
  { type: 'variant', field: 'variantId', specificity: 30, idIsValue: true },
  { type: 'product', field: 'productId', specificity: 20, idIsValue: true },
  { type: 'facet', field: 'facetRule', specificity: 10, idIsValue: false },
];
const COLLECTION_SCOPE = { type: 'collection', specificity: 0 };
/** By scope type; a Map because scopeType is the caller's text (`constructor` is no scope). */
const SPECIFICITY = new Map<string, number>([
  ...SCOPE_TIERS.map((t): [string, number] => [t.type, t.specificity]),
  [COLLECTION_SCOPE.type, COLLECTION_SCOPE.specificity],
]);

/** What a user's singleton create may change in their record: what their PATCH may. */
const OWNER_FIELDS = RECORD.ownerUpdatable;

/**
 * The key that keeps one live record per singleton (a unique index on live records): the
 * recordType, the field it is single per and that field's value, and the record's contact
 * when it has one. The contact is part of it because a singleton of a person's record is one
 * per person ("one registration per product per contact"): two customers registering the
 * same product get a record each. A record without a contact (an admin's product settings)
 * is single across the app. Records written before the contact joined the key were given it
 * by migration 0103.
 */
export const singletonKey = (recordType: unknown, per: string, value: string, contactId: unknown) =>
  `${typeof recordType === 'string' ? recordType : ''}|${per}|${value}${typeof contactId === 'string' ? `|contact:${contactId}` : ''}`;

export const normaliseCustomId = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase();

/**
 * What a create stores for a field sent as null: the same as for one left out (its default).
 * Forms and sync jobs send `null` for "no value"; the original's SDK types these fields
 * `T | null` on record creates and upserts.
 */
const withoutNulls = <T extends Record<string, unknown>>(input: T): T =>
  Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null)) as T;

export interface ImportItemError {
  index: number;
  ref?: string;
  message: string;
}

/** Items of a `records.import` written (and their events published) in one transaction. */
export const IMPORT_BATCH = 100;

/** An upsert's item and its place in the caller's list. */
interface Indexed {
  index: number;
  item: UpsertRecordInput;
}

/** What an upsert of an item did. */
interface Upserted {
  index: number;
  ref: string;
  id: string;
  created: boolean;
}

/**
 * An item of a batch refused (a 4xx): the batch's transaction wrote nothing. Other errors
 * (a deadlock, which the whole batch retries; a server error) pass through as they are.
 */
class ItemRefused extends Error {
  constructor(
    readonly index: number,
    readonly ref: string,
    readonly error: AppError,
  ) {
    super(error.message);
  }
}

export class RecordsService extends ObjectService<CreateRecordInput, UpdateRecordInput, RecordListQuery> {
  constructor(db: Db, publisher?: EventPublisher) {
    super(db, RECORD, publisher);
  }

  /** A new record's stored values by field name (no nulls), with the derived fields. */
  private newValues(collectionId: string, input: Record<string, unknown>) {
    const { singletonPer, ...values } = input;
    if (typeof values.customId === 'string') values.customIdNormalized = normaliseCustomId(values.customId);
    if (typeof values.scopeType === 'string') {
      values.specificity = SPECIFICITY.get(values.scopeType) ?? 0;
    } else {
      const tier = SCOPE_TIERS.find((t) => values[t.field] !== undefined);
      values.scopeType = tier?.type ?? COLLECTION_SCOPE.type;
      if (values.scopeId === undefined)
        values.scopeId = tier ? (tier.idIsValue ? values[tier.field] : null) : collectionId;
      values.specificity = tier?.specificity ?? COLLECTION_SCOPE.specificity;
    }
    if (singletonPer !== undefined) {
      // Both spellings of a field (`product`, `productId`) make the same key: one meaning.
      const field = SINGLETON_FIELD.get(singletonPer as SingletonPer);
      const per = field ?? 'collection';
      const value = field === undefined ? collectionId : values[field];
      if (typeof value !== 'string') {
        throw badRequest(`singletonPer "${singletonPer}" needs ${per} to be set`, {
          fields: ['singletonPer'],
        });
      }
      values.singletonKey = singletonKey(values.recordType, per, value, values.contactId);
    }
    return values;
  }

  /**
   * The change a create with `singletonPer` makes to the record already holding its key, as an
   * upsert by ref makes it: an admin's fields are set (sections merged by top-level key, a
   * key sent as null removed), a field sent as null is set back to its default (`scopeType`
   * and `scopeId` as null: derived again from the anchors); the author is kept unless named.
   * A user changes what their PATCH may change: `data` and `owner`; the other fields of
   * their create are the record's key (recordType, the singleton field, their contact) or are
   * left as they are (an owner may not change a record's status or schedule).
   */
  private singletonChange(collectionId: string, caller: Actor, input: CreateRecordInput): Patch {
    const { singletonPer: _per, ...given } = input as Record<string, unknown>;
    const change = isAdmin(caller)
      ? given
      : Object.fromEntries(OWNER_FIELDS.filter((k) => given[k] !== undefined).map((k) => [k, given[k]]));
    const rederive = change.scopeType === null;
    if (rederive) {
      delete change.scopeType;
      if (change.scopeId === null) delete change.scopeId;
    }
    const { patch } = patchOf(RECORD, withoutNulls(change));
    patch.reset = Object.keys(change).filter((k) => change[k] === null);
    const derived = this.changedValues(collectionId, change, rederive);
    // A scopeId given is kept, as on the create that made the record.
    if (typeof change.scopeId === 'string') delete derived.scopeId;
    Object.assign(patch.fields, derived);
    return patch;
  }

  /**
   * What a change of an existing record (an admin's PATCH, an upsert that updates) derives:
   * `customIdNormalized` follows `customId` (null with it); when the change names an anchor
   * or the facet rule (null included) and not the scopeType itself, the scope is derived again
   * from the record as the change leaves it (a change that clears `productId` of a record
   * that also has a variant leaves it variant-scoped; clearing its last anchor makes it
   * collection-wide); a scopeType given sets the specificity. `rederive`: the scope is derived
   * again even when the change names no anchor (a scopeType sent as null on a singleton create).
   */
  private changedValues(
    collectionId: string,
    change: Record<string, unknown>,
    rederive = false,
  ): Record<string, unknown> {
    const derived: Record<string, unknown> = {};
    if (change.customId !== undefined) {
      derived.customIdNormalized = typeof change.customId === 'string' ? normaliseCustomId(change.customId) : null;
    }
    if (typeof change.scopeType === 'string') {
      derived.specificity = SPECIFICITY.get(change.scopeType) ?? 0;
    } else if (rederive || (change.scopeType === undefined && SCOPE_TIERS.some((t) => change[t.field] !== undefined))) {
      const named = Object.fromEntries(
        SCOPE_TIERS.filter((t) => change[t.field] !== undefined).map((t) => [t.field, change[t.field]]),
      );
      Object.assign(derived, repo.scopeAfterChange(collectionId, SCOPE_TIERS, COLLECTION_SCOPE, named));
    }
    return derived;
  }

  protected override createValues(collectionId: string, caller: Actor, input: CreateRecordInput) {
    return this.newValues(collectionId, createValues(caller, withoutNulls(input)));
  }

  /**
   * A create with `singletonPer` finds or updates: the record holding its key (see
   * `singletonKey`) is updated in place (`singletonChange`), an admin's deleted one revived,
   * and its id answered; only when there is none is a record created. Calling it twice is
   * idempotent. A user's create finds only a live record they may change (their own, not
   * admin-only); when the key is held by one they may not change, it is a 409.
   */
  override async create(collectionId: string, appId: string, caller: Actor, input: CreateRecordInput) {
    if (input.singletonPer === undefined) return super.create(collectionId, appId, caller, input);
    const values = this.createValues(collectionId, caller, input);
    const change = this.singletonChange(collectionId, caller, input);
    const row = await this.db.transaction(async (tx) => {
      const done = await repo.createSingleton(
        tx,
        collectionId,
        appId,
        { id: newId(RECORD.idPrefix), insert: values, update: change },
        isAdmin(caller) ? undefined : caller.contactId,
      );
      if (!done) {
        throw conflict('A record this caller may not change holds this singletonPer value', {
          fields: ['singletonPer'],
        });
      }
      await this.events.publish(tx, collectionId, [this.writtenEvent(done, caller, Object.keys(change.fields))]);
      return done;
    });
    return this.present(row, caller);
  }

  /** Public callers: active records inside the schedule window; customId compared normalised. */
  protected override listConditions(caller: Actor, query: RecordListQuery): Condition[] {
    const extra: Condition[] = [];
    if (typeof query.customId === 'string') {
      extra.push({ col: 'custom_id_normalized', op: 'eq', value: normaliseCustomId(query.customId) });
    }
    if (!isAdmin(caller)) extra.push({ col: 'status', op: 'eq', value: 'active' });
    // The schedule window: always for public callers, for admins when they name a moment.
    if (!isAdmin(caller) || query.at !== undefined) {
      const at = query.at ? new Date(query.at) : new Date();
      if (query.includeScheduled !== true) extra.push({ col: 'starts_at', op: 'lteOrNull', value: at });
      if (query.includeExpired !== true) extra.push({ col: 'expires_at', op: 'gtOrNull', value: at });
    }
    return extra;
  }

  /** An admin's PATCH recomputes the derived fields its body does not set itself. */
  protected override derivedFields(collectionId: string, caller: Actor, body: UpdateRecordInput) {
    return isAdmin(caller) ? this.changedValues(collectionId, body) : {};
  }

  /** Makes a deleted record live again: a `record.updated` whose change is `deleted_at` (none for a live one). */
  async restore(collectionId: string, appId: string, id: string, caller: Actor): Promise<AppObject> {
    const row = await this.db.transaction(async (tx) => {
      const done = await objects.restore(tx, RECORD, collectionId, appId, id);
      if (!done) throw notFound('Record');
      const change = this.changesOf(done.previous, done.row, []);
      await this.events.publish(tx, collectionId, [this.events.updated(done.row, caller, change)]);
      return done.row;
    });
    return this.present(row, caller);
  }

  /**
   * The event of a record an upsert or a singleton create wrote: created, or updated with
   * what changed (`changesOf`; `written` names the fields set, for when the row before is
   * unknown).
   */
  private writtenEvent(row: repo.Written, caller: Actor, written: string[]): NewEvent | undefined {
    return row.created
      ? this.events.created(row, caller)
      : this.events.updated(row, caller, this.changesOf(row.previous, row, written));
  }

  /**
   * Creates the record with the item's ref, or changes the record holding it. Upserts are
   * admin writes: a record they create is authored by `admin`; one they update keeps its
   * author. A field sent as null is left at its default on a create, and set back to it on an
   * update (`productId` and the other nullable fields to null, `status` to `active`, `data` and
   * `metadata` to `{}`): the item says the field has no value, whichever the call does. A field
   * left out is the default on a create and unchanged on an update.
   */
  async upsertOne(q: Queryable, collectionId: string, appId: string, caller: Actor, input: UpsertRecordInput) {
    const insert = this.newValues(collectionId, { ...withoutNulls(input), authorType: 'admin' });
    const { ref: _ref, ...change } = input as Record<string, unknown>;
    const { patch, named } = patchOf(RECORD, withoutNulls(change));
    patch.reset = Object.keys(change).filter((k) => change[k] === null);
    Object.assign(patch.fields, this.changedValues(collectionId, change));
    const row = await repo.upsertByRef(q, collectionId, appId, { id: newId(RECORD.idPrefix), insert, update: patch });
    return { row, event: this.writtenEvent(row, caller, [...named, ...patch.reset]) };
  }

  async upsert(collectionId: string, appId: string, caller: Actor, input: UpsertRecordInput) {
    const row = await this.db.transaction(async (tx) => {
      const { row, event } = await this.upsertOne(tx, collectionId, appId, caller, input);
      await this.events.publish(tx, collectionId, [event]);
      return row;
    });
    return { ...this.present(row, caller), created: row.created };
  }

  /**
   * Upserts `items` in the transaction `tx` and publishes their events, in ref order (stable:
   * repeats of a ref keep their order, the last wins; see `bulkUpsert`). A failing item throws
   * its error, the transaction then writes nothing.
   */
  private async upsertAll(
    tx: Queryable,
    collectionId: string,
    appId: string,
    caller: Actor,
    items: Indexed[],
  ): Promise<Upserted[]> {
    const order = [...items].sort((x, y) => (x.item.ref < y.item.ref ? -1 : x.item.ref > y.item.ref ? 1 : 0));
    const out: Upserted[] = [];
    const events: (NewEvent | undefined)[] = [];
    for (const { index, item } of order) {
      try {
        const { row, event } = await this.upsertOne(tx, collectionId, appId, caller, item);
        out.push({ index, ref: item.ref, id: row.id, created: row.created });
        events.push(event);
      } catch (err) {
        const e = toAppError(err);
        if (e.statusCode >= 500 || isConflictError(err)) throw err;
        throw new ItemRefused(index, item.ref, e);
      }
    }
    await this.events.publish(tx, collectionId, events);
    return out;
  }

  /**
   * All or nothing, in one transaction; a failing item is named (index and ref).
   *
   * The items are written in ref order (stable: repeats of a ref keep their order, the last
   * wins) and answered in the caller's order. Each upsert locks its ref's row (or unique
   * index entry) until commit, so two batches sharing refs in different orders would wait
   * for each other in a cycle; in one order they just queue. A deadlock that happens anyway
   * reruns the whole transaction.
   */
  async bulkUpsert(collectionId: string, appId: string, caller: Actor, items: UpsertRecordInput[]) {
    let written: Upserted[];
    try {
      written = await retryOnConflict(() =>
        this.db.transaction((tx) =>
          this.upsertAll(
            tx,
            collectionId,
            appId,
            caller,
            items.map((item, index) => ({ index, item })),
          ),
        ),
      );
    } catch (err) {
      if (!(err instanceof ItemRefused)) throw err;
      throw new AppError(
        err.error.statusCode,
        err.error.errorCode,
        `Item ${err.index} (ref "${err.ref}"): ${err.message}; nothing was written`,
        { index: err.index, ref: err.ref },
      );
    }
    // One result per item in the caller's order, each with its `status`: what the original's
    // clients read. All or nothing, so never an `error` item on a success.
    const results = written
      .sort((x, y) => x.index - y.index)
      .map(({ index, ref, id, created }) => ({
        index,
        status: created ? ('created' as const) : ('updated' as const),
        id,
        ref,
        created,
      }));
    return { saved: results.length, failed: 0, results };
  }

  /**
   * The `records.import` task's items: a bad item is reported and skipped, the others are
   * saved. They are written IMPORT_BATCH at a time, each batch with its events in one
   * transaction (in ref order, as a bulk upsert); a batch one of whose items is refused is
   * written again one item per transaction, so that only that item is left out.
   */
  async importItems(
    collectionId: string,
    appId: string,
    caller: Actor,
    items: { index: number; item?: UpsertRecordInput; error?: string }[],
    progress: (done: number) => Promise<void>,
    signal?: AbortSignal,
  ) {
    const errors: ImportItemError[] = [];
    let created = 0;
    let updated = 0;
    const write = (batch: Indexed[]) =>
      retryOnConflict(() => this.db.transaction((tx) => this.upsertAll(tx, collectionId, appId, caller, batch)));
    const count = (written: Upserted[]) => {
      for (const w of written) {
        if (w.created) created++;
        else updated++;
      }
    };
    for (let start = 0; start < items.length; start += IMPORT_BATCH) {
      if (signal?.aborted) throw new Error('Import interrupted by shutdown; it will be retried');
      const batch: Indexed[] = [];
      for (const { index, item, error } of items.slice(start, start + IMPORT_BATCH)) {
        if (error || !item) errors.push({ index, message: error ?? 'invalid item' });
        else batch.push({ index, item });
      }
      try {
        if (batch.length > 0) count(await write(batch));
      } catch (err) {
        if (!(err instanceof ItemRefused)) throw err;
        for (const one of batch) {
          try {
            count(await write([one]));
          } catch (e) {
            if (!(e instanceof ItemRefused)) throw e;
            errors.push({ index: e.index, ref: e.ref, message: e.message });
          }
        }
      }
      await progress(Math.min(start + IMPORT_BATCH, items.length));
    }
    errors.sort((x, y) => x.index - y.index);
    return { saved: created + updated, failed: errors.length, created, updated, errors };
  }

  /**
   * Soft-deletes, in one statement, either the records named by id and/or ref, or every live
   * record in a scope (its anchors equal each scope field given); either way optionally only
   * those of one recordType. Deleted records stay restorable.
   */
  async bulkDelete(
    collectionId: string,
    appId: string,
    caller: Actor,
    input: BulkDeleteInput,
  ): Promise<{ deleted: number }> {
    const { ids = [], refs = [], scope, recordType } = input;
    if (scope !== undefined) {
      if (input.ids !== undefined || input.refs !== undefined) {
        throw badRequest('Give either ids/refs or a scope, not both', { fields: ['scope'] });
      }
      if (!Object.values(scope).some((v) => v !== undefined)) {
        throw badRequest('A scope needs at least one of productId, variantId, batchId, proofId', {
          fields: ['scope'],
        });
      }
      return this.deleteMatching(collectionId, appId, caller, { scope, recordType });
    }
    if (!ids.length && !refs.length) throw badRequest('Give ids and/or refs of the records to delete, or a scope');
    return this.deleteMatching(collectionId, appId, caller, { ids, refs, recordType });
  }

  /** One `record.deleted` per record, in the delete's transaction (published in chunks). */
  private async deleteMatching(collectionId: string, appId: string, caller: Actor, target: repo.BulkDeleteTarget) {
    return this.db.transaction(async (tx) => {
      const rows = await repo.softDeleteMatching(tx, collectionId, appId, target);
      await this.events.publish(
        tx,
        collectionId,
        rows.map((r) => this.events.deleted(r, caller)),
      );
      return { deleted: rows.length };
    });
  }
}
