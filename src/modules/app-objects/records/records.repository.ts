/** SQL of records beyond the shared object SQL: upsert by ref, the scope a change leaves, bulk delete. */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import type { Queryable } from '../../../db/index.ts';
import { type FieldDef, fieldOf, RECORD } from '../shared/kinds.ts';
import { assignments, columnsOf, type Patch } from '../shared/objects.repository.ts';
import type { Row } from '../shared/sections.ts';

/**
 * Insert `insert`, or, when a record holds this ref, apply `update` to it (reviving it if
 * deleted): fields set, reset to their default, sections merged by top-level key, as a PATCH
 * does. One statement, so concurrent upserts of one ref queue on its row.
 */
export async function upsertByRef(
  q: Queryable,
  collectionId: string,
  appId: string,
  id: string,
  /** The new record's values by field name (sections included). */
  insert: Record<string, unknown>,
  /** The change an existing record gets (never its ref). */
  update: Patch,
): Promise<Row & { created: boolean }> {
  const rendered = columnsOf(RECORD, insert);
  const cols = [...rendered.keys()];
  const sets = [...assignments(RECORD, update), sql`deleted_at = NULL`, sql`updated_at = now()`];
  const { rows } = await q.query<Row & { created: boolean }>(sql`
    INSERT INTO app_records (collection_id, app_id, id, ${raw(cols.join(', '))})
    VALUES (${collectionId}, ${appId}, ${id}, ${join([...rendered.values()])})
    ON CONFLICT (collection_id, app_id, ref) WHERE ref IS NOT NULL
    DO UPDATE SET ${join(sets, ', ')}
    RETURNING *, (xmax = 0) AS created`);
  return rows[0];
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

/** Soft-deletes the live records of an app a target names, in one statement; answers how many. */
export async function softDeleteMatching(
  q: Queryable,
  collectionId: string,
  appId: string,
  target: BulkDeleteTarget,
): Promise<number> {
  const where = [sql`collection_id = ${collectionId}`, sql`app_id = ${appId}`, sql`deleted_at IS NULL`];
  if ('scope' in target) {
    const anchors = Object.entries(ANCHOR_COLUMNS).flatMap(([field, col]) => {
      const value = target.scope[field as keyof typeof target.scope];
      return value === undefined ? [] : [sql`${raw(col)} = ${value}`];
    });
    // A scope without an anchor would be the whole app: it matches nothing (the service refuses it).
    if (anchors.length === 0) return 0;
    where.push(...anchors);
  } else {
    const named = [];
    if (target.ids.length) named.push(sql`id IN (${join(target.ids)})`);
    if (target.refs.length) named.push(sql`ref IN (${join(target.refs)})`);
    if (named.length === 0) return 0;
    where.push(sql`(${join(named, ' OR ')})`);
  }
  if (target.recordType !== undefined) where.push(sql`record_type = ${target.recordType}`);
  const { rowCount } = await q.query(sql`
    UPDATE app_records SET deleted_at = now(), updated_at = now() WHERE ${join(where, ' AND ')}`);
  return rowCount;
}
