/**
 * The SQL every object kind shares: insert, find, list, patch (atomic section merge),
 * soft delete, restore, aggregate. Table and column names come only from the kind tables
 * in kinds.ts and the whitelists in list-query.ts / aggregate.ts; values are parameters.
 */
import sql, { empty, join, raw, Sql } from 'sql-template-tag';
import type { Queryable } from '../../../db/index.ts';
import { type AppError, badRequest } from '../../../platform/errors.ts';
import type { AggregateSpec, MetricName } from './aggregate.ts';
import { firstOversize, OBJECT_MAX_BYTES, SECTION_MAX_BYTES, tooLarge } from './bounds.ts';
import { type FieldKind, fieldOf, type ObjectKind, type Section } from './kinds.ts';
import type { Condition, ListSpec } from './list-query.ts';
import type { Actor, Row } from './sections.ts';

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function value(kind: FieldKind, v: unknown): Sql {
  if (v === null || v === undefined) return sql`NULL`;
  if (kind === 'json') return sql`${JSON.stringify(v)}::jsonb`;
  if (kind === 'ts') return sql`${v instanceof Date ? v.toISOString() : v}::timestamptz`;
  return sql`${v}`;
}

/** The JSON sections merged key by key (by a PATCH or an upsert). */
export const MERGED_SECTIONS: ReadonlySet<string> = new Set(['data', 'owner', 'admin', 'metadata']);

/**
 * Values by field name (sections included) → column names and rendered values, through the
 * kind's field table; a name the kind does not have is a 400. Undefined values are left out.
 * A value that is already SQL (an expression a kind's repository derived, e.g. a record's
 * scope from its anchors) is used as it is; request values are JSON, never `Sql`.
 */
export function columnsOf(kind: ObjectKind, values: Record<string, unknown>): Map<string, Sql> {
  const cols = new Map<string, Sql>();
  for (const [name, v] of Object.entries(values)) {
    if (v === undefined) continue;
    const [col, fieldKind] = columnOf(kind, name);
    cols.set(col, v instanceof Sql ? v : value(fieldKind, v));
  }
  return cols;
}

/** A field's column and kind (a section is its own column, JSON); a name the kind does not have is a 400. */
function columnOf(kind: ObjectKind, name: string): [string, FieldKind] {
  if (MERGED_SECTIONS.has(name)) return [name, 'json'];
  const def = fieldOf(kind, name);
  if (!def) throw badRequest(`Unknown field ${name}`);
  return [def.col, def.kind];
}

/**
 * `closed_at` follows `status` in kinds with closing statuses: entering one sets it (a stored
 * closed_at is kept), leaving one clears it. `closed_at` is the stored value: NULL on insert.
 */
export const closedAtFor = (status: string, closedStatuses: readonly string[], stored: Sql = sql`closed_at`): Sql =>
  sql`CASE WHEN ${status}::text IN (${join([...closedStatuses])}) THEN coalesce(${stored}, now()) ELSE NULL END`;

/** The column set of a status change in a kind whose status closes it; none otherwise. */
const closedAtOf = (kind: ObjectKind, status: unknown, stored?: Sql): [string, Sql][] =>
  kind.closedStatuses && typeof status === 'string'
    ? [['closed_at', closedAtFor(status, kind.closedStatuses, stored)]]
    : [];

export function renderCondition(c: Condition): Sql {
  if (c.op === 'search') {
    const like = `%${escapeLike(c.value)}%`;
    return sql`(${join(
      c.cols.map((col) => sql`${raw(col)} ILIKE ${like}`),
      ' OR ',
    )})`;
  }
  const col = raw(c.col);
  switch (c.op) {
    case 'eq':
    case 'num':
      return sql`${col} = ${c.value}`;
    case 'numGte':
      return sql`${col} >= ${c.value}`;
    case 'numLte':
      return sql`${col} <= ${c.value}`;
    case 'numGt':
      return sql`${col} > ${c.value}`;
    case 'numLt':
      return sql`${col} < ${c.value}`;
    case 'ne':
      return sql`${col} IS DISTINCT FROM ${c.value}`;
    case 'in':
      return sql`${col} IN (${join(c.value)})`;
    case 'prefix':
      return sql`${col} LIKE ${`${escapeLike(c.value)}%`}`;
    case 'tag':
      return sql`${col} @> ${JSON.stringify([c.value])}::jsonb`;
    case 'gte':
      return sql`${col} >= ${c.value.toISOString()}::timestamptz`;
    case 'lte':
      return sql`${col} <= ${c.value.toISOString()}::timestamptz`;
    case 'gt':
      return sql`${col} > ${c.value.toISOString()}::timestamptz`;
    case 'lt':
      return sql`${col} < ${c.value.toISOString()}::timestamptz`;
    case 'lteOrNull':
      return sql`(${col} IS NULL OR ${col} <= ${c.value.toISOString()}::timestamptz)`;
    case 'gtOrNull':
      return sql`(${col} IS NULL OR ${col} > ${c.value.toISOString()}::timestamptz)`;
    case 'null':
      return sql`${col} IS NULL`;
    case 'notnull':
      return sql`${col} IS NOT NULL`;
  }
}

/** What the caller may see: admins everything (deleted only on request); users public and their own. */
export function visibleTo(caller: Actor, includeDeleted = false): Sql[] {
  if (caller.role === 'admin') return includeDeleted ? [] : [sql`deleted_at IS NULL`];
  return [
    sql`deleted_at IS NULL`,
    sql`(visibility = 'public' OR (visibility = 'owner' AND contact_id = ${caller.contactId}))`,
  ];
}

const scope = (collectionId: string, appId: string) => [sql`collection_id = ${collectionId}`, sql`app_id = ${appId}`];

/**
 * Inserts an object; `values` by field name (sections included). The size bounds are a
 * condition of the insert (`INSERT … SELECT … WHERE`), so a refused create writes nothing;
 * `undefined` when they refused it (`measureValues` says which).
 */
export async function insertObject(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  id: string,
  values: Record<string, unknown>,
): Promise<Row | undefined> {
  const rendered = columnsOf(kind, values);
  for (const [col, v] of closedAtOf(kind, values.status, sql`NULL::timestamptz`)) rendered.set(col, v);
  const cols = [...rendered.keys()];
  const check = newValuesCheck(kind, rendered);
  const { rows } = await q.query<Row>(sql`
    INSERT INTO ${raw(kind.table)} (collection_id, app_id, id${cols.length ? raw(`, ${cols.join(', ')}`) : empty})
    SELECT ${collectionId}, ${appId}, ${id}${cols.length ? sql`, ${join([...rendered.values()])}` : empty}
    ${check ? sql`WHERE ${check}` : empty}
    RETURNING *`);
  return rows[0];
}

export async function findObject(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  id: string,
): Promise<Row | undefined> {
  const { rows } = await q.query<Row>(
    sql`SELECT * FROM ${raw(kind.table)} WHERE ${join([...scope(collectionId, appId), sql`id = ${id}`], ' AND ')}`,
  );
  return rows[0];
}

export async function listObjects(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  caller: Actor,
  spec: ListSpec,
  /** A cheaper exact count for this list, when the kind has one; undefined to count rows. */
  fastCount?: () => Promise<number | undefined>,
): Promise<{ rows: Row[]; total: number }> {
  const where = join(
    [...scope(collectionId, appId), ...visibleTo(caller, spec.includeDeleted), ...spec.conditions.map(renderCondition)],
    ' AND ',
  );
  const { col, dir, nullable } = spec.order;
  const order = raw(`${col} ${dir}${nullable ? ' NULLS LAST' : ''}, id ${dir}`);
  // Two statements rather than count(*) OVER (): the page stops after `limit` index entries,
  // and the count can run as an index-only scan.
  const page = await q.query<Row>(
    sql`SELECT * FROM ${raw(kind.table)} WHERE ${where} ORDER BY ${order} LIMIT ${spec.limit} OFFSET ${spec.offset}`,
  );
  let total = spec.offset + page.rows.length;
  if (page.rows.length === spec.limit || (page.rows.length === 0 && spec.offset > 0)) {
    const fast = fastCount ? await fastCount() : undefined;
    if (fast !== undefined) {
      total = fast;
    } else {
      const count = await q.query<{ total: number }>(
        sql`SELECT count(*) AS total FROM ${raw(kind.table)} WHERE ${where}`,
      );
      total = count.rows[0].total;
    }
  }
  return { rows: page.rows, total };
}

export interface SectionPatch {
  /** Top-level keys to set (merged into the section). */
  set: Record<string, unknown>;
  /** Top-level keys to remove (sent as null). */
  remove: string[];
}

export interface Patch {
  /** Field name → new value (null clears it). */
  fields: Record<string, unknown>;
  sections: Partial<Record<Section | 'metadata', SectionPatch>>;
  /** Fields set back to their column's default (a section to `{}`, a status to its default). */
  reset?: string[];
}

/** A section merged by a patch: `(stored || set) - removed keys`, over the stored value named with the table. */
const mergedSection = (kind: ObjectKind, section: string, p: SectionPatch): Sql =>
  sql`(${raw(`${kind.table}.${section}`)} || ${JSON.stringify(p.set)}::jsonb) - ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(p.remove)}::jsonb))`;

/**
 * The SET list of a patch: columns set or reset, and sections merged key by key in SQL
 * (`section || patch`, minus removed keys), so concurrent patches of different keys never
 * lose each other. The stored values are named with the table (`app_records.data`): in an
 * upsert's `ON CONFLICT DO UPDATE` a bare name would also match the row proposed for insertion.
 */
export function assignments(kind: ObjectKind, patch: Patch): Sql[] {
  const columns = [...columnsOf(kind, patch.fields), ...closedAtOf(kind, patch.fields.status)];
  const sets: Sql[] = columns.map(([col, v]) => sql`${raw(col)} = ${v}`);
  // A field both reset and set (a scopeId sent as null that the anchors derive again) takes
  // the value set: one column may be assigned once in an UPDATE.
  for (const name of patch.reset ?? []) {
    if (!Object.hasOwn(patch.fields, name)) sets.push(sql`${raw(columnOf(kind, name)[0])} = DEFAULT`);
  }
  for (const [section, p] of Object.entries(patch.sections)) {
    if (!p) continue;
    sets.push(sql`${raw(section)} = ${mergedSection(kind, section, p)}`);
  }
  return sets;
}

/**
 * The value each measured JSON column (`kind.sized`) will have after a patch, as SQL over the
 * stored row (named with the table): merged sections, JSON fields set, and reset ones as NULL
 * (their defaults, `{}` or null, weigh nothing). Columns the patch leaves alone are not in it.
 */
export function changedJson(kind: ObjectKind, patch: Patch): Map<string, Sql> {
  const out = new Map<string, Sql>();
  for (const [col, v] of columnsOf(kind, patch.fields)) if (kind.sized.includes(col)) out.set(col, v);
  for (const name of patch.reset ?? []) {
    const [col] = columnOf(kind, name);
    if (kind.sized.includes(col) && !out.has(col)) out.set(col, sql`NULL::jsonb`);
  }
  for (const [section, p] of Object.entries(patch.sections)) {
    if (p && kind.sized.includes(section)) out.set(section, mergedSection(kind, section, p));
  }
  return out;
}

const bytesOf = (v: Sql) => sql`coalesce(octet_length((${v})::text), 0)`;

/** The object's JSON columns after the change, together: changed ones as they will be, the rest as stored. */
const totalOf = (kind: ObjectKind, changed: Map<string, Sql>) =>
  join(
    kind.sized.map((col) => bytesOf(changed.get(col) ?? raw(`${kind.table}.${col}`))),
    ' + ',
  );

/**
 * The size bounds (`bounds.ts`) as a condition of the statement that writes the change: each
 * changed JSON column and the object as a whole, measured as PostgreSQL prints them. In the
 * UPDATE's WHERE it is evaluated on the row the UPDATE changes (PostgreSQL rechecks it on the
 * latest version after waiting for a concurrent writer's lock), so concurrent merges cannot
 * pass a bound together. `undefined` when the change touches no JSON column.
 */
export function boundsCheck(kind: ObjectKind, changed: Map<string, Sql>): Sql | undefined {
  if (changed.size === 0) return undefined;
  return join(
    [
      ...[...changed.values()].map((v) => sql`${bytesOf(v)} <= ${SECTION_MAX_BYTES}`),
      sql`(${totalOf(kind, changed)}) <= ${OBJECT_MAX_BYTES}`,
    ],
    ' AND ',
  );
}

/** The sizes a refused write measured: each changed JSON column by field name, and the total. */
export interface Measured {
  sections: Record<string, number>;
  total: number;
}

/** A JSON column's field name in the API (`facet_rule` is `facetRule`). */
const nameOf = (kind: ObjectKind, col: string) =>
  Object.entries(kind.fields).find(([, d]) => d.col === col)?.[0] ?? col;

/**
 * Why a bounded write of `changed` to the object `id` wrote nothing, when a size bound is why:
 * the 413 naming the bound, measured as `boundsCheck` measures it, on what the change would
 * make of the object (live or not). Undefined when the change fits (or the object is gone):
 * the caller's own answer then (404, or a retry).
 */
export async function sizeRefusal(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  id: string,
  changed: Map<string, Sql>,
): Promise<AppError | undefined> {
  if (changed.size === 0) return undefined;
  const cols = [...changed.entries()];
  const { rows } = await q.query<Record<string, number>>(sql`
    SELECT ${join(
      [...cols.map(([, v], i) => sql`${bytesOf(v)} AS ${raw(`s${i}`)}`), sql`${totalOf(kind, changed)} AS total`],
      ', ',
    )}
    FROM ${raw(kind.table)} WHERE ${join([...scope(collectionId, appId), sql`id = ${id}`], ' AND ')}`);
  const r = rows[0];
  if (!r) return undefined;
  const sections = Object.fromEntries(cols.map(([col], i) => [nameOf(kind, col), Number(r[`s${i}`])]));
  const over = firstOversize(sections, Number(r.total));
  return over ? tooLarge(over, kind.name) : undefined;
}

/** A new object's JSON values (rendered by column) against the bounds; the columns left out hold their small defaults. */
function newValuesCheck(kind: ObjectKind, rendered: Map<string, Sql>): Sql | undefined {
  const given = [...rendered].filter(([col]) => kind.sized.includes(col)).map(([, v]) => v);
  if (given.length === 0) return undefined;
  return join(
    [
      ...given.map((v) => sql`${bytesOf(v)} <= ${SECTION_MAX_BYTES}`),
      sql`(${join(given.map(bytesOf), ' + ')}) <= ${OBJECT_MAX_BYTES}`,
    ],
    ' AND ',
  );
}

/** The sizes of a new object's JSON values (`values` by field name), measured as the bounds measure them. */
export async function measureValues(
  q: Queryable,
  kind: ObjectKind,
  values: Record<string, unknown>,
): Promise<Measured> {
  const cols = [...columnsOf(kind, values)].filter(([col]) => kind.sized.includes(col));
  if (cols.length === 0) return { sections: {}, total: 0 };
  const { rows } = await q.query<Record<string, number>>(
    sql`SELECT ${join(
      cols.map(([, v], i) => sql`${bytesOf(v)} AS ${raw(`s${i}`)}`),
      ', ',
    )}`,
  );
  const sections = Object.fromEntries(cols.map(([col], i) => [nameOf(kind, col), Number(rows[0][`s${i}`])]));
  return { sections, total: Object.values(sections).reduce((a, b) => a + b, 0) };
}

/**
 * One UPDATE statement (`assignments`): columns set, sections merged key by key, and the size
 * bounds checked in its WHERE (`boundsCheck`). The previous row (as JSON, locked) comes back
 * too, for the audit trail. `undefined` when no row was changed: gone, not the owner's, or
 * past a bound (`sizeRefusal` tells which).
 */
export async function patchObject(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  id: string,
  patch: Patch,
  onlyContactId?: string,
): Promise<{ row: Row; previous: Record<string, unknown> } | undefined> {
  const sets = [...assignments(kind, patch), sql`updated_at = now()`];
  const where = [...scope(collectionId, appId), sql`id = ${id}`, sql`deleted_at IS NULL`];
  if (onlyContactId !== undefined) where.push(sql`contact_id = ${onlyContactId}`);
  return updateWithPrevious(q, kind.table, sets, join(where, ' AND '), boundsCheck(kind, changedJson(kind, patch)));
}

/**
 * One UPDATE of the row `where` selects, answering the new row and the previous one (locked,
 * as JSON). `check` (the size bounds) is a condition of the UPDATE only: the row is locked
 * first, then the check sees its latest version.
 */
export async function updateWithPrevious(
  q: Queryable,
  table: ObjectKind['table'],
  sets: Sql[],
  where: Sql,
  check?: Sql,
): Promise<{ row: Row; previous: Record<string, unknown> } | undefined> {
  const t = raw(table);
  const { rows } = await q.query<Row & { _previous: Record<string, unknown> }>(sql`
    WITH prev AS (SELECT to_jsonb(${t}) AS j FROM ${t} WHERE ${where} FOR UPDATE)
    UPDATE ${t} SET ${join(sets, ', ')} FROM prev WHERE ${where}${check ? sql` AND ${check}` : empty}
    RETURNING ${t}.*, prev.j AS _previous`);
  if (!rows[0]) return undefined;
  const { _previous, ...row } = rows[0];
  return { row: row as Row, previous: _previous };
}

export async function softDelete(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  ids: string[],
  onlyContactId?: string,
): Promise<Row[]> {
  if (ids.length === 0) return [];
  const where = [...scope(collectionId, appId), sql`id IN (${join(ids)})`, sql`deleted_at IS NULL`];
  if (onlyContactId !== undefined) where.push(sql`contact_id = ${onlyContactId}`);
  const { rows } = await q.query<Row>(
    sql`UPDATE ${raw(kind.table)} SET deleted_at = now(), updated_at = now() WHERE ${join(where, ' AND ')} RETURNING *`,
  );
  return rows;
}

/** Makes an object live again (a no-op on a live one); answers it and its row before. */
export async function restore(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  id: string,
): Promise<{ row: Row; previous: Record<string, unknown> } | undefined> {
  return updateWithPrevious(
    q,
    kind.table,
    [sql`deleted_at = NULL`, sql`updated_at = now()`],
    join([...scope(collectionId, appId), sql`id = ${id}`], ' AND '),
  );
}

/**
 * A RETURNING column of an INSERT … ON CONFLICT DO UPDATE or an UPDATE of `table`: the row as
 * it was before the statement, as JSON (`_previous`), null for a row the statement inserted.
 * A statement does not see its own changes (its subqueries read the snapshot it began with),
 * so the subquery finds the old version of the row it just changed. A row another transaction
 * inserted after the statement began (the ref an upsert conflicted with) is not in that
 * snapshot either: null too.
 */
export const previousColumn = (table: ObjectKind['table']): Sql => {
  const t = raw(table);
  return sql`(SELECT to_jsonb(p) FROM ${t} p
    WHERE p.collection_id = ${t}.collection_id AND p.app_id = ${t}.app_id AND p.id = ${t}.id) AS _previous`;
};

/** The objects of a kind in an app pointing at a parent, as the caller sees them. */
export interface Children {
  kind: ObjectKind;
  collectionId: string;
  appId: string;
  caller: Actor;
  parentType: string;
  parentId: string;
}

const childrenWhere = (c: Children) =>
  join(
    [
      ...scope(c.collectionId, c.appId),
      sql`parent_type = ${c.parentType}`,
      sql`parent_id = ${c.parentId}`,
      ...visibleTo(c.caller),
    ],
    ' AND ',
  );

/** Objects pointing at a parent (a case's related threads and records), oldest first. */
export async function childrenOf(q: Queryable, c: Children, limit: number): Promise<Row[]> {
  const { rows } = await q.query<Row>(
    sql`SELECT * FROM ${raw(c.kind.table)} WHERE ${childrenWhere(c)} ORDER BY created_at, id LIMIT ${limit}`,
  );
  return rows;
}

/** How many objects point at a parent, and when the last of them changed. */
export async function countChildren(q: Queryable, c: Children): Promise<{ count: number; last: Date | null }> {
  const { rows } = await q.query<{ count: number; last: Date | null }>(
    sql`SELECT count(*) AS count, max(updated_at) AS last FROM ${raw(c.kind.table)} WHERE ${childrenWhere(c)}`,
  );
  return rows[0];
}

const CLOSE_SECONDS = 'extract(epoch FROM closed_at - created_at)';
const METRIC_SQL: Record<MetricName, string> = {
  count: 'count(*)',
  avg_close_time_seconds: `avg(${CLOSE_SECONDS}) FILTER (WHERE closed_at IS NOT NULL)`,
  p50_close_time_seconds: `percentile_cont(0.5) WITHIN GROUP (ORDER BY ${CLOSE_SECONDS}) FILTER (WHERE closed_at IS NOT NULL)`,
  p95_close_time_seconds: `percentile_cont(0.95) WITHIN GROUP (ORDER BY ${CLOSE_SECONDS}) FILTER (WHERE closed_at IS NOT NULL)`,
  total_replies: 'coalesce(sum(reply_count), 0)',
  avg_replies: 'avg(reply_count)',
};

export const AGGREGATE_GROUP_LIMIT = 1000;

export async function aggregate(
  q: Queryable,
  kind: ObjectKind,
  collectionId: string,
  appId: string,
  caller: Actor,
  spec: AggregateSpec,
): Promise<{
  totals: Record<string, number | null>;
  groups?: Record<string, unknown>[];
  /** Each bucket's first instant and its metrics, oldest first. */
  timeSeries?: (Record<string, unknown> & { start: Date })[];
}> {
  const where = join(
    [...scope(collectionId, appId), ...visibleTo(caller), ...spec.conditions.map(renderCondition)],
    ' AND ',
  );
  const metrics = raw(spec.metrics.map((m) => `${METRIC_SQL[m]} AS ${m}`).join(', '));
  const t = raw(kind.table);
  const totals = (await q.query<Record<string, number | null>>(sql`SELECT ${metrics} FROM ${t} WHERE ${where}`))
    .rows[0];
  let groups: Record<string, unknown>[] | undefined;
  if (spec.groupBy.length > 0) {
    const cols = spec.groupBy.map((g, i) => `${g.col} AS g${i}`).join(', ');
    const by = spec.groupBy.map((_g, i) => `${i + 1}`).join(', ');
    const { rows } = await q.query<Record<string, unknown>>(
      sql`SELECT ${raw(cols)}, ${metrics} FROM ${t} WHERE ${where} GROUP BY ${raw(by)} ORDER BY count DESC, ${raw(by)} LIMIT ${AGGREGATE_GROUP_LIMIT}`,
    );
    groups = rows.map((r) => {
      const g: Record<string, unknown> = {};
      spec.groupBy.forEach((def, i) => {
        g[def.name] = r[`g${i}`];
      });
      for (const m of spec.metrics) g[m] = r[m];
      return g;
    });
  }
  let timeSeries: (Record<string, unknown> & { start: Date })[] | undefined;
  if (spec.timeSeries) {
    const col = raw(spec.timeSeries.col);
    const { rows } = await q.query<Record<string, unknown> & { start: Date }>(sql`
      SELECT date_trunc(${spec.timeSeries.interval}, ${col} AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS start, ${metrics}
      FROM ${t} WHERE ${where} AND ${col} IS NOT NULL GROUP BY 1 ORDER BY 1 LIMIT ${AGGREGATE_GROUP_LIMIT}`);
    timeSeries = rows;
  }
  return { totals, groups, timeSeries };
}
