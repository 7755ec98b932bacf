/** SQL of records beyond the shared object SQL: upsert by ref and bulk delete. */
import sql, { join, raw } from 'sql-template-tag';
import type { Queryable } from '../../../db/index.ts';
import { fieldOf, RECORD } from '../shared/kinds.ts';
import { columnsOf, MERGED_SECTIONS } from '../shared/objects.repository.ts';
import type { Row } from '../shared/sections.ts';

/**
 * Insert, or update the record holding this ref (reviving it if deleted). Given columns
 * overwrite; sections merge by top-level key, as a PATCH does. One statement.
 */
export async function upsertByRef(
  q: Queryable,
  collectionId: string,
  appId: string,
  id: string,
  /** By field name (sections included). */
  values: Record<string, unknown>,
  /** Fields written on insert only (derived defaults an update must not overwrite). */
  insertOnly: readonly string[] = [],
): Promise<Row & { created: boolean }> {
  const rendered = columnsOf(RECORD, values);
  const cols = [...rendered.keys()];
  const keep = new Set(insertOnly.map((name) => fieldOf(RECORD, name)?.col));
  const updates = cols
    .filter((c) => c !== 'ref' && !keep.has(c))
    .map((c) => (MERGED_SECTIONS.has(c) ? `${c} = app_records.${c} || EXCLUDED.${c}` : `${c} = EXCLUDED.${c}`));
  updates.push('deleted_at = NULL', 'updated_at = now()');
  const { rows } = await q.query<Row & { created: boolean }>(sql`
    INSERT INTO app_records (collection_id, app_id, id, ${raw(cols.join(', '))})
    VALUES (${collectionId}, ${appId}, ${id}, ${join([...rendered.values()])})
    ON CONFLICT (collection_id, app_id, ref) WHERE ref IS NOT NULL
    DO UPDATE SET ${raw(updates.join(', '))}
    RETURNING *, (xmax = 0) AS created`);
  return rows[0];
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
