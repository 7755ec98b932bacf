/**
 * All SQL of the schedules module. A collection's schedules are read and written with its id
 * first; the scheduler's statements (`takeDue`, `msUntilNext`, the system schedules') take no
 * collection on purpose: a worker serves every tenant's due rows, and the system schedules
 * belong to none (their `collection_id` is NULL).
 */
import sql, { join } from 'sql-template-tag';
import { type Db, type Queryable, setList } from '../../db/index.ts';

export type CatchUp = 'latest' | 'none';

export interface ScheduleRow {
  id: string;
  collection_id: string | null;
  name: string;
  cron: string | null;
  every_ms: number | null;
  timezone: string;
  task: string | null;
  payload: unknown;
  priority: number;
  max_attempts: number | null;
  queue_name: string | null;
  catch_up: CatchUp;
  enabled: boolean;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_job_id: number | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = sql`id, collection_id, name, cron, every_ms, timezone, task, payload, priority, max_attempts,
  queue_name, catch_up, enabled, next_run_at, last_run_at, last_job_id, last_error, created_at, updated_at`;

/** The NOTIFY channel that wakes the schedulers when a schedule is made or changed. */
export const SCHEDULES_CHANNEL = 'schedules_changed';

/** Two-int advisory lock space of the per-collection cap and names (the second key: the collection). */
const SCHEDULES_LOCK = 727_050_002;

/**
 * Serialises the creations and renames of one collection's schedules until the transaction
 * ends, so that counting them (or looking a name up) and writing is atomic. A hash collision
 * only makes two collections wait for each other for a moment.
 */
export async function lockCollection(q: Queryable, collectionId: string): Promise<void> {
  await q.query(sql`SELECT pg_advisory_xact_lock(${SCHEDULES_LOCK}, hashtext(${collectionId}))`);
}

export async function countSchedules(q: Queryable, collectionId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    sql`SELECT count(*)::int AS n FROM schedules WHERE collection_id = ${collectionId}`,
  );
  return rows[0].n;
}

export async function idOfName(q: Queryable, collectionId: string, name: string): Promise<string | undefined> {
  const { rows } = await q.query<{ id: string }>(
    sql`SELECT id FROM schedules WHERE collection_id = ${collectionId} AND name = ${name}`,
  );
  return rows[0]?.id;
}

export interface NewSchedule {
  id: string;
  name: string;
  cron: string;
  timezone: string;
  task: string;
  payload: unknown;
  priority: number;
  maxAttempts: number | null;
  queueName: string | null;
  catchUp: CatchUp;
  enabled: boolean;
  nextRunAt: Date | null;
}

export async function insertSchedule(q: Queryable, collectionId: string, s: NewSchedule): Promise<ScheduleRow> {
  const { rows } = await q.query<ScheduleRow>(sql`
    INSERT INTO schedules (id, collection_id, name, cron, timezone, task, payload, priority, max_attempts,
      queue_name, catch_up, enabled, next_run_at)
    VALUES (${s.id}, ${collectionId}, ${s.name}, ${s.cron}, ${s.timezone}, ${s.task}, ${JSON.stringify(s.payload)}::jsonb,
      ${s.priority}, ${s.maxAttempts}, ${s.queueName}, ${s.catchUp}, ${s.enabled}, ${s.nextRunAt})
    RETURNING ${COLUMNS}`);
  return rows[0];
}

export async function listSchedules(q: Queryable, collectionId: string): Promise<ScheduleRow[]> {
  const { rows } = await q.query<ScheduleRow>(
    sql`SELECT ${COLUMNS} FROM schedules WHERE collection_id = ${collectionId} ORDER BY name`,
  );
  return rows;
}

export async function getSchedule(
  q: Queryable,
  collectionId: string,
  id: string,
  forUpdate = false,
): Promise<ScheduleRow | undefined> {
  const { rows } = await q.query<ScheduleRow>(
    sql`SELECT ${COLUMNS} FROM schedules WHERE collection_id = ${collectionId} AND id = ${id}${forUpdate ? sql` FOR UPDATE` : sql``}`,
  );
  return rows[0];
}

/** Every field of a schedule as the service worked it out (a patch applied to the stored row). */
export type ScheduleFields = Omit<NewSchedule, 'id'>;

export async function updateSchedule(
  q: Queryable,
  collectionId: string,
  id: string,
  s: ScheduleFields,
): Promise<ScheduleRow | undefined> {
  const sets = setList(
    sql`updated_at = now()`,
    sql`name = ${s.name}`,
    sql`cron = ${s.cron}`,
    sql`timezone = ${s.timezone}`,
    sql`task = ${s.task}`,
    sql`payload = ${JSON.stringify(s.payload)}::jsonb`,
    sql`priority = ${s.priority}`,
    sql`max_attempts = ${s.maxAttempts}`,
    sql`queue_name = ${s.queueName}`,
    sql`catch_up = ${s.catchUp}`,
    sql`enabled = ${s.enabled}`,
    sql`next_run_at = ${s.nextRunAt}`,
  );
  const { rows } = await q.query<ScheduleRow>(
    sql`UPDATE schedules SET ${sets} WHERE collection_id = ${collectionId} AND id = ${id} RETURNING ${COLUMNS}`,
  );
  return rows[0];
}

export async function deleteSchedule(q: Queryable, collectionId: string, id: string): Promise<boolean> {
  const { rowCount } = await q.query(sql`DELETE FROM schedules WHERE collection_id = ${collectionId} AND id = ${id}`);
  return rowCount > 0;
}

/** A job enqueued for the schedule outside its ticks (a run now): the schedule's next tick stays. */
export async function recordRun(
  q: Queryable,
  collectionId: string,
  id: string,
  at: Date,
  jobId: number,
): Promise<void> {
  await q.query(sql`
    UPDATE schedules SET last_run_at = ${at}, last_job_id = ${jobId}, last_error = NULL
    WHERE collection_id = ${collectionId} AND id = ${id}`);
}

/** Which rows a worker takes: every collection's, and the system schedules it knows. */
const takes = (system: string[]) =>
  system.length ? sql`(collection_id IS NOT NULL OR name IN (${join(system)}))` : sql`collection_id IS NOT NULL`;

/**
 * Up to `limit` due schedules of every collection and the system's of `system`, locked until
 * the transaction ends; rows another worker holds are skipped (it is advancing them), and a
 * row it has advanced no longer matches. With the database's clock, which every worker shares.
 */
export async function takeDue(
  q: Queryable,
  system: string[],
  limit: number,
): Promise<{ rows: ScheduleRow[]; now: Date }> {
  const { rows } = await q.query<ScheduleRow & { db_now: Date }>(sql`
    SELECT ${COLUMNS}, now() AS db_now FROM schedules
    WHERE enabled AND next_run_at <= now() AND ${takes(system)}
    ORDER BY next_run_at
    LIMIT ${limit}
    FOR UPDATE SKIP LOCKED`);
  if (rows.length) return { rows, now: rows[0].db_now };
  const now = await q.query<{ now: Date }>(sql`SELECT now() AS now`);
  return { rows, now: now.rows[0].now };
}

export interface Advance {
  nextRunAt: Date | null;
  /** Set when a job was enqueued (or a housekeeping run begun) for a tick. */
  ran?: { at: Date; jobId: number | null };
  /** Why the tick enqueued nothing; null clears the last one; absent leaves it. */
  error?: string | null;
}

/** A due schedule's tick handled (in the transaction that took it): its next tick and what happened. */
export async function advance(q: Queryable, id: string, a: Advance): Promise<void> {
  const sets = setList(
    sql`next_run_at = ${a.nextRunAt}`,
    a.ran && sql`last_run_at = ${a.ran.at}`,
    a.ran && sql`last_job_id = ${a.ran.jobId}`,
    a.error !== undefined && sql`last_error = ${a.error}`,
  );
  await q.query(sql`UPDATE schedules SET ${sets} WHERE id = ${id}`);
}

/** The outcome of a system schedule's run, written once it has ended (outside the tick's transaction). */
export async function recordSystemOutcome(q: Queryable, id: string, error: string | null): Promise<void> {
  await q.query(sql`UPDATE schedules SET last_error = ${error} WHERE id = ${id} AND collection_id IS NULL`);
}

/** Milliseconds until the earliest enabled tick by the database's clock (≤ 0: due now); null when none. */
export async function msUntilNext(q: Queryable, system: string[]): Promise<number | null> {
  const { rows } = await q.query<{ ms: number | null }>(sql`
    SELECT (extract(epoch FROM min(next_run_at) - now()) * 1000)::float8 AS ms
    FROM schedules WHERE enabled AND ${takes(system)}`);
  return rows[0]?.ms ?? null;
}

export interface SystemSchedule {
  id: string;
  name: string;
  cron: string | null;
  everyMs: number | null;
}

/**
 * The system schedules as this version declares them: a new one is due at once (a fresh
 * deployment does its housekeeping at start, as the timers it replaces did); one whose cadence
 * changed starts again from now; an unchanged one keeps its next tick. The ones no longer
 * declared are deleted. One transaction, so that two workers starting together agree.
 */
export async function syncSystemSchedules(db: Db, list: SystemSchedule[]): Promise<void> {
  await db.transaction(async (tx) => {
    for (const s of list) {
      await tx.query(sql`
        INSERT INTO schedules AS s (id, collection_id, name, cron, every_ms, next_run_at)
        VALUES (${s.id}, NULL, ${s.name}, ${s.cron}, ${s.everyMs}, now())
        ON CONFLICT (name) WHERE collection_id IS NULL DO UPDATE SET
          cron = excluded.cron,
          every_ms = excluded.every_ms,
          enabled = true,
          next_run_at = CASE
            WHEN s.cron IS NOT DISTINCT FROM excluded.cron AND s.every_ms IS NOT DISTINCT FROM excluded.every_ms
              AND s.next_run_at IS NOT NULL THEN s.next_run_at
            ELSE now() END,
          updated_at = CASE
            WHEN s.cron IS NOT DISTINCT FROM excluded.cron AND s.every_ms IS NOT DISTINCT FROM excluded.every_ms
            THEN s.updated_at ELSE now() END`);
    }
    const names = list.map((s) => s.name);
    await tx.query(
      names.length
        ? sql`DELETE FROM schedules WHERE collection_id IS NULL AND name NOT IN (${join(names)})`
        : sql`DELETE FROM schedules WHERE collection_id IS NULL`,
    );
  });
}

/** The system schedules, by name (tests and the docs' list). */
export async function listSystemSchedules(q: Queryable): Promise<ScheduleRow[]> {
  const { rows } = await q.query<ScheduleRow>(
    sql`SELECT ${COLUMNS} FROM schedules WHERE collection_id IS NULL ORDER BY name`,
  );
  return rows;
}

/** A savepoint in the tick's transaction: one schedule's failed enqueue undoes only its own writes. */
export const savepoint = (q: Queryable) => q.query(sql`SAVEPOINT schedule_tick`);
export const releaseSavepoint = (q: Queryable) => q.query(sql`RELEASE SAVEPOINT schedule_tick`);
export const rollbackToSavepoint = (q: Queryable) => q.query(sql`ROLLBACK TO SAVEPOINT schedule_tick`);
