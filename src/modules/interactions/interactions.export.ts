/**
 * The `interactions.export` task: a collection's events in a time window written to NDJSON or
 * CSV. The file is stored in the database as ~1 MiB chunks (table interaction_export_chunks),
 * so the API process that serves the download need not be the worker that wrote it, and the
 * file goes wherever the database goes (backups, replicas). Pages are read by keyset on
 * (occurred_at, id), so an export of millions of events never holds more than one page.
 */
import type { Readable } from 'node:stream';
import { chunkedFiles, type Db } from '../../db/index.ts';
import { csvLine } from '../../platform/csv.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { defineTask, type TaskContext, type TaskDefinition } from '../../platform/tasks.ts';
import type { EventRow } from './interactions.events.repository.ts';
import { toEventRow } from './interactions.present.ts';
import * as reads from './interactions.reads.repository.ts';
import { ExportPayload } from './interactions.schema.ts';

export const EXPORT_TASK = 'interactions.export';
const PAGE = 5000;
/** Where export files are kept (migration 0200). */
const files = chunkedFiles({ files: 'interaction_exports', chunks: 'interaction_export_chunks' });

/** The part of the job engine's TaskContext this task uses. */
export type ExportTaskContext = Pick<TaskContext, 'db' | 'signal' | 'progress'> & {
  job: Pick<TaskContext['job'], 'id' | 'collectionId'>;
};

/** The CSV's columns: the row's fields, then `extra` (the event's further fields as JSON). */
const CSV_COLUMNS = [
  'eventId',
  'timestamp',
  'interactionId',
  'appId',
  'outcome',
  'userId',
  'contactId',
  'anonId',
  'scope',
  'broadcastId',
  'journeyId',
  'productId',
  'proofId',
  'variantId',
  'batchId',
  'eventType',
  'source',
  'channel',
  'deleted',
  'metadata',
] as const;

function line(format: 'ndjson' | 'csv', e: EventRow): string {
  const row = toEventRow(e);
  if (format === 'ndjson') return `${JSON.stringify(row)}\n`;
  return csvLine([...CSV_COLUMNS.map((c) => row[c]), e.extra]);
}

export async function runExport(
  p: ExportPayload,
  ctx: ExportTaskContext,
): Promise<{ format: string; rows: number; bytes: number }> {
  const { job, db } = ctx;
  const format = p.format ?? 'ndjson';
  const filter: reads.EventFilter = {
    from: p.from,
    to: p.to,
    interactionId: p.interactionId,
    includeDeleted: p.includeDeleted,
  };
  const total = await reads.countForExport(db, job.collectionId, filter);
  const file = await files.create(db, job.collectionId, job.id, format);
  if (format === 'csv') await file.write(csvLine([...CSV_COLUMNS, 'extra']), 0);
  let rows = 0;
  let after: { at: Date; id: number } | null = null;
  for (;;) {
    if (ctx.signal.aborted) throw new Error('Export interrupted by shutdown; it will be retried');
    const page = await reads.exportPage(db, job.collectionId, filter, after, PAGE);
    for (const e of page) {
      await file.write(line(format, e));
      rows++;
    }
    if (page.length < PAGE) break;
    const last = page[page.length - 1];
    after = { at: last.occurred_at, id: last.id };
    await ctx.progress({ done: rows, total, message: `${rows} of ${total} events written` });
  }
  const { bytes } = await file.close();
  await ctx.progress({ done: rows, total: rows, message: `${rows} events written` });
  return { format, rows, bytes };
}

/** The task (`visible`: admins enqueue it through the API). */
export function exportTask(): TaskDefinition {
  return defineTask({
    name: EXPORT_TASK,
    payload: ExportPayload,
    visible: true,
    description:
      'Writes the collection’s interaction events (a window, one interaction type, or all) as NDJSON or CSV; the result names the file to download.',
    example: { format: 'csv', from: '2026-01-01T00:00:00Z' },
    maxAttempts: 3,
    prepare(p) {
      if (p.from && p.to && Date.parse(p.from) >= Date.parse(p.to))
        throw badRequest('payload.from must be before payload.to');
      return { format: p.format ?? 'ndjson', ...p };
    },
    handler: runExport,
  });
}

export interface ExportDownload {
  contentType: string;
  fileName: string;
  byteCount: number;
  stream: Readable;
}

/** A finished export of this collection, streamed chunk by chunk. */
export async function openExport(db: Db, collectionId: string, jobId: number): Promise<ExportDownload> {
  const x = await files.open(db, collectionId, jobId);
  if (!x) throw notFound('Finished export');
  return {
    contentType: x.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
    fileName: `interactions-${collectionId}-${jobId}.${x.format === 'csv' ? 'csv' : 'ndjson'}`,
    byteCount: x.byteCount,
    stream: x.stream,
  };
}
