/**
 * The schedules API's rules: a schedule is saved only if its job could be enqueued now (the
 * task and payload checked by the jobs module's `prepare`, the cron and zone by cron.ts), names
 * are unique per collection, a collection has at most SCHEDULE_LIMITS.perCollection of them,
 * and every write recomputes the next tick from now. A write wakes the schedulers (NOTIFY), so
 * a tick earlier than the one they sleep towards is not late.
 */
import type { Db, Queryable } from '../../db/index.ts';
import { badRequest, conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { JobsService } from '../jobs/index.ts';
import { checkCron, nextTick } from './cron.ts';
import * as repo from './schedules.repository.ts';
import {
  type CreateScheduleRequest,
  SCHEDULE_LIMITS,
  type Schedule,
  type ScheduleRun,
  type UpdateScheduleRequest,
} from './schedules.schema.ts';

interface Log {
  warn(obj: object, msg?: string): void;
}

export function toSchedule(r: repo.ScheduleRow): Schedule {
  const { nextRunAt, ...fields } = fieldsOf(r);
  return {
    id: r.id,
    ...fields,
    nextRunAt: nextRunAt?.toISOString() ?? null,
    lastRunAt: r.last_run_at?.toISOString() ?? null,
    lastJobId: r.last_job_id,
    lastError: r.last_error,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/** The job request a schedule makes: what `jobs.prepare` and `jobs.submit` take. */
export const jobRequest = (s: repo.ScheduleFields, key?: string) => ({
  task: s.task,
  payload: s.payload as Record<string, unknown>,
  priority: s.priority,
  ...(s.maxAttempts !== null && { maxAttempts: s.maxAttempts }),
  ...(s.queueName !== null && { queueName: s.queueName }),
  ...(key !== undefined && { key }),
});

export class SchedulesService {
  constructor(
    private readonly db: Db,
    private readonly jobs: JobsService,
    private readonly log: Log,
  ) {}

  async create(collectionId: string, body: CreateScheduleRequest): Promise<Schedule> {
    const fields: repo.ScheduleFields = {
      name: body.name,
      cron: body.cron,
      timezone: body.timezone ?? 'UTC',
      task: body.task,
      payload: body.payload ?? {},
      priority: body.priority ?? 0,
      maxAttempts: body.maxAttempts ?? null,
      queueName: body.queueName ?? null,
      catchUp: body.catchUp ?? 'latest',
      enabled: body.enabled ?? true,
      nextRunAt: null,
    };
    const row = await this.db.transaction(async (tx) => {
      const checked = await this.check(tx, collectionId, fields);
      await repo.lockCollection(tx, collectionId);
      await this.nameIsFree(tx, collectionId, fields.name);
      const count = await repo.countSchedules(tx, collectionId);
      if (count >= SCHEDULE_LIMITS.perCollection) {
        throw badRequest(
          `A collection has at most ${SCHEDULE_LIMITS.perCollection} schedules; delete one first (or give one schedule's task the work of several)`,
          { limit: SCHEDULE_LIMITS.perCollection },
        );
      }
      return repo.insertSchedule(tx, collectionId, { id: newId('sch'), ...checked });
    });
    await this.announce();
    return toSchedule(row);
  }

  async list(collectionId: string): Promise<{ items: Schedule[] }> {
    return { items: (await repo.listSchedules(this.db, collectionId)).map(toSchedule) };
  }

  async get(collectionId: string, id: string): Promise<Schedule> {
    const row = await repo.getSchedule(this.db, collectionId, id);
    if (!row) throw notFound('Schedule');
    return toSchedule(row);
  }

  /** Any field; the result is checked as a new schedule is, and its next tick counted from now. */
  async update(collectionId: string, id: string, body: UpdateScheduleRequest): Promise<Schedule> {
    const row = await this.db.transaction(async (tx) => {
      const stored = await repo.getSchedule(tx, collectionId, id, true);
      if (!stored) throw notFound('Schedule');
      // The body's absent fields are absent (not undefined); null clears maxAttempts and queueName.
      const fields: repo.ScheduleFields = { ...fieldsOf(stored), ...body, nextRunAt: null };
      const checked = await this.check(tx, collectionId, fields);
      if (fields.name !== stored.name) {
        await repo.lockCollection(tx, collectionId);
        await this.nameIsFree(tx, collectionId, fields.name);
      }
      return repo.updateSchedule(tx, collectionId, id, checked);
    });
    if (!row) throw notFound('Schedule');
    await this.announce();
    return toSchedule(row);
  }

  async remove(collectionId: string, id: string): Promise<void> {
    if (!(await repo.deleteSchedule(this.db, collectionId, id))) throw notFound('Schedule');
  }

  /**
   * One job now, as a tick would enqueue it, leaving the next tick where it is. Its key names
   * the schedule and the time (`schedule:<id>:run:<ISO>`), as a tick's names its tick.
   */
  async runNow(collectionId: string, id: string): Promise<ScheduleRun> {
    return this.db.transaction(async (tx) => {
      const stored = await repo.getSchedule(tx, collectionId, id, true);
      if (!stored) throw notFound('Schedule');
      const at = new Date();
      const key = `schedule:${stored.id}:run:${at.toISOString()}`;
      const job = await this.jobs.submit(collectionId, jobRequest(fieldsOf(stored), key), tx);
      await repo.recordRun(tx, collectionId, id, at, job.id);
      return { id: job.id, task: job.task, runAt: job.runAt, key };
    });
  }

  /**
   * The fields as they will be stored: cron and zone checked, the job request checked by the
   * jobs module as the API checks an enqueue (a 400 naming the problem), the next tick.
   */
  private async check(q: Queryable, collectionId: string, f: repo.ScheduleFields): Promise<repo.ScheduleFields> {
    const cron = checkCron(f.cron, f.timezone);
    await this.jobs.prepare(q, collectionId, jobRequest(f), '');
    return { ...f, cron: cron.expression, nextRunAt: f.enabled ? nextTick(cron, new Date()) : null };
  }

  private async nameIsFree(q: Queryable, collectionId: string, name: string): Promise<void> {
    const existing = await repo.idOfName(q, collectionId, name);
    if (existing) throw conflict(`A schedule named "${name}" already exists (${existing})`, { existingId: existing });
  }

  /** Wakes the schedulers to read the earliest tick again; a lost notice only costs their cap. */
  private async announce(): Promise<void> {
    await this.db
      .notify(repo.SCHEDULES_CHANNEL, '')
      .catch((err: unknown) => this.log.warn({ err }, 'schedules: could not wake the schedulers'));
  }
}

/** A stored tenant schedule's fields (the columns a system schedule leaves empty are set on these). */
export const fieldsOf = (r: repo.ScheduleRow): repo.ScheduleFields => ({
  name: r.name,
  cron: r.cron ?? '',
  timezone: r.timezone,
  task: r.task ?? '',
  payload: r.payload ?? {},
  priority: r.priority,
  maxAttempts: r.max_attempts,
  queueName: r.queue_name,
  catchUp: r.catch_up,
  enabled: r.enabled,
  nextRunAt: r.next_run_at,
});
