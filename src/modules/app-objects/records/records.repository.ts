/** SQL of records beyond the shared object SQL: upsert by ref and bulk delete by ref. */
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

export async function softDeleteByRefs(
  q: Queryable,
  collectionId: string,
  appId: string,
  refs: string[],
): Promise<number> {
  if (refs.length === 0) return 0;
  const { rowCount } = await q.query(sql`
    UPDATE app_records SET deleted_at = now(), updated_at = now()
    WHERE collection_id = ${collectionId} AND app_id = ${appId} AND ref IN (${join(refs)}) AND deleted_at IS NULL`);
  return rowCount;
}
