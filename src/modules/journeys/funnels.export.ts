/**
 * The `journeys.peopleExport` task (issue 29, people "exportable"): the people a funnel request
 * selects — a journey's funnel or an ad-hoc one, under any of the options, a step's entered,
 * completed or dropped recipients or everyone — written as CSV, one row per recipient: its id,
 * its breakdown value (with a breakdown), how many steps it completed, when it entered and
 * when it completed each step. Stored in ~1 MiB chunks (migration 0208) and downloaded from
 * `GET …/funnels/exports/{jobId}/download`, as interaction exports are. Admins enqueue it
 * through the jobs API; its progress says how many rows are written.
 */
import type { Readable } from 'node:stream';
import { chunkedFiles, type Db } from '../../db/index.ts';
import { csvLine } from '../../platform/csv.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { defineTask, type TaskContext, type TaskDefinition } from '../../platform/tasks.ts';
import type { FunnelDef, FunnelsService } from './funnels.service.ts';
import { PeopleExportPayload } from './journeys.schema.ts';

export const PEOPLE_EXPORT_TASK = 'journeys.peopleExport';
/** Where people exports are kept (migrations 0208, 0640). */
const files = chunkedFiles({ files: 'funnel_exports', chunks: 'funnel_export_chunks' });

/** Resolves the payload's funnel (a journey's, or ad-hoc): the journeys service knows how. */
export type ResolveFunnel = (collectionId: string, p: PeopleExportPayload) => Promise<FunnelDef>;

export async function runPeopleExport(
  funnels: FunnelsService,
  resolve: ResolveFunnel,
  p: PeopleExportPayload,
  ctx: Pick<TaskContext, 'db' | 'signal' | 'progress'> & { job: { id: number; collectionId: string } },
): Promise<{ rows: number; bytes: number }> {
  const { db, job } = ctx;
  const def = await resolve(job.collectionId, p);
  const { rows } = await funnels.selected(job.collectionId, def, {
    ...p,
    idField: p.idField ?? 'userId',
    start: p.periodStart,
    end: p.periodEnd,
  });
  await ctx.progress({ done: 0, total: rows.length, message: `${rows.length} recipients selected` });
  const file = await files.create(db, job.collectionId, job.id, 'csv');
  const header = [
    'recipientId',
    ...(p.breakdown ? ['breakdownValue'] : []),
    'stepsCompleted',
    'enteredAt',
    ...def.steps.map((s) => `${s.stepId}.completedAt`),
  ];
  await file.write(csvLine(header), 0);
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  let written = 0;
  for (const w of rows) {
    if (ctx.signal.aborted) throw new Error('Export interrupted by shutdown; it will be retried');
    const cells = [
      w.rid,
      ...(p.breakdown ? [w.value ?? null] : []),
      w.reached,
      iso(w.enteredAt),
      ...def.steps.map((_, k) => iso(w.times[k])),
    ];
    written++;
    if (await file.write(csvLine(cells))) {
      await ctx.progress({ done: written, total: rows.length, message: `${written} of ${rows.length} rows written` });
    }
  }
  const totals = await file.close();
  await ctx.progress({ done: totals.rows, total: rows.length, message: `${totals.rows} rows written` });
  return totals;
}

export function peopleExportTask(funnels: FunnelsService, resolve: ResolveFunnel): TaskDefinition {
  return defineTask({
    name: PEOPLE_EXPORT_TASK,
    payload: PeopleExportPayload,
    visible: true,
    description:
      'Writes the recipients of a funnel (a journey’s, with journeyId, or ad-hoc, with steps) under the funnel options as CSV: everyone, or one step’s entered, completed or dropped people; the file is downloaded from …/funnels/exports/{jobId}/download.',
    example: {
      steps: [{ interactionId: 'view' }, { interactionId: 'buy', outcome: 'paid' }],
      conversionWindow: { value: 7, unit: 'day' },
      stepId: 'step2',
      status: 'dropped',
    },
    maxAttempts: 3,
    prepare(p) {
      if ((p.journeyId === undefined) === (p.steps === undefined)) {
        throw badRequest('payload: send journeyId (a journey’s funnel) or steps (an ad-hoc funnel), one of them');
      }
      if (p.stepMappings !== undefined && p.journeyId === undefined) {
        throw badRequest('payload.stepMappings applies to a journey: send journeyId too');
      }
      return p;
    },
    handler: (p, ctx) => runPeopleExport(funnels, resolve, p, ctx),
  });
}

/** A finished people export of this collection, streamed chunk by chunk. */
export async function openPeopleExport(
  db: Db,
  collectionId: string,
  jobId: number,
): Promise<{ fileName: string; byteCount: number; stream: Readable }> {
  const x = await files.open(db, collectionId, jobId);
  if (!x) throw notFound('Finished export');
  return {
    fileName: `funnel-people-${collectionId}-${jobId}.csv`,
    byteCount: x.byteCount,
    stream: x.stream,
  };
}
