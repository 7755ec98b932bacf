/**
 * Maintained progress: the rows and counters that answer a journey's funnel report, stats and
 * step recipients without reading its entrants' events (tables in migration 0204, design in
 * docs/design/journeys.md "Maintained progress").
 *
 * States of a journey's progress:
 * - none: the journey has a step without an interaction mapping (or no steps); every query
 *   reads the events.
 * - building (version v, not ready): the steps changed (or the journey is new). Triggers on
 *   interaction_events already keep every touched recipient in version v, and note it as
 *   dirty. The rebuild task `journeys.progress` waits for event writers that started before
 *   the change, writes every entrant's row with the funnel's own statement (hash joins, a
 *   part of the entrants per transaction; a row a trigger wrote in v is kept), recomputes the
 *   dirty recipients one by one (the bulk statement's snapshot may be older than a trigger's),
 *   removes older versions' rows and marks v ready. Queries read the events meanwhile.
 * - ready: queries without a period, whose steps are the kept ones, read the counters.
 *
 * Trade-offs: every event of a kept journey's interactions (or carrying its id) costs its
 * writer the recomputation of that recipient, a handful of index lookups; the rebuild waits
 * for the transactions already running without holding new writers back (a lock on the
 * events table would hold every tenant's writers behind the longest one); a journey's rebuilds
 * run one at a time (a named queue per journey), so two never share its dirty rows; a journey with
 * a million entrants is rebuilt in the background in minutes, with the events path answering
 * until then.
 */
import { type Static, Type } from 'typebox';
import type { Analytics, Queryable } from '../../db/index.ts';
import { defineTask, type JobQueue, type TaskContext, type TaskDefinition } from '../../platform/tasks.ts';
import * as milestonesRepo from './journeys.milestones.repository.ts';
import * as progressRepo from './journeys.progress.repository.ts';
import * as repo from './journeys.repository.ts';

export const PROGRESS_TASK = 'journeys.progress';
/** Recipients recomputed per transaction after the bulk statements: short locks. */
const CHUNK = 2000;
/**
 * How long the rebuild waits for the event writers that were running when it started before
 * it fails and is retried; the wait holds nobody back (see waitForEventWriters).
 */
const WRITERS_WAIT_MS = 30_000;

export const ProgressPayload = Type.Object({ journeyId: Type.String({ maxLength: 200 }) });
type ProgressPayload = Static<typeof ProgressPayload>;

/**
 * Keeps the journey's progress in step with its steps (`null`: it has none that can be kept),
 * inside the caller's transaction, and queues the rebuild when the rows must change.
 */
export async function followSteps(
  tx: Queryable,
  jobs: JobQueue,
  collectionId: string,
  journeyId: string,
  steps: progressRepo.KeptStep[] | null,
  props: string[] = [],
): Promise<void> {
  if (await progressRepo.followSteps(tx, collectionId, journeyId, steps, props))
    await queueRebuild(tx, jobs, collectionId, journeyId);
}

/** Queues the rebuild (or, for a deleted journey, the removal) of a journey's progress rows. */
export async function queueRebuild(tx: Queryable, jobs: JobQueue, collectionId: string, journeyId: string) {
  // One named queue per journey: its rebuilds run one at a time, in the order the changes were
  // made. Two at once (steps changed twice, or changed and then deleted) could take each
  // other's dirty recipients or write rows of a version already swept.
  await jobs.enqueue(tx, collectionId, {
    task: PROGRESS_TASK,
    payload: { journeyId },
    queueName: `${PROGRESS_TASK}:${journeyId}`,
  });
}

/** Rows a rebuild writes before it refreshes the table's statistics itself. */
const ANALYZE_AFTER_ROWS = 10_000;

/** Entrants per bulk statement: how long one statement holds its rows (a second or two). */
const PART_ENTRANTS = 50_000;

async function rebuild(
  p: ProgressPayload,
  ctx: TaskContext,
  analytics: Analytics,
): Promise<{ written: number; touched: number; ready: boolean }> {
  const { db } = ctx;
  const collectionId = ctx.job.collectionId;
  await progressRepo.waitForEventWriters(db, WRITERS_WAIT_MS);
  const state = await progressRepo.findProgressState(db, collectionId, p.journeyId);
  if (!state?.steps) {
    // Nothing kept any more (or the journey is gone): every row goes, noted recipients too (a
    // state without steps has no rows of its own version: the triggers keep none).
    await progressRepo.sweepProgress(db, collectionId, p.journeyId, null);
    // A deleted journey's milestones go too; a journey that still exists keeps them, so that
    // its steps announced once are not announced again if progress is kept again.
    if (!state && !(await repo.findJourney(db, collectionId, p.journeyId)))
      await milestonesRepo.dropMilestones(db, collectionId, p.journeyId);
    return { written: 0, touched: 0, ready: false };
  }
  const steps = state.steps.map((s, k) => ({ stepId: `s${k + 1}`, ...s }));
  const entries = await progressRepo.countJourneyEntries(db, collectionId, p.journeyId);
  const count = Math.min(256, Math.max(1, Math.ceil(entries / PART_ENTRANTS)));
  let written = 0;
  for (const idField of ['userId', 'contactId'] as const) {
    for (let index = 0; index < count; index++) {
      ctx.signal.throwIfAborted();
      written += await analytics((tx) =>
        progressRepo.bulkProgress(tx, collectionId, {
          journeyId: p.journeyId,
          idField,
          steps,
          version: state.version,
          props: state.props,
          part: { count, index },
        }),
      );
      await ctx.progress({ done: index + 1 + (idField === 'userId' ? 0 : count), total: 2 * count });
    }
  }
  // Recipients the triggers recomputed while the bulk statements ran: once more, one by one.
  let touched = 0;
  for (;;) {
    const keys = await db.transaction(async (tx) => {
      const taken = await progressRepo.takeDirty(tx, collectionId, p.journeyId, CHUNK);
      if (taken.length > 0) await progressRepo.refreshProgress(tx, collectionId, p.journeyId, taken);
      return taken;
    });
    touched += keys.length;
    if (keys.length < CHUNK) break;
  }
  await progressRepo.sweepProgress(db, collectionId, p.journeyId, state.version);
  // Statistics before the rows answer: after a bulk rewrite the planner's are of the rows before
  // (none at all on a new table), and a read over a million rows then sorted where it should
  // hash (trends at 10,000,000 events: 1.3 s, against 0.6 s once autovacuum had analyzed).
  if (written >= ANALYZE_AFTER_ROWS) await progressRepo.analyzeProgress(db);
  // A newer version (the steps changed again meanwhile) has its own job queued.
  const ready = await progressRepo.markProgressReady(db, collectionId, p.journeyId, state.version);
  return { written, touched, ready };
}

/** `analytics`: the bulk statements are the funnel's, with its work_mem. */
export function progressTask(analytics: Analytics): TaskDefinition {
  return defineTask({
    name: PROGRESS_TASK,
    payload: ProgressPayload,
    visible: false,
    maxAttempts: 10,
    handler: (p, ctx) => rebuild(p, ctx, analytics),
  });
}
