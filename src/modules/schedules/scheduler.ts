/**
 * The scheduler: in every worker process (ROLE=worker and all), it takes the due schedules and
 * handles each tick exactly once across all of them.
 *
 * Design
 * - The tick transaction (`runDue`): the due rows (`next_run_at <= now()`, enabled) are taken
 *   FOR UPDATE SKIP LOCKED, up to BATCH at a time; for each, in the same transaction, a
 *   collection's schedule enqueues its job through `jobs.submit` (key
 *   `schedule:<id>:<tick ISO>`) and records it, and every row's `next_run_at` moves to its first
 *   tick after now. Another worker skips the locked rows, and once they commit they no longer
 *   match: one job per tick however many workers run. Each row has a savepoint: a refused
 *   enqueue undoes only its own writes.
 * - Catch-up (`catch_up`): a row due for several ticks (the workers were down) handles only the
 *   latest of them: `latest` enqueues one job for it, `none` enqueues nothing unless that tick
 *   is less than MISSED_AFTER_MS old. Either way the row then waits for the next tick after now.
 * - A tick that cannot enqueue (the task is gone, the payload no longer passes): `last_error`
 *   says why, the row advances all the same, and a warning is logged; it is never retried.
 * - System schedules (no collection): housekeeping the modules declare (platform/module.ts,
 *   `Housekeeping`). A worker takes only those it declares itself (another version's, during a
 *   rolling deploy, are left to that version's workers). The tick's transaction only advances
 *   the row; the function runs after the
 *   commit, in this process, and its outcome is written to `last_error` when it ends. At most
 *   once per tick: a process that stops mid-run leaves the rest to the next tick. A function
 *   still running here from its previous tick is not started twice in this process.
 * - Sleep: until the earliest `next_run_at` (the database's clock), at most MAX_SLEEP_MS; a
 *   NOTIFY on `schedules_changed` (a schedule made or changed), a LISTEN reconnect, or stop()
 *   ends it early. A tick starts within about a second of its time.
 * - Faults: a round that fails on the database is logged and tried again after a backoff
 *   (1 s doubling to MAX_SLEEP_MS); nothing is lost, since the rows stay due. A deadlock or
 *   serialization failure is retried at once (`retryOnConflict`).
 * - States: new → started → stopping → stopped. stop() ends the sleep, waits for the round in
 *   flight and for the housekeeping runs it started.
 */
import type { FastifyBaseLogger } from 'fastify';
import { type Db, isTransient, retryOnConflict, type Tx } from '../../db/index.ts';
import { AppError } from '../../platform/errors.ts';
import type { Housekeeping } from '../../platform/module.ts';
import { Subscription } from '../../platform/subscription.ts';
import type { JobsService } from '../jobs/index.ts';
import { type Cron, checkCron, latestTick, nextTick } from './cron.ts';
import * as repo from './schedules.repository.ts';
import { fieldsOf, jobRequest } from './schedules.service.ts';

type Log = Pick<FastifyBaseLogger, 'info' | 'warn' | 'error' | 'debug'>;

/** Due rows taken per transaction; the round takes batches until none is due. */
const BATCH = 50;
/** The longest sleep: a lost NOTIFY or a clock step costs at most this. */
const MAX_SLEEP_MS = 30_000;
/** After a round that found only rows another worker holds: look again this soon. */
const BUSY_SLEEP_MS = 250;
/** With `catch_up: none`, a tick older than this when it is handled counts as missed. */
export const MISSED_AFTER_MS = 60_000;

/** The id of the system schedule of a housekeeping function. */
export const systemId = (name: string) => `system:${name}`;

export interface SchedulerOptions {
  /** The longest sleep (tests shorten it). */
  maxSleepMs?: number;
}

export class Scheduler {
  private life: 'new' | 'started' | 'stopping' | 'stopped' = 'new';
  private readonly chores = new Map<string, Housekeeping>();
  /** Housekeeping running in this process, by name. */
  private readonly running = new Map<string, Promise<void>>();
  private subscription: Subscription | undefined;
  private wake: (() => void) | undefined;
  /** A notice that came while no sleep was under way: the next sleep ends at once. */
  private woken = false;
  /** Whether this process has written its system schedules (done once, by the first round). */
  private synced = false;
  private loop: Promise<void> | undefined;
  private readonly maxSleepMs: number;

  constructor(
    private readonly db: Db,
    private readonly jobs: JobsService,
    private readonly log: Log,
    options: SchedulerOptions = {},
  ) {
    this.maxSleepMs = options.maxSleepMs ?? MAX_SLEEP_MS;
  }

  /** The housekeeping of every module (buildModules hands it over once all are built). */
  register(list: readonly Housekeeping[]): void {
    for (const h of list) {
      if ((h.cron === undefined) === (h.everyMs === undefined))
        throw new Error(`Housekeeping "${h.name}" needs exactly one of cron and everyMs`);
      if (h.cron !== undefined) checkCron(h.cron, 'UTC');
      if (h.everyMs !== undefined && !(Number.isInteger(h.everyMs) && h.everyMs > 0))
        throw new Error(`Housekeeping "${h.name}": everyMs must be a positive integer`);
      this.chores.set(h.name, h);
    }
  }

  async start(): Promise<void> {
    if (this.life !== 'new') return;
    this.life = 'started';
    this.subscription = new Subscription(
      this.db,
      repo.SCHEDULES_CHANNEL,
      () => this.wakeUp(),
      () => this.wakeUp(),
    );
    // Neither this nor the first round's upsert of the system schedules may fail the start: a
    // database away now is one the loop waits for (the sleep's cap stands in for a notice).
    await this.subscription
      .start()
      .catch((err: unknown) => this.log.warn({ err }, 'schedules: could not LISTEN; ticks are looked for every 30 s'));
    this.loop = this.run();
    this.log.info({ system: [...this.chores.keys()] }, 'schedules: scheduler started');
  }

  /** The system schedules as this process declares them (the first round's first step). */
  private async syncSystem(): Promise<void> {
    await repo.syncSystemSchedules(
      this.db,
      [...this.chores.values()].map((h) => ({
        id: systemId(h.name),
        name: h.name,
        cron: h.cron ?? null,
        everyMs: h.everyMs ?? null,
      })),
    );
    this.synced = true;
  }

  async stop(): Promise<void> {
    if (this.life !== 'started') return;
    this.life = 'stopping';
    this.wakeUp();
    await this.loop;
    await this.subscription?.stop();
    await Promise.all(this.running.values());
    this.life = 'stopped';
  }

  /** Rounds until stopped: handle what is due, sleep until the next tick. */
  private async run(): Promise<void> {
    let failures = 0;
    while (this.life === 'started') {
      let sleepMs: number;
      // What a notice would make this round read again, it reads anyway.
      this.woken = false;
      try {
        if (!this.synced) await this.syncSystem();
        await this.runDue();
        const until = await repo.msUntilNext(this.db, [...this.chores.keys()]);
        // ≤ 0 after a round: the rows due are another worker's for the moment.
        sleepMs = until === null ? this.maxSleepMs : until <= 0 ? BUSY_SLEEP_MS : Math.ceil(until) + 5;
        failures = 0;
      } catch (err) {
        failures++;
        sleepMs = Math.min(this.maxSleepMs, 1000 * 2 ** Math.min(failures - 1, 10));
        this.log.warn({ err, retryInMs: sleepMs }, 'schedules: a round failed on the database; trying again');
      }
      if (this.life !== 'started') break;
      await this.sleep(Math.min(sleepMs, this.maxSleepMs));
    }
  }

  private wakeUp(): void {
    if (this.wake) this.wake();
    else this.woken = true;
  }

  private sleep(ms: number): Promise<void> {
    if (this.woken) return Promise.resolve();
    return new Promise((resolve) => {
      // Ended by the timer or a notice, whichever comes first; either way no waker is left set,
      // so a notice during the next round is kept in `woken`.
      const timer = setTimeout(() => this.wake?.(), ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  /**
   * Handles every due tick: batches of due rows, each batch in one transaction, until none is
   * due. Answers the number of rows handled (tests call it directly to play a worker's round).
   */
  async runDue(): Promise<number> {
    let handled = 0;
    for (;;) {
      const started: { row: repo.ScheduleRow; chore: Housekeeping }[] = [];
      const n = await retryOnConflict(() =>
        this.db.transaction(async (tx) => {
          started.length = 0;
          const { rows, now } = await repo.takeDue(tx, [...this.chores.keys()], BATCH);
          for (const row of rows) {
            if (row.collection_id === null) {
              const chore = this.systemTick(row, now);
              await repo.advance(tx, row.id, chore.advance);
              if (chore.run) started.push({ row, chore: chore.run });
            } else {
              await this.tenantTick(tx, row, now);
            }
          }
          return rows.length;
        }),
      );
      for (const { row, chore } of started) this.runChore(row, chore);
      handled += n;
      if (n < BATCH || this.life === 'stopping') return handled;
    }
  }

  /** A collection's schedule at its tick: one job (or the reason none), and the next tick. */
  private async tenantTick(tx: Tx, row: repo.ScheduleRow, now: Date) {
    const collectionId = row.collection_id as string;
    let cron: Cron;
    let next: Date;
    let tick: Date;
    try {
      cron = { expression: row.cron as string, timezone: row.timezone };
      next = nextTick(cron, now);
      tick = latestTick(cron, now);
      if (row.next_run_at && tick < row.next_run_at) tick = row.next_run_at;
    } catch (err) {
      // A zone the runtime no longer knows, say: the row waits, disabled in effect, saying why.
      const error = `Its next tick cannot be worked out: ${(err as Error).message}`;
      this.log.warn({ collectionId, scheduleId: row.id, err }, 'schedules: a schedule cannot be stepped');
      await repo.advance(tx, row.id, { nextRunAt: null, error });
      return;
    }
    const missed = now.getTime() - tick.getTime() > MISSED_AFTER_MS;
    if (missed && row.catch_up === 'none') {
      this.log.info({ collectionId, scheduleId: row.id, tick }, 'schedules: missed tick skipped (catchUp none)');
      await repo.advance(tx, row.id, { nextRunAt: next });
      return;
    }
    const key = `schedule:${row.id}:${tick.toISOString()}`;
    await repo.savepoint(tx);
    try {
      const job = await this.jobs.submit(collectionId, jobRequest(fieldsOf(row), key), tx);
      await repo.releaseSavepoint(tx);
      await repo.advance(tx, row.id, { nextRunAt: next, ran: { at: tick, jobId: job.id }, error: null });
    } catch (err) {
      // A fault of the database fails the round (tried again); anything else is the schedule's.
      if (isTransient(err) || !(err instanceof AppError || isValueError(err))) throw err;
      await repo.rollbackToSavepoint(tx);
      const error = (err as Error).message;
      this.log.warn(
        { collectionId, scheduleId: row.id, name: row.name, error },
        'schedules: a tick enqueued nothing; the schedule moves on to its next tick',
      );
      await repo.advance(tx, row.id, { nextRunAt: next, error });
    }
  }

  /** A system schedule at its tick: its next tick, and the function to run after the commit. */
  private systemTick(row: repo.ScheduleRow, now: Date): { advance: repo.Advance; run?: Housekeeping } {
    const nextRunAt =
      row.every_ms !== null
        ? new Date(now.getTime() + row.every_ms)
        : nextTick({ expression: row.cron as string, timezone: 'UTC' }, now);
    // takeDue answers only the system schedules this process declares.
    const chore = this.chores.get(row.name) as Housekeeping;
    if (this.running.has(row.name)) {
      this.log.debug({ name: row.name }, 'schedules: housekeeping still running here from its last tick');
      return { advance: { nextRunAt } };
    }
    return { advance: { nextRunAt, ran: { at: now, jobId: null } }, run: chore };
  }

  /** Runs a housekeeping function after its tick committed; its outcome is written when it ends. */
  private runChore(row: repo.ScheduleRow, chore: Housekeeping): void {
    const run = (async () => {
      let error: string | null = null;
      try {
        const result = await chore.run();
        const postponed = (result as { postponed?: unknown } | null)?.postponed;
        if (Array.isArray(postponed) && postponed.length > 0)
          this.log.warn(
            { name: chore.name, postponed },
            'schedules: housekeeping gave way (a lock it needed was not granted in time); its next tick does the rest',
          );
        else this.log.debug({ name: chore.name, result }, 'schedules: housekeeping done');
      } catch (err) {
        error = (err as Error).message ?? String(err);
        this.log.warn({ err, name: chore.name }, 'schedules: housekeeping failed (its next tick tries again)');
      }
      await repo
        .recordSystemOutcome(this.db, row.id, error)
        .catch((err: unknown) => this.log.warn({ err, name: chore.name }, 'schedules: could not record an outcome'));
    })().finally(() => this.running.delete(chore.name));
    this.running.set(chore.name, run);
  }
}

/** A PostgreSQL value error (SQLSTATE 22xxx, 23xxx): the stored values, not the database, are at fault. */
function isValueError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}
