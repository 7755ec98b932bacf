/**
 * SQL of maintained progress (migration 0204: journey_progress_state, journey_progress, their
 * counters): the state a journey's progress follows, the rebuild's statements (the funnel's own
 * CTE chain, journeys.repository.ts `funnelCtes`), and the reads that answer from the counters.
 * journeys.progress.ts has the states and the rebuild.
 */
import sql, { join, raw } from 'sql-template-tag';
import type { Db, Queryable } from '../../db/index.ts';
import type { IdField } from '../interactions/index.ts';
import { type FunnelInput, funnelCtes, type JourneyRow, type StepCounts } from './journeys.repository.ts';

/** A step as progress follows it: the interaction and outcome that complete it. */
export interface KeptStep {
  interactionId: string;
  outcome: string;
}

export interface ProgressState {
  version: number;
  /** null: a step has no mapping, nothing is kept. */
  steps: KeptStep[] | null;
  /** The declared breakdown properties whose values the rows keep (`touch`, migration 0920). */
  props: string[] | null;
  ready: boolean;
}

export async function findProgressState(
  db: Queryable,
  collectionId: string,
  journeyId: string,
): Promise<ProgressState | undefined> {
  const { rows } = await db.query<ProgressState>(sql`
    SELECT version, steps, props, ready FROM journey_progress_state
    WHERE collection_id = ${collectionId} AND journey_id = ${journeyId}`);
  return rows[0];
}

/**
 * Records the steps progress follows (null: none can be kept) and the breakdown properties its
 * rows keep values of: a new version, not ready, when either differs from those recorded. True
 * when rows must be rebuilt or removed.
 */
export async function followSteps(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  steps: KeptStep[] | null,
  props: string[] = [],
): Promise<boolean> {
  const kept = steps === null || props.length === 0 ? null : JSON.stringify(props);
  const { rows } = await db.query<{ fresh: boolean }>(sql`
    INSERT INTO journey_progress_state AS s (collection_id, journey_id, version, steps, props)
    VALUES (${collectionId}, ${journeyId}, 1, ${steps === null ? null : JSON.stringify(steps)}::jsonb, ${kept}::jsonb)
    ON CONFLICT (collection_id, journey_id) DO UPDATE
      SET version = s.version + 1, steps = excluded.steps, props = excluded.props, ready = false
      WHERE s.steps IS DISTINCT FROM excluded.steps OR s.props IS DISTINCT FROM excluded.props
    RETURNING (xmax = 0) AS fresh`);
  // A new journey whose steps cannot be kept has nothing to build.
  return rows.length > 0 && !(rows[0].fresh && steps === null);
}

/**
 * Waits until every transaction that was writing interaction_events when it was called has
 * ended: after it, every writer sees the progress state committed before the call, so the
 * rebuild's reading of entrants misses no event the triggers did not handle. It notes the
 * transactions holding the table's write lock and waits for their own (virtual transaction)
 * locks to go, as CREATE INDEX CONCURRENTLY waits for writers: a lock on the table itself
 * would queue every tenant's new event writers behind the longest running one, and waiting
 * for every older transaction of the server would wait for unrelated ones. Throws after
 * `timeoutMs` (the task is then retried).
 */
export async function waitForEventWriters(db: Db, timeoutMs: number, pollMs = 20): Promise<void> {
  const { rows } = await db.query<{ writers: string[] | null }>(`
    SELECT array_agg(DISTINCT virtualtransaction) AS writers FROM pg_locks
    WHERE locktype = 'relation' AND relation = 'interaction_events'::regclass
      AND mode = 'RowExclusiveLock' AND granted AND pid <> pg_backend_pid()`);
  const writers = rows[0].writers;
  if (!writers?.length) return;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows: running } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'virtualxid' AND virtualxid = ANY($1::text[])`,
      [writers],
    );
    if (running[0].n === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `${running[0].n} event writer(s) older than the progress state still running after ${timeoutMs} ms`,
      );
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export interface RecipientKey {
  idField: IdField;
  rid: string;
}

/** Live events carrying the journey id (an estimate of its entrants, to size the rebuild's parts). */
export async function countJourneyEntries(db: Queryable, collectionId: string, journeyId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql`
    SELECT count(*)::bigint AS n FROM interaction_events
    WHERE collection_id = ${collectionId} AND journey_id = ${journeyId} AND deleted_at IS NULL`);
  return rows[0].n;
}

/**
 * Writes the progress rows of one part of a journey's entrants in `version`, computed by the
 * funnel's own statement (hash joins over the journey's events: far cheaper per recipient than
 * the triggers' lookups), and adds them to the counters. A row a trigger already wrote in this
 * version is newer and is kept; rows the triggers touch meanwhile are recomputed afterwards
 * (journey_progress_dirty). Returns the rows written.
 */
export async function bulkProgress(
  db: Queryable,
  collectionId: string,
  f: FunnelInput & { version: number; props: string[] | null },
): Promise<number> {
  const completions = f.steps.map((_, k) => raw(`s${k}.completed`));
  const joins = f.steps.map((_, k) => raw(`LEFT JOIN s${k} ON s${k}.rid = e.rid`));
  const idField = f.idField === 'contactId' ? 'contactId' : 'userId';
  // The declared properties' values (migration 0920's journey_touch_of, as the triggers keep
  // them): each row's events at its times, by index lookups on the times just computed.
  const kept = f.steps.map((s) => ({ interactionId: s.interactionId, outcome: s.outcome }));
  const rid = raw(f.idField === 'contactId' ? 'x.contact_id' : 'x.user_id');
  const touch = f.props?.length
    ? sql`journey_touch_of(${JSON.stringify(f.props)}::jsonb, ${JSON.stringify(kept)}::jsonb, ${f.journeyId},
        entered_at, done, (
          SELECT array_agg(x ORDER BY x.occurred_at, x.id) FROM interaction_events x
          WHERE x.collection_id = ${collectionId} AND ${rid} = computed.rid
            AND x.occurred_at = ANY(entered_at || done) AND x.deleted_at IS NULL))`
    : sql`NULL::text[]`;
  const { rows } = await db.query<{ n: number }>(sql`
    ${funnelCtes(collectionId, f)},
    computed AS (
      SELECT e.rid, e.t AS entered_at, array_remove(ARRAY[${join(completions, ', ')}]::timestamptz[], NULL) AS done
      FROM entry e ${join(joins, ' ')}
    ), written AS (
      INSERT INTO journey_progress AS p
        (collection_id, journey_id, id_field, rid, version, n_steps, entered_at, completed_at, touch)
      SELECT ${collectionId}, ${f.journeyId}, ${idField}, rid, ${f.version}, ${f.steps.length}, entered_at, done,
        ${touch}
      FROM computed ORDER BY rid
      ON CONFLICT (collection_id, journey_id, id_field, rid) DO UPDATE
        SET version = excluded.version, n_steps = excluded.n_steps, entered_at = excluded.entered_at,
            completed_at = excluded.completed_at, touch = excluded.touch
        WHERE p.version < excluded.version
      RETURNING p.entered_at, p.completed_at, p.n_steps
    ), counted AS (
      INSERT INTO journey_progress_counts AS t
        (collection_id, journey_id, version, id_field, step, slot, entered, completed, seconds)
      SELECT ${collectionId}, ${f.journeyId}, ${f.version}, ${idField}, x.step, pg_backend_pid() % 16,
        sum(x.entered), sum(x.completed), sum(x.seconds)
      FROM written w, journey_progress_contrib(w.entered_at, w.completed_at, w.n_steps) x
      GROUP BY x.step ORDER BY x.step
      ON CONFLICT (collection_id, journey_id, version, id_field, step, slot) DO UPDATE
        SET entered = t.entered + excluded.entered, completed = t.completed + excluded.completed,
            seconds = t.seconds + excluded.seconds
    )
    SELECT count(*)::int AS n FROM written`);
  return rows[0].n;
}

/** Takes up to `limit` recipients touched while the rebuild ran, to recompute them. */
export async function takeDirty(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  limit: number,
): Promise<RecipientKey[]> {
  const { rows } = await db.query<RecipientKey>(sql`
    DELETE FROM journey_progress_dirty d USING (
      SELECT id_field, rid FROM journey_progress_dirty
      WHERE collection_id = ${collectionId} AND journey_id = ${journeyId} LIMIT ${limit}) x
    WHERE d.collection_id = ${collectionId} AND d.journey_id = ${journeyId} AND d.id_field = x.id_field AND d.rid = x.rid
    RETURNING d.id_field AS "idField", d.rid`);
  return rows;
}

/** Recomputes these recipients' progress (the function the triggers use). */
export async function refreshProgress(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  keys: RecipientKey[],
): Promise<void> {
  const json = keys.map((k) => ({ c: collectionId, j: journeyId, f: k.idField, rid: k.rid }));
  await db.query(sql`SELECT journey_progress_refresh(${JSON.stringify(json)}::jsonb)`);
}

/** Removes rows and counters of versions older than `current` (all of them when null). */
export async function sweepProgress(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  current: number | null,
): Promise<void> {
  const older = current === null ? sql`` : sql`AND version < ${current}`;
  await db.query(
    sql`DELETE FROM journey_progress WHERE collection_id = ${collectionId} AND journey_id = ${journeyId} ${older}`,
  );
  await db.query(
    sql`DELETE FROM journey_progress_counts WHERE collection_id = ${collectionId} AND journey_id = ${journeyId} ${older}`,
  );
  // Every version (nothing is kept any more): recipients noted during a rebuild go too.
  if (current === null) {
    await db.query(
      sql`DELETE FROM journey_progress_dirty WHERE collection_id = ${collectionId} AND journey_id = ${journeyId}`,
    );
  }
}

/** Refreshes the planner's statistics of the progress rows (every collection's: one table). */
export async function analyzeProgress(db: Queryable): Promise<void> {
  await db.query('ANALYZE journey_progress');
}

export async function markProgressReady(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  version: number,
): Promise<boolean> {
  const { rowCount } = await db.query(sql`
    UPDATE journey_progress_state SET ready = true
    WHERE collection_id = ${collectionId} AND journey_id = ${journeyId} AND version = ${version}`);
  if (rowCount > 0) {
    await db.query(
      sql`DELETE FROM journey_progress_dirty WHERE collection_id = ${collectionId} AND journey_id = ${journeyId}`,
    );
  }
  return rowCount > 0;
}

/** Rows only while `version` is the journey's ready one (it may change between two statements). */
export const stillReady = (collectionId: string, journeyId: string, version: number) => sql`EXISTS (
  SELECT 1 FROM journey_progress_state
  WHERE collection_id = ${collectionId} AND journey_id = ${journeyId} AND version = ${version} AND ready)`;

/**
 * funnelCounts from the counters of one version (no period: progress has none); undefined
 * when that version is no longer the ready one.
 */
export async function keptFunnelCounts(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  version: number,
  idField: IdField,
  stepCount: number,
): Promise<{ totalEntered: number; steps: StepCounts[] } | undefined> {
  const { rows } = await db.query<StepCounts>(sql`
    SELECT s.k - 1 AS idx, coalesce(sum(c.entered), 0)::bigint AS entered,
      coalesce(sum(c.completed), 0)::bigint AS completed,
      (sum(c.seconds) / nullif(sum(c.completed), 0))::float8 AS avg_seconds
    FROM generate_series(1, ${stepCount}) AS s(k)
    LEFT JOIN journey_progress_counts c ON c.collection_id = ${collectionId} AND c.journey_id = ${journeyId}
      AND c.version = ${version} AND c.id_field = ${idField === 'contactId' ? 'contactId' : 'userId'} AND c.step = s.k
    WHERE ${stillReady(collectionId, journeyId, version)}
    GROUP BY s.k ORDER BY s.k`);
  if (rows.length === 0) return undefined;
  return { totalEntered: rows[0].entered, steps: rows };
}

/**
 * Recipients of step `index` (0-based) from progress rows: entered it = completed `index`
 * steps or more; completed it = more than `index`; pending = exactly `index`. One ordered
 * index range per number of steps completed, merged: the cost is the limit's, not the
 * journey's size.
 */
export async function keptRecipients(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  state: { version: number; stepCount: number },
  idField: IdField,
  index: number,
  status: 'entered' | 'completed' | 'pending',
  limit: number,
): Promise<string[] | undefined> {
  const lowest = status === 'completed' ? index + 1 : index;
  const highest = status === 'pending' ? index : state.stepCount;
  const ranges = [];
  for (let reached = lowest; reached <= highest; reached++) {
    ranges.push(sql`(SELECT rid FROM journey_progress
      WHERE collection_id = ${collectionId} AND journey_id = ${journeyId}
        AND id_field = ${idField === 'contactId' ? 'contactId' : 'userId'} AND version = ${state.version}
        AND cardinality(completed_at) = ${reached}
      ORDER BY rid LIMIT ${limit})`);
  }
  if (ranges.length === 0) return [];
  // The first row says whether the version is still the ready one.
  const { rows } = await db.query<{ rid: string | null }>(sql`
    SELECT NULL AS rid, 0 AS o WHERE ${stillReady(collectionId, journeyId, state.version)}
    UNION ALL (SELECT rid, 1 FROM (${join(ranges, ' UNION ALL ')}) r ORDER BY rid LIMIT ${limit})
    ORDER BY o, rid`);
  if (rows[0]?.rid !== null) return undefined;
  return rows.slice(1).map((r) => r.rid as string);
}

/**
 * Journeys of every collection that have no progress state yet (those stored before progress
 * was kept): a start-up pass across tenants, a page at a time.
 */
export async function journeysWithoutProgress(
  db: Queryable,
  limit: number,
): Promise<Pick<JourneyRow, 'collection_id' | 'id' | 'data'>[]> {
  const { rows } = await db.query<Pick<JourneyRow, 'collection_id' | 'id' | 'data'>>(sql`
    SELECT j.collection_id, j.id, j.data FROM journeys j
    WHERE NOT EXISTS (
      SELECT 1 FROM journey_progress_state s WHERE s.collection_id = j.collection_id AND s.journey_id = j.id)
    ORDER BY j.collection_id, j.id LIMIT ${limit}`);
  return rows;
}
