/** All SQL of the journeys module: journey CRUD and the funnel over interaction_events. */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import { allOf, type Db, pageOf, type Queryable, setList } from '../../db/index.ts';
import type { IdField } from '../interactions/index.ts';
import type { MilestoneRow } from './journeys.events.ts';

export interface JourneyRow {
  collection_id: string;
  id: string;
  app_id: string | null;
  name: string;
  active: boolean;
  journey_type: 'event_triggered' | 'scheduled';
  data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = raw('collection_id, id, app_id, name, active, journey_type, data, created_at, updated_at');

export async function insertJourney(
  db: Queryable,
  collectionId: string,
  j: {
    id: string;
    appId: string | null;
    name: string;
    active: boolean;
    journeyType: string;
    data: Record<string, unknown>;
  },
): Promise<JourneyRow> {
  const { rows } = await db.query<JourneyRow>(sql`
    INSERT INTO journeys (collection_id, id, app_id, name, active, journey_type, data)
    VALUES (${collectionId}, ${j.id}, ${j.appId}, ${j.name}, ${j.active}, ${j.journeyType}, ${JSON.stringify(j.data)}::jsonb)
    RETURNING ${COLUMNS}`);
  return rows[0];
}

export async function findJourney(db: Queryable, collectionId: string, id: string): Promise<JourneyRow | undefined> {
  const { rows } = await db.query<JourneyRow>(
    sql`SELECT ${COLUMNS} FROM journeys WHERE collection_id = ${collectionId} AND id = ${id}`,
  );
  return rows[0];
}

export async function listJourneys(
  db: Queryable,
  collectionId: string,
  q: { appId?: string; active?: boolean; journeyType?: string; limit: number; offset: number },
): Promise<JourneyRow[]> {
  const where = allOf(
    sql`collection_id = ${collectionId}`,
    q.appId !== undefined && sql`app_id = ${q.appId}`,
    q.active !== undefined && sql`active = ${q.active}`,
    q.journeyType !== undefined && sql`journey_type = ${q.journeyType}`,
  );
  return pageOf<JourneyRow>(db, {
    ...q,
    columns: COLUMNS,
    from: sql`FROM journeys WHERE ${where}`,
    orderBy: sql`created_at, id`,
  });
}

export async function updateJourney(
  db: Queryable,
  collectionId: string,
  id: string,
  p: { appId?: string | null; name?: string; active?: boolean; journeyType?: string; data?: Record<string, unknown> },
): Promise<JourneyRow | undefined> {
  const sets = setList(
    sql`updated_at = now()`,
    p.appId !== undefined && sql`app_id = ${p.appId}`,
    p.name !== undefined && sql`name = ${p.name}`,
    p.active !== undefined && sql`active = ${p.active}`,
    p.journeyType !== undefined && sql`journey_type = ${p.journeyType}`,
    p.data !== undefined && sql`data = ${JSON.stringify(p.data)}::jsonb`,
  );
  const { rows } = await db.query<JourneyRow>(sql`
    UPDATE journeys SET ${sets} WHERE collection_id = ${collectionId} AND id = ${id}
    RETURNING ${COLUMNS}`);
  return rows[0];
}

export async function deleteJourney(db: Queryable, collectionId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(sql`DELETE FROM journeys WHERE collection_id = ${collectionId} AND id = ${id}`);
  return rowCount > 0;
}

// ---------------------------------------------------------------------------------------------
// Funnel

export interface ResolvedStep {
  stepId: string;
  interactionId: string;
  outcome: string;
}

export interface EntryInput {
  journeyId: string;
  idField: IdField;
  /** Only the recipients whose id hashes to `index` of `count` parts (the rebuild's chunks). */
  part?: { count: number; index: number };
  /** Inclusive. */
  start?: string;
  /** Exclusive. */
  end?: string;
}

export interface FunnelInput extends EntryInput {
  steps: ResolvedStep[];
}

/** A comparison, not a lookup in an object: idField comes from the request. */
const idColumn = (idField: IdField) => (idField === 'contactId' ? 'contact_id' : 'user_id');

/**
 * The funnel as a chain of CTEs, one per step (`s0`, `s1`, ...), each row a recipient that
 * entered the step, with `entered` and `completed` (null when not completed):
 * - entry: a recipient's first event carrying the journey id, in the period;
 * - step 0 is entered on entry; step k on completing step k-1;
 * - a step is completed by the recipient's first mapped event at or after entering it, in the period.
 * Each step is a join of the previous step's recipients with the step's mapped events (the
 * planner picks a hash join over the interaction index or index lookups per recipient).
 */
/** `entry`: each recipient's first event carrying the journey id, in the period. */
function entryCte(collectionId: string, f: EntryInput): Sql {
  const rid = raw(idColumn(f.idField));
  const startCond = f.start ? sql`AND occurred_at >= ${f.start}::timestamptz` : sql``;
  const endCond = f.end ? sql`AND occurred_at < ${f.end}::timestamptz` : sql``;
  const partCond = f.part ? sql`AND abs(hashtext(${rid}) % ${f.part.count}) = ${f.part.index}` : sql``;
  return sql`entry AS (
      SELECT ${rid} AS rid, min(occurred_at) AS t FROM interaction_events
      WHERE collection_id = ${collectionId} AND journey_id = ${f.journeyId} AND deleted_at IS NULL
        AND ${rid} IS NOT NULL ${startCond} ${endCond} ${partCond}
      GROUP BY ${rid})`;
}

function funnelCtes(collectionId: string, f: FunnelInput): Sql {
  const xrid = raw(`x.${idColumn(f.idField)}`);
  const xEnd = f.end ? sql`AND x.occurred_at < ${f.end}::timestamptz` : sql``;
  const ctes = [entryCte(collectionId, f)];
  f.steps.forEach((step, k) => {
    const prev =
      k === 0
        ? sql`SELECT rid, t AS entered FROM entry`
        : sql`SELECT rid, completed AS entered FROM ${raw(`s${k - 1}`)} WHERE completed IS NOT NULL`;
    ctes.push(sql`${raw(`s${k}`)} AS (
      SELECT p.rid, p.entered, min(x.occurred_at) AS completed
      FROM (${prev}) p
      LEFT JOIN interaction_events x
        ON x.collection_id = ${collectionId} AND ${xrid} = p.rid AND x.interaction_id = ${step.interactionId}
        AND x.outcome = ${step.outcome} AND x.deleted_at IS NULL AND x.occurred_at >= p.entered ${xEnd}
      GROUP BY p.rid, p.entered)`);
  });
  return sql`WITH ${join(ctes, ',\n')}`;
}

export interface StepCounts {
  idx: number;
  entered: number;
  completed: number;
  avg_seconds: number | null;
}

/** One `StepCounts` row per step CTE `s0`, `s1`, … (rid or click, entered, completed) of a funnel's statement. */
export const stepCountsOf = (stepCount: number): Sql[] =>
  Array.from(
    { length: stepCount },
    (_, k) => sql`SELECT ${k}::int AS idx, count(*)::int AS entered, count(completed)::int AS completed,
      avg(extract(epoch FROM completed - entered))::float8 AS avg_seconds FROM ${raw(`s${k}`)}`,
  );

export async function funnelCounts(
  db: Queryable,
  collectionId: string,
  f: FunnelInput,
): Promise<{ totalEntered: number; steps: StepCounts[] }> {
  const parts = stepCountsOf(f.steps.length);
  parts.unshift(
    sql`SELECT -1 AS idx, count(*)::int AS entered, 0 AS completed, NULL::float8 AS avg_seconds FROM entry`,
  );
  const { rows } = await db.query<StepCounts>(
    sql`${funnelCtes(collectionId, f)} ${join(parts, ' UNION ALL ')} ORDER BY idx`,
  );
  const total = rows.find((r) => r.idx === -1)?.entered ?? 0;
  return { totalEntered: total, steps: rows.filter((r) => r.idx >= 0) };
}

export async function stepRecipients(
  db: Queryable,
  collectionId: string,
  f: FunnelInput,
  status: 'entered' | 'completed' | 'pending',
  limit: number,
): Promise<string[]> {
  const last = raw(`s${f.steps.length - 1}`);
  const cond =
    status === 'completed'
      ? sql`WHERE completed IS NOT NULL`
      : status === 'pending'
        ? sql`WHERE completed IS NULL`
        : sql``;
  const { rows } = await db.query<{ rid: string }>(
    sql`${funnelCtes(collectionId, f)} SELECT rid FROM ${last} ${cond} ORDER BY rid LIMIT ${limit}`,
  );
  return rows.map((r) => r.rid);
}

/**
 * Recipients of one step taken on its own, without the steps before it: those who entered the
 * journey in the period, and of them those who have (`completed`) or have not (`pending`) an
 * event of `match` in the period, before or after their entry. `entered` needs no match.
 */
export async function standaloneStepRecipients(
  db: Queryable,
  collectionId: string,
  f: EntryInput & { match?: { interactionId: string; outcome: string } },
  status: 'entered' | 'completed' | 'pending',
  limit: number,
): Promise<string[]> {
  let cond = sql``;
  if (status !== 'entered') {
    if (!f.match) throw new Error(`standaloneStepRecipients: status ${status} needs a match`);
    const xrid = raw(`x.${idColumn(f.idField)}`);
    const xStart = f.start ? sql`AND x.occurred_at >= ${f.start}::timestamptz` : sql``;
    const xEnd = f.end ? sql`AND x.occurred_at < ${f.end}::timestamptz` : sql``;
    const matched = sql`EXISTS (
      SELECT 1 FROM interaction_events x
      WHERE x.collection_id = ${collectionId} AND ${xrid} = e.rid AND x.interaction_id = ${f.match.interactionId}
        AND x.outcome = ${f.match.outcome} AND x.deleted_at IS NULL ${xStart} ${xEnd})`;
    cond = status === 'completed' ? sql`WHERE ${matched}` : sql`WHERE NOT ${matched}`;
  }
  const { rows } = await db.query<{ rid: string }>(
    sql`WITH ${entryCte(collectionId, f)} SELECT e.rid FROM entry e ${cond} ORDER BY e.rid LIMIT ${limit}`,
  );
  return rows.map((r) => r.rid);
}

// ---------------------------------------------------------------------------------------------
// Maintained progress (migration 0204): journey_progress_state, journey_progress, their counters

/** A step as progress follows it: the interaction and outcome that complete it. */
export interface KeptStep {
  interactionId: string;
  outcome: string;
}

export interface ProgressState {
  version: number;
  /** null: a step has no mapping, nothing is kept. */
  steps: KeptStep[] | null;
  ready: boolean;
}

export async function findProgressState(
  db: Queryable,
  collectionId: string,
  journeyId: string,
): Promise<ProgressState | undefined> {
  const { rows } = await db.query<ProgressState>(sql`
    SELECT version, steps, ready FROM journey_progress_state
    WHERE collection_id = ${collectionId} AND journey_id = ${journeyId}`);
  return rows[0];
}

/**
 * Records the steps progress follows (null: none can be kept): a new version, not ready, when
 * they differ from those recorded. True when rows must be rebuilt or removed.
 */
export async function followSteps(
  db: Queryable,
  collectionId: string,
  journeyId: string,
  steps: KeptStep[] | null,
): Promise<boolean> {
  const { rows } = await db.query<{ fresh: boolean }>(sql`
    INSERT INTO journey_progress_state AS s (collection_id, journey_id, version, steps)
    VALUES (${collectionId}, ${journeyId}, 1, ${steps === null ? null : JSON.stringify(steps)}::jsonb)
    ON CONFLICT (collection_id, journey_id) DO UPDATE
      SET version = s.version + 1, steps = excluded.steps, ready = false
      WHERE s.steps IS DISTINCT FROM excluded.steps
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
  f: FunnelInput & { version: number },
): Promise<number> {
  const completions = f.steps.map((_, k) => raw(`s${k}.completed`));
  const joins = f.steps.map((_, k) => raw(`LEFT JOIN s${k} ON s${k}.rid = e.rid`));
  const idField = f.idField === 'contactId' ? 'contactId' : 'userId';
  const { rows } = await db.query<{ n: number }>(sql`
    ${funnelCtes(collectionId, f)},
    computed AS (
      SELECT e.rid, e.t AS entered_at, array_remove(ARRAY[${join(completions, ', ')}]::timestamptz[], NULL) AS done
      FROM entry e ${join(joins, ' ')}
    ), written AS (
      INSERT INTO journey_progress AS p (collection_id, journey_id, id_field, rid, version, n_steps, entered_at, completed_at)
      SELECT ${collectionId}, ${f.journeyId}, ${idField}, rid, ${f.version}, ${f.steps.length}, entered_at, done
      FROM computed ORDER BY rid
      ON CONFLICT (collection_id, journey_id, id_field, rid) DO UPDATE
        SET version = excluded.version, n_steps = excluded.n_steps, entered_at = excluded.entered_at,
            completed_at = excluded.completed_at
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
const stillReady = (collectionId: string, journeyId: string, version: number) => sql`EXISTS (
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

// ---------------------------------------------------------------------------------------------
// Milestones (migration 0207): noted by the progress triggers, published by journeys.milestones.ts

/**
 * Collections with milestones still to publish, of every collection: the publisher's safety
 * net after a missed NOTIFY (the worker was down when they were noted) looks across tenants,
 * as `journeysWithoutProgress` does.
 */
export async function collectionsWithPendingMilestones(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ collection_id: string }>(sql`
    WITH RECURSIVE c AS (
      (SELECT collection_id FROM journey_milestones WHERE published_at IS NULL ORDER BY collection_id LIMIT 1)
      UNION ALL
      SELECT (SELECT m.collection_id FROM journey_milestones m
              WHERE m.published_at IS NULL AND m.collection_id > c.collection_id ORDER BY m.collection_id LIMIT 1)
      FROM c WHERE c.collection_id IS NOT NULL
    )
    SELECT collection_id FROM c WHERE collection_id IS NOT NULL LIMIT ${limit}`);
  return rows.map((r) => r.collection_id);
}

/**
 * Takes up to `limit` of a collection's unpublished milestones, in the order noted, locked for
 * the caller's transaction (another publisher skips them), with the journey's name and app.
 */
export async function takeMilestones(tx: Queryable, collectionId: string, limit: number): Promise<MilestoneRow[]> {
  const { rows } = await tx.query<MilestoneRow>(sql`
    SELECT m.seq, m.journey_id, m.id_field, m.rid, m.step_id, m.step, m.step_name, m.n_steps, m.entered_at,
      m.completed_at, m.event_id, j.name AS journey_name, j.app_id
    FROM journey_milestones m
    LEFT JOIN journeys j ON j.collection_id = m.collection_id AND j.id = m.journey_id
    WHERE m.collection_id = ${collectionId} AND m.published_at IS NULL
    ORDER BY m.seq LIMIT ${limit}
    FOR UPDATE OF m SKIP LOCKED`);
  return rows;
}

export async function markMilestonesPublished(tx: Queryable, collectionId: string, seqs: number[]): Promise<void> {
  await tx.query(sql`
    UPDATE journey_milestones SET published_at = now()
    WHERE collection_id = ${collectionId} AND published_at IS NULL AND seq = ANY(${seqs}::bigint[])`);
}

/** A deleted journey's milestones (the progress task removes them with its rows). */
export async function dropMilestones(db: Queryable, collectionId: string, journeyId: string): Promise<number> {
  const { rowCount } = await db.query(
    sql`DELETE FROM journey_milestones WHERE collection_id = ${collectionId} AND journey_id = ${journeyId}`,
  );
  return rowCount;
}
