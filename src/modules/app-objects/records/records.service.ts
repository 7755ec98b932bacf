/**
 * Record rules: default status `active`; public callers list only active records inside
 * their schedule window; owner edits of data/owner; soft delete and restore (admin);
 * upsert by ref; bulk upsert of at most 500 in one transaction (all or nothing); bulk delete
 * by ids/refs or by scope (the records' anchors), optionally of one recordType.
 * Derived fields: customIdNormalized (trimmed, lower case), scopeType/scopeId and
 * specificity (proof 50 > batch 40 > variant 30 > product 20 > facet 10 > collection 0).
 */
import { type Db, type Queryable, retryOnConflict } from '../../../db/index.ts';
import { AppError, badRequest, notFound, toAppError } from '../../../platform/errors.ts';
import { newId } from '../../../platform/ids.ts';
import { RECORD } from '../shared/kinds.ts';
import type { Condition } from '../shared/list-query.ts';
import * as objects from '../shared/objects.repository.ts';
import { createValues, ObjectService } from '../shared/objects.service.ts';
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

/** By scope type; a Map because scopeType is the caller's text (`constructor` is no scope). */
const SPECIFICITY = new Map<string, number>([
  ['proof', 50],
  ['batch', 40],
  ['variant', 30],
  ['product', 20],
  ['facet', 10],
  ['collection', 0],
]);

export const normaliseCustomId = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase();

/** Scope from the most specific target given; undefined when none is given. */
function deriveScope(
  collectionId: string,
  r: Record<string, unknown>,
): { type: string; id: string | null } | undefined {
  if (typeof r.proofId === 'string') return { type: 'proof', id: r.proofId };
  if (typeof r.batchId === 'string') return { type: 'batch', id: r.batchId };
  if (typeof r.variantId === 'string') return { type: 'variant', id: r.variantId };
  if (typeof r.productId === 'string') return { type: 'product', id: r.productId };
  if (r.facetRule) return { type: 'facet', id: null };
  void collectionId;
  return undefined;
}

export interface ImportItemError {
  index: number;
  ref?: string;
  message: string;
}

/** The fields a record derives from others (a PATCH by an admin recomputes them). */
const DERIVED = ['customIdNormalized', 'scopeType', 'scopeId', 'specificity'];

export class RecordsService extends ObjectService<CreateRecordInput, UpdateRecordInput, RecordListQuery> {
  constructor(db: Db) {
    super(db, RECORD);
  }

  /** Input fields → stored values by field name, with the derived fields. */
  private values(collectionId: string, input: Record<string, unknown>, isCreate: boolean) {
    const { singletonPer, ...values } = input;
    if (typeof values.customId === 'string') values.customIdNormalized = normaliseCustomId(values.customId);
    const insertOnly: string[] = [];
    if (input.scopeType === undefined) {
      const scope = deriveScope(collectionId, input);
      if (scope) {
        values.scopeType = scope.type;
        if (input.scopeId === undefined) values.scopeId = scope.id;
        values.specificity = SPECIFICITY.get(scope.type) ?? 0;
      } else if (isCreate) {
        values.scopeType = 'collection';
        if (input.scopeId === undefined) values.scopeId = collectionId;
        values.specificity = 0;
        insertOnly.push('scopeType', 'scopeId', 'specificity');
      }
    } else if (typeof input.scopeType === 'string') {
      values.specificity = SPECIFICITY.get(input.scopeType) ?? 0;
    }
    if (singletonPer !== undefined) {
      // Both spellings of a field (`product`, `productId`) make the same key: one meaning.
      const field = SINGLETON_FIELD.get(singletonPer as SingletonPer);
      const per = field ?? 'collection';
      const value = field === undefined ? collectionId : input[field];
      if (typeof value !== 'string') {
        throw badRequest(`singletonPer "${singletonPer}" needs ${per} to be set`, {
          fields: ['singletonPer'],
        });
      }
      values.singletonKey = `${input.recordType ?? ''}|${per}|${value}`;
    }
    return { values, insertOnly };
  }

  protected override createValues(collectionId: string, caller: Actor, input: CreateRecordInput) {
    return this.values(collectionId, createValues(caller, input), true).values;
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
    if (!isAdmin(caller)) return {};
    const { values } = this.values(collectionId, body, false);
    return Object.fromEntries(DERIVED.filter((k) => values[k] !== undefined).map((k) => [k, values[k]]));
  }

  async restore(collectionId: string, appId: string, id: string, caller: Actor): Promise<AppObject> {
    const row = await objects.restore(this.db, RECORD, collectionId, appId, id);
    if (!row) throw notFound('Record');
    return this.present(row, caller);
  }

  /** Upserts are admin writes: a record they create is authored by `admin`; one they update keeps its author. */
  async upsertOne(q: Queryable, collectionId: string, appId: string, input: UpsertRecordInput) {
    const { values, insertOnly } = this.values(collectionId, { ...input, authorType: 'admin' }, true);
    insertOnly.push('authorType');
    return repo.upsertByRef(q, collectionId, appId, newId(RECORD.idPrefix), values, insertOnly);
  }

  async upsert(collectionId: string, appId: string, caller: Actor, input: UpsertRecordInput) {
    const row = await this.upsertOne(this.db, collectionId, appId, input);
    return { ...this.present(row, caller), created: row.created };
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
  async bulkUpsert(collectionId: string, appId: string, items: UpsertRecordInput[]) {
    const order = [...items.entries()].sort(([, x], [, y]) => (x.ref < y.ref ? -1 : x.ref > y.ref ? 1 : 0));
    const written = await retryOnConflict(() =>
      this.db.transaction(async (tx) => {
        const out: { index: number; ref: string; id: string; created: boolean }[] = [];
        for (const [index, item] of order) {
          try {
            const row = await this.upsertOne(tx, collectionId, appId, item);
            out.push({ index, ref: item.ref, id: row.id, created: row.created });
          } catch (err) {
            const e = toAppError(err);
            if (e.statusCode >= 500) throw err;
            throw new AppError(
              e.statusCode,
              e.errorCode,
              `Item ${index} (ref "${item.ref}"): ${e.message}; nothing was written`,
              {
                index,
                ref: item.ref,
              },
            );
          }
        }
        return out;
      }),
    );
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
   * Each item on its own (the `records.import` task): a bad item is reported and skipped,
   * the others are saved.
   */
  async importItems(
    collectionId: string,
    appId: string,
    items: { index: number; item?: UpsertRecordInput; error?: string }[],
    progress: (done: number) => Promise<void>,
    signal?: AbortSignal,
  ) {
    const errors: ImportItemError[] = [];
    let created = 0;
    let updated = 0;
    let done = 0;
    for (const { index, item, error } of items) {
      if (signal?.aborted) throw new Error('Import interrupted by shutdown; it will be retried');
      if (error || !item) {
        errors.push({ index, message: error ?? 'invalid item' });
      } else {
        try {
          const row = await this.upsertOne(this.db, collectionId, appId, item);
          if (row.created) created++;
          else updated++;
        } catch (err) {
          const e = toAppError(err);
          if (e.statusCode >= 500) throw err;
          errors.push({ index, ref: item.ref, message: e.message });
        }
      }
      done++;
      if (done % 100 === 0) await progress(done);
    }
    await progress(done);
    return { saved: created + updated, failed: errors.length, created, updated, errors };
  }

  /**
   * Soft-deletes, in one statement, either the records named by id and/or ref, or every live
   * record in a scope (its anchors equal each scope field given); either way optionally only
   * those of one recordType. Deleted records stay restorable.
   */
  async bulkDelete(collectionId: string, appId: string, input: BulkDeleteInput): Promise<{ deleted: number }> {
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
      return { deleted: await repo.softDeleteMatching(this.db, collectionId, appId, { scope, recordType }) };
    }
    if (!ids.length && !refs.length) throw badRequest('Give ids and/or refs of the records to delete, or a scope');
    return { deleted: await repo.softDeleteMatching(this.db, collectionId, appId, { ids, refs, recordType }) };
  }
}
