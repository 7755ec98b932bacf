/** SQL of records beyond the shared object SQL: upsert by ref, the scope a change leaves, bulk delete. */
import sql, { empty, join, raw, type Sql } from 'sql-template-tag';
import type { Queryable } from '../../../db/index.ts';
import { conflict } from '../../../platform/errors.ts';
import { type FieldDef, fieldOf, RECORD, scalarColumns } from '../shared/kinds.ts';
import {
  assignments,
  boundsCheck,
  changedJson,
  columnsOf,
  type Patch,
  previousColumn,
  sizeRefusal,
} from '../shared/objects.repository.ts';
import type { Row } from '../shared/sections.ts';

/** A record an upsert or a singleton create wrote: whether it inserted it, and the row before (null if it did). */
export type Written = Row & { created: boolean; previous: Record<string, unknown> | null };

/** Moves the `_previous` column of a RETURNING (`previousColumn`) to `previous`. */
const written = (r: Row & { _previous?: Record<string, unknown> | null }, created: boolean): Written => {
  const { _previous, ...row } = r;
  return { ...(row as Row), created, previous: _previous ?? null };
};

/** A write that inserts a new record, or changes the one that holds its ref or key. */
export interface InsertOrUpdate {
  /** The new record's id (used only when it is inserted). */
  id: string;
  /** The new record's values by field name (sections included). */
  insert: Record<string, unknown>;
  /** The change an existing record gets (never its ref or key). */
  update: Patch;
}

/**
 * Insert `insert`, or, when a record holds this ref, apply `update` to it (reviving it if
 * deleted): fields set, reset to their default, sections merged by top-level key, as a PATCH
 * does. One statement, so concurrent upserts of one ref queue on its row. The merge is bounded
 * as a PATCH's is (bounds.ts), in the update's WHERE: repeated upserts of one ref cannot grow
 * the record without end; a refused one is a 413 naming the bound, and writes nothing.
 * Answers the record as written and as it was before (`previousColumn`).
 */
export async function upsertByRef(
  q: Queryable,
  collectionId: string,
  appId: string,
  { id, insert, update }: InsertOrUpdate,
): Promise<Written> {
  const rendered = columnsOf(RECORD, insert);
  const cols = [...rendered.keys()];
  const sets = [...assignments(RECORD, update), sql`deleted_at = NULL`, sql`updated_at = now()`];
  const changed = changedJson(RECORD, update);
  const check = boundsCheck(RECORD, changed);
  const { rows } = await q.query<Row & { created: boolean }>(sql`
    INSERT INTO app_records (collection_id, app_id, id, ${raw(cols.join(', '))})
    VALUES (${collectionId}, ${appId}, ${id}, ${join([...rendered.values()])})
    ON CONFLICT (collection_id, app_id, ref) WHERE ref IS NOT NULL
    DO UPDATE SET ${join(sets, ', ')} ${check ? sql`WHERE ${check}` : empty}
    RETURNING *, (xmax = 0) AS created, ${previousColumn('app_records')}`);
  if (rows[0]) return written(rows[0], rows[0].created);
  // Nothing inserted or updated: the record holding the ref refused the merge by a bound.
  const { rows: held } = await q.query<{ id: string }>(sql`
    SELECT id FROM app_records WHERE collection_id = ${collectionId} AND app_id = ${appId} AND ref = ${insert.ref}`);
  const refusal = held[0] && (await sizeRefusal(q, RECORD, collectionId, appId, held[0].id, changed));
  throw refusal ?? conflict('The record holding this ref changed meanwhile; try again');
}

/** The unique index that keeps one live record per singleton key (migrations/0100). */
const SINGLETON_INDEX = 'app_records_singleton';
/** Rounds of a singleton create that lost a race (another create of the key got in first). */
const SINGLETON_ROUNDS = 5;

const isSingletonClash = (err: unknown) => {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return e?.code === '23505' && e.constraint === SINGLETON_INDEX;
};

/**
 * A create with `singletonPer`: the record holding `insert.singletonKey` is updated with
 * `update` (fields set or reset, sections merged, as an upsert by ref does), else, for an
 * admin, the most recently deleted record with that key is revived with it, else `insert`
 * is inserted. Answers the record, whether it was inserted and what it was before, or
 * `undefined` when the live record with the key is one the caller may not change.
 *
 * `onlyContactId` (a user's create): only a live record of that contact, not admin-only,
 * counts as theirs; a deleted one is never revived for them (they cannot see it), so they
 * get a new record instead.
 *
 * Runs inside the caller's transaction (with the create's event). Concurrent creates of one
 * key end with one record: the unique index on live keys lets one
 * insert (or revival) through; the others find nothing inserted (`ON CONFLICT DO NOTHING`)
 * or hit the index, and look again, finding that record and updating it.
 */
export async function createSingleton(
  q: Queryable,
  collectionId: string,
  appId: string,
  /** `insert.singletonKey` is the key. */
  { id, insert, update }: InsertOrUpdate,
  onlyContactId?: string,
): Promise<Written | undefined> {
  const key = insert.singletonKey as string;
  const app = sql`collection_id = ${collectionId} AND app_id = ${appId}`;
  const sets = [...assignments(RECORD, update), sql`updated_at = now()`];
  const changed = changedJson(RECORD, update);
  const check = boundsCheck(RECORD, changed);
  for (let round = 1; round <= SINGLETON_ROUNDS; round++) {
    try {
      const { rows: live } = await q.query<{ id: string; contact_id: string | null; visibility: string }>(sql`
        SELECT id, contact_id, visibility FROM app_records
        WHERE ${app} AND singleton_key = ${key} AND deleted_at IS NULL`);
      if (live[0]) {
        const { contact_id, visibility } = live[0];
        if (onlyContactId !== undefined && (contact_id !== onlyContactId || visibility === 'admin')) return undefined;
        // Key and liveness checked again: the record may have changed since it was read. The
        // merge is bounded as a PATCH's is, in the UPDATE's WHERE.
        const { rows } = await q.query<Row>(sql`
          UPDATE app_records SET ${join(sets, ', ')}
          WHERE ${app} AND id = ${live[0].id} AND singleton_key = ${key} AND deleted_at IS NULL
            ${check ? sql`AND ${check}` : empty}
          RETURNING *, ${previousColumn('app_records')}`);
        if (rows[0]) return written(rows[0], false);
        const refusal = await sizeRefusal(q, RECORD, collectionId, appId, live[0].id, changed);
        if (refusal) throw refusal;
        continue;
      }
      if (onlyContactId === undefined) {
        // The revival is the statement that may meet a record made live meanwhile (the unique
        // index): a savepoint keeps the caller's transaction usable for the next round.
        await q.query(sql`SAVEPOINT singleton_revival`);
        let rows: Row[];
        try {
          ({ rows } = await q.query<Row>(sql`
            UPDATE app_records SET ${join([...sets, sql`deleted_at = NULL`], ', ')}
            WHERE ${app} AND deleted_at IS NOT NULL AND id = (
              SELECT id FROM app_records WHERE ${app} AND singleton_key = ${key} AND deleted_at IS NOT NULL
              ORDER BY deleted_at DESC, updated_at DESC, id DESC LIMIT 1)
            RETURNING *, ${previousColumn('app_records')}`));
        } catch (err) {
          await q.query(sql`ROLLBACK TO SAVEPOINT singleton_revival`);
          throw err;
        }
        await q.query(sql`RELEASE SAVEPOINT singleton_revival`);
        if (rows[0]) return written(rows[0], false);
      }
      const rendered = columnsOf(RECORD, insert);
      const { rows } = await q.query<Row>(sql`
        INSERT INTO app_records (collection_id, app_id, id, ${raw([...rendered.keys()].join(', '))})
        VALUES (${collectionId}, ${appId}, ${id}, ${join([...rendered.values()])})
        ON CONFLICT (collection_id, app_id, singleton_key) WHERE singleton_key IS NOT NULL AND deleted_at IS NULL
        DO NOTHING
        RETURNING *`);
      if (rows[0]) return written(rows[0], true);
    } catch (err) {
      // A revival that met a record made live meanwhile: look again. Any other unique value
      // (a ref another record holds) is the caller's conflict.
      if (!isSingletonClash(err)) throw err;
    }
  }
  throw conflict('Other requests keep changing the record holding this singletonPer value; try again');
}

/** A scope a record may have: the field that puts it there, and what that scope is worth. */
export interface ScopeTier {
  type: string;
  /** A record is in this tier when this field is set (and no earlier tier's is). */
  field: string;
  specificity: number;
  /** The scope id is the field's value (an anchor id); otherwise there is none (a facet rule). */
  idIsValue: boolean;
}

/**
 * `scopeType`, `scopeId` and `specificity` as SQL over the record as a change leaves it, for
 * the UPDATE that makes the change: each tier's field is the changed value when the change
 * names it (null included), else the stored one; the first tier whose field is set names the
 * scope, none the collection. Computed in the statement, so a concurrent change of another
 * anchor is seen (READ COMMITTED rereads the row it waited for).
 */
export function scopeAfterChange(
  collectionId: string,
  tiers: readonly ScopeTier[],
  none: { type: string; specificity: number },
  changed: Record<string, unknown>,
): { scopeType: Sql; scopeId: Sql; specificity: Sql } {
  const after = (field: string): Sql => {
    const def = fieldOf(RECORD, field) as FieldDef;
    if (!Object.hasOwn(changed, field)) return raw(`app_records.${def.col}`);
    const v = changed[field];
    if (v === null || v === undefined) return sql`NULL`;
    return def.kind === 'json' ? sql`${JSON.stringify(v)}::jsonb` : sql`${v}::text`;
  };
  const cases = (then: (t: ScopeTier) => Sql, otherwise: Sql) =>
    sql`CASE ${join(
      tiers.map((t) => sql`WHEN ${after(t.field)} IS NOT NULL THEN ${then(t)}`),
      ' ',
    )} ELSE ${otherwise} END`;
  return {
    scopeType: cases((t) => sql`${t.type}::text`, sql`${none.type}::text`),
    scopeId: cases((t) => (t.idIsValue ? sql`(${after(t.field)})::text` : sql`NULL::text`), sql`${collectionId}::text`),
    specificity: cases((t) => sql`${t.specificity}::int`, sql`${none.specificity}::int`),
  };
}

/** Which live records a bulk delete takes: by id and/or ref, or by anchors; optionally of one type. */
export type BulkDeleteTarget =
  | { ids: string[]; refs: string[]; recordType?: string }
  | { scope: { productId?: string; variantId?: string; batchId?: string; proofId?: string }; recordType?: string };

/** The anchors of a scope, by field name (only these reach SQL, as whitelisted columns). */
const ANCHOR_COLUMNS = { productId: 'product_id', variantId: 'variant_id', batchId: 'batch_id', proofId: 'proof_id' };

/**
 * Soft-deletes the live records of an app a target names, in one statement; answers each
 * record deleted, its plain fields only (`scalarColumns`, for its event): a delete of many
 * records does not read their JSON back.
 */
export async function softDeleteMatching(
  q: Queryable,
  collectionId: string,
  appId: string,
  target: BulkDeleteTarget,
): Promise<Row[]> {
  const where = [sql`collection_id = ${collectionId}`, sql`app_id = ${appId}`, sql`deleted_at IS NULL`];
  if ('scope' in target) {
    const anchors = Object.entries(ANCHOR_COLUMNS).flatMap(([field, col]) => {
      const value = target.scope[field as keyof typeof target.scope];
      return value === undefined ? [] : [sql`${raw(col)} = ${value}`];
    });
    // A scope without an anchor would be the whole app: it matches nothing (the service refuses it).
    if (anchors.length === 0) return [];
    where.push(...anchors);
  } else {
    const named = [];
    if (target.ids.length) named.push(sql`id IN (${join(target.ids)})`);
    if (target.refs.length) named.push(sql`ref IN (${join(target.refs)})`);
    if (named.length === 0) return [];
    where.push(sql`(${join(named, ' OR ')})`);
  }
  if (target.recordType !== undefined) where.push(sql`record_type = ${target.recordType}`);
  const returned = ['id', 'app_id', ...scalarColumns(RECORD), 'created_at', 'updated_at', 'deleted_at'];
  const { rows } = await q.query<Row>(sql`
    UPDATE app_records SET deleted_at = now(), updated_at = now() WHERE ${join(where, ' AND ')}
    RETURNING ${raw(returned.join(', '))}`);
  return rows;
}
