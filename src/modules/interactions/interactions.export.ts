/**
 * The `interactions.export` task: a collection's events in a time window written to NDJSON or
 * CSV. The file is stored in the database as ~1 MiB chunks (table interaction_export_chunks),
 * so the API process that serves the download need not be the worker that wrote it, and the
 * file goes wherever the database goes (backups, replicas). Pages are read by keyset on
 * (occurred_at, id), so an export of millions of events never holds more than one page.
 */
import { Readable } from 'node:stream';
import type { Db, Queryable } from '../../db/index.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { defineTask, type TaskContext, type TaskDefinition } from '../../platform/tasks.ts';
import type { EventRow } from './interactions.events.repository.ts';
import * as files from './interactions.export.repository.ts';
import { toEventRow } from './interactions.present.ts';
import * as reads from './interactions.reads.repository.ts';
import { ExportPayload } from './interactions.schema.ts';

export const EXPORT_TASK = 'interactions.export';
const PAGE = 5000;
const CHUNK_BYTES = 1024 * 1024;

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

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  // Cells that a spreadsheet would run as a formula are prefixed with a quote (CSV injection).
  const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function line(format: 'ndjson' | 'csv', e: EventRow): string {
  const row = toEventRow(e);
  if (format === 'ndjson') return `${JSON.stringify(row)}\n`;
  return `${[...CSV_COLUMNS.map((c) => csvCell(row[c])), csvCell(e.extra)].join(',')}\n`;
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
  await files.startExport(db, job.collectionId, job.id, format);
  let seq = 0;
  let rows = 0;
  let bytes = 0;
  let pending: string[] = [];
  let pendingBytes = 0;
  let pendingRows = 0;
  const flush = async (q: Queryable) => {
    if (pendingRows === 0 && seq > 0) return;
    const data = Buffer.from(pending.join(''), 'utf8');
    await files.appendExportChunk(q, job.collectionId, job.id, seq++, data, pendingRows);
    bytes += data.length;
    pending = [];
    pendingBytes = 0;
    pendingRows = 0;
  };
  if (format === 'csv') {
    pending.push(`${[...CSV_COLUMNS, 'extra'].join(',')}\n`);
    pendingBytes = pending[0].length;
  }
  let after: { at: Date; id: number } | null = null;
  for (;;) {
    if (ctx.signal.aborted) throw new Error('Export interrupted by shutdown; it will be retried');
    const page = await reads.exportPage(db, job.collectionId, filter, after, PAGE);
    for (const e of page) {
      const l = line(format, e);
      pending.push(l);
      pendingBytes += l.length;
      pendingRows++;
      rows++;
      if (pendingBytes >= CHUNK_BYTES) await flush(db);
    }
    if (page.length < PAGE) break;
    const last = page[page.length - 1];
    after = { at: last.occurred_at, id: last.id };
    await ctx.progress({ done: rows, total, message: `${rows} of ${total} events written` });
  }
  await flush(db);
  await files.finishExport(db, job.collectionId, job.id);
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
  const x = await files.findExport(db, collectionId, jobId);
  if (!x?.complete) throw notFound('Finished export');
  const count = x.chunks;
  async function* chunks() {
    for (let seq = 0; seq < count; seq++) {
      const data = await files.readExportChunk(db, collectionId, jobId, seq);
      if (data) yield data;
    }
  }
  return {
    contentType: x.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
    fileName: `interactions-${collectionId}-${jobId}.${x.format === 'csv' ? 'csv' : 'ndjson'}`,
    byteCount: x.byte_count,
    stream: Readable.from(chunks()),
  };
}
