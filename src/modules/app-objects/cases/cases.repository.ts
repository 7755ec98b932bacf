/** SQL of cases beyond the shared object SQL: the audit trail, history entries, summaries, bulk status. */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import { allOf, type Queryable } from '../../../db/index.ts';
import { CASE } from '../shared/kinds.ts';
import type { Condition } from '../shared/list-query.ts';
import { boundsCheck, closedAtFor, renderCondition, updateWithPrevious } from '../shared/objects.repository.ts';
import type { Row } from '../shared/sections.ts';

export interface HistoryRow {
  id: number;
  action: string;
  actor_id: string | null;
  actor_role: string;
  changed_fields: string[];
  changes: Record<string, unknown>;
  entry: Record<string, unknown> | null;
  target: string | null;
  at: Date;
}

export interface HistoryInsert {
  caseId: string;
  appId: string;
  action: 'create' | 'update' | 'delete' | 'entry' | 'status';
  actorId: string | null;
  actorRole: string;
  changedFields?: string[];
  changes?: Record<string, unknown>;
  entry?: Record<string, unknown>;
  target?: string;
}

export async function insertHistory(q: Queryable, collectionId: string, h: HistoryInsert): Promise<void> {
  await q.query(sql`
    INSERT INTO app_case_history (collection_id, case_id, app_id, action, actor_id, actor_role, changed_fields, changes, entry, target)
    VALUES (${collectionId}, ${h.caseId}, ${h.appId}, ${h.action}, ${h.actorId}, ${h.actorRole},
      ${JSON.stringify(h.changedFields ?? [])}::jsonb, ${JSON.stringify(h.changes ?? {})}::jsonb,
      ${h.entry ? JSON.stringify(h.entry) : null}::jsonb, ${h.target ?? null})`);
}

export async function listHistory(
  q: Queryable,
  collectionId: string,
  caseId: string,
  limit: number,
): Promise<HistoryRow[]> {
  const { rows } = await q.query<HistoryRow>(sql`
    SELECT id, action, actor_id, actor_role, changed_fields, changes, entry, target, at FROM app_case_history
    WHERE collection_id = ${collectionId} AND case_id = ${caseId} ORDER BY id LIMIT ${limit}`);
  return rows;
}

/**
 * Appends an entry to `<target>.history` and applies the optional status/priority/assignee
 * change, in one statement (concurrent appends all land). The previous row comes back too.
 */
export async function appendEntry(
  q: Queryable,
  collectionId: string,
  appId: string,
  caseId: string,
  target: 'owner' | 'admin',
  entry: Record<string, unknown>,
  change: { status?: string; priority?: number; assignedTo?: string },
): Promise<{ row: Row; previous: Record<string, unknown> } | undefined> {
  const sets: Sql[] = [];
  if (change.status !== undefined) {
    sets.push(
      sql`status = ${change.status}`,
      sql`closed_at = ${closedAtFor(change.status, CASE.closedStatuses ?? [])}`,
    );
  }
  if (change.priority !== undefined) sets.push(sql`priority = ${change.priority}`);
  if (change.assignedTo !== undefined) sets.push(sql`assigned_to = ${change.assignedTo}`);
  const section = raw(target);
  // The section as it will be, for the size bounds (bounds.ts): a history grows by every entry.
  const grown = historyAppended(target, entry);
  const where = sql`collection_id = ${collectionId} AND app_id = ${appId} AND id = ${caseId} AND deleted_at IS NULL`;
  return updateWithPrevious(
    q,
    'app_cases',
    [sql`${section} = ${grown}`, ...sets, sql`updated_at = now()`],
    where,
    boundsCheck(CASE, new Map([[target, grown]])),
  );
}

/** A case's `owner` or `admin` section with one more history entry, as SQL over the stored row. */
export function historyAppended(target: 'owner' | 'admin', entry: Record<string, unknown>): Sql {
  const section = raw(`app_cases.${target}`);
  return sql`jsonb_set(${section}, '{history}',
    (CASE WHEN jsonb_typeof(${section}->'history') = 'array' THEN ${section}->'history' ELSE '[]'::jsonb END)
    || jsonb_build_array(${JSON.stringify(entry)}::jsonb))`;
}

export async function summary(
  q: Queryable,
  collectionId: string,
  appId: string,
  from: Date,
  to: Date,
): Promise<{
  byStatus: { k: string; n: number }[];
  byPriority: { k: string | null; n: number }[];
  trend: { d: Date; n: number }[];
}> {
  const where = sql`collection_id = ${collectionId} AND app_id = ${appId} AND deleted_at IS NULL
    AND created_at >= ${from.toISOString()}::timestamptz AND created_at < ${to.toISOString()}::timestamptz`;
  const byStatus = await q.query<{ k: string; n: number }>(
    sql`SELECT status AS k, count(*) AS n FROM app_cases WHERE ${where} GROUP BY 1 ORDER BY 1`,
  );
  const byPriority = await q.query<{ k: string | null; n: number }>(
    sql`SELECT priority::text AS k, count(*) AS n FROM app_cases WHERE ${where} GROUP BY 1 ORDER BY 1`,
  );
  // Weeks start on Monday (UTC), as ISO weeks do.
  const trend = await q.query<{ d: Date; n: number }>(sql`
    SELECT date_trunc('week', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS d, count(*) AS n
    FROM app_cases WHERE ${where} GROUP BY 1 ORDER BY 1`);
  return { byStatus: byStatus.rows, byPriority: byPriority.rows, trend: trend.rows };
}

/** Ids of live cases matching the conditions, in id order after `afterId` (for batched bulk work). */
export async function matchingIds(
  q: Queryable,
  collectionId: string,
  appId: string,
  conditions: Condition[],
  afterId: string,
  limit: number,
): Promise<string[]> {
  const where = [
    sql`collection_id = ${collectionId}`,
    sql`app_id = ${appId}`,
    sql`deleted_at IS NULL`,
    sql`id > ${afterId}`,
    ...conditions.map(renderCondition),
  ];
  const { rows } = await q.query<{ id: string }>(
    sql`SELECT id FROM app_cases WHERE ${join(where, ' AND ')} ORDER BY id LIMIT ${limit}`,
  );
  return rows.map((r) => r.id);
}

export async function countMatching(q: Queryable, collectionId: string, appId: string, conditions: Condition[]) {
  const where = [
    sql`collection_id = ${collectionId}`,
    sql`app_id = ${appId}`,
    sql`deleted_at IS NULL`,
    ...conditions.map(renderCondition),
  ];
  const { rows } = await q.query<{ n: number }>(sql`SELECT count(*) AS n FROM app_cases WHERE ${join(where, ' AND ')}`);
  return rows[0].n;
}

/**
 * The apps of a collection that hold live cases, by id, at most `limit`: a loose index scan of
 * app_cases_app_created (one index probe per app, whatever the number of cases).
 */
export async function appsWithCases(q: Queryable, collectionId: string, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ app_id: string }>(sql`
    WITH RECURSIVE apps (app_id) AS (
      (SELECT app_id FROM app_cases WHERE collection_id = ${collectionId} AND deleted_at IS NULL ORDER BY app_id LIMIT 1)
      UNION ALL
      SELECT (SELECT c.app_id FROM app_cases c
              WHERE c.collection_id = ${collectionId} AND c.deleted_at IS NULL AND c.app_id > apps.app_id
              ORDER BY c.app_id LIMIT 1)
      FROM apps WHERE apps.app_id IS NOT NULL
    )
    SELECT app_id FROM apps WHERE app_id IS NOT NULL LIMIT ${limit}`);
  return rows.map((r) => r.app_id);
}

/** Deltas of one key beyond which a reader folds them (one row per status afterwards). */
const FOLD_AT = 256;

/**
 * Exact number of live cases of an app with one of `statuses` (all statuses when undefined),
 * from the delta counters kept by the app_case_counts_track trigger.
 */
export async function countByStatus(
  q: Queryable,
  collectionId: string,
  appId: string,
  statuses: string[] | undefined,
): Promise<number> {
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    sql`app_id = ${appId}`,
    statuses && sql`status IN (${join(statuses)})`,
  );
  const { rows } = await q.query<{ total: number | null; parts: number }>(
    sql`SELECT sum(n) AS total, count(*) AS parts FROM app_case_counts WHERE ${where}`,
  );
  if (rows[0].parts > FOLD_AT * (statuses?.length ?? 4)) await foldCounts(q, collectionId, appId);
  return rows[0].total ?? 0;
}

/** Folds an app's counter deltas into one row per status, atomically. */
export async function foldCounts(q: Queryable, collectionId: string, appId: string): Promise<void> {
  await q.query(sql`
    WITH d AS (DELETE FROM app_case_counts WHERE collection_id = ${collectionId} AND app_id = ${appId} RETURNING status, n)
    INSERT INTO app_case_counts (collection_id, app_id, status, n)
    SELECT ${collectionId}, ${appId}, status, sum(n) FROM d GROUP BY status HAVING sum(n) <> 0`);
}
