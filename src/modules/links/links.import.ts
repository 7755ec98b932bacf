/**
 * The `links.import` task: links created from a CSV (the columns of the export, links.bulk.ts),
 * as a job with progress and a report of every row.
 *
 * Each row is checked as a single create is (the CreateLinkBody schema, then the service's
 * checks); a bad row is reported and skipped, the others are created, BATCH at a time, each batch
 * one transaction with its `link.created` events. A row's link id is derived from the job and
 * the row, so a retried job (the worker died mid-way) skips the rows an earlier attempt wrote
 * rather than creating them twice: they are reported `created` again.
 */
import { createHash } from 'node:crypto';
import { parse } from 'csv-parse/sync';
import { Type } from 'typebox';
import { Compile } from 'typebox/compile';
import { AppError, badRequest } from '../../platform/errors.ts';
import { normaliseInstants } from '../../platform/instants.ts';
import { Closed } from '../../platform/schemas.ts';
import { defineTask, type TaskDefinition } from '../../platform/tasks.ts';
import { CSV_COLUMNS } from './links.bulk.ts';
import { CreateLinkBody } from './links.schema.ts';
import type { LinksService, PreparedLink } from './links.service.ts';

export const IMPORT_TASK = 'links.import';
/** Rows one import takes (the API's body limit, 1 MiB, comes first for long rows). */
export const IMPORT_MAX_ROWS = 10_000;
const CSV_MAX_CHARS = 1_000_000;
const BATCH = 200;

/** Columns an import reads; the export's other columns (id, clicks, …) are ignored. */
const READ = ['code', 'url', 'title', 'tags', 'expiresAt', 'passQuery', 'expiredUrl', 'password', 'rules', 'variants'];
const IGNORED = new Set<string>(CSV_COLUMNS.filter((c) => !READ.includes(c)));

const ImportPayload = Closed({
  csv: Type.String({
    minLength: 1,
    maxLength: CSV_MAX_CHARS,
    description: `CSV text with a header row: url (required), code, title, tags (joined with |), expiresAt, passQuery (true/false), expiredUrl, password, rules and variants (JSON); at most ${IMPORT_MAX_ROWS} rows`,
  }),
});

const checkBody = Compile(CreateLinkBody);

export type RowOutcome =
  | { row: number; status: 'created'; id: string; code: string }
  | { row: number; status: 'error'; field?: string; message: string };

/** The CSV's header and rows; a 400 naming what is wrong with the file as a whole. */
export function readCsv(csv: string): { header: string[]; rows: string[][] } {
  let records: string[][];
  try {
    records = parse(csv, { bom: true, skip_empty_lines: true, relax_column_count: true, trim: false });
  } catch (err) {
    throw badRequest(`payload.csv is not valid CSV: ${(err as Error).message}`, { field: 'payload.csv' });
  }
  const [header = [], ...rows] = records;
  const unknown = header.filter((h) => !READ.includes(h) && !IGNORED.has(h));
  if (unknown.length) {
    throw badRequest(`payload.csv has unknown columns: ${unknown.join(', ')} (known: ${READ.join(', ')})`, {
      field: 'payload.csv',
      columns: unknown,
    });
  }
  if (!header.includes('url')) throw badRequest('payload.csv needs a url column', { field: 'payload.csv' });
  if (rows.length > IMPORT_MAX_ROWS) {
    throw badRequest(`payload.csv has ${rows.length} rows; at most ${IMPORT_MAX_ROWS} per import`, {
      field: 'payload.csv',
    });
  }
  return { header, rows };
}

/** A row as a create's body, or why not (the field as the CSV names it). */
export function rowBody(
  header: string[],
  cells: string[],
): { body: CreateLinkBody } | { field: string; message: string } {
  const body: Record<string, unknown> = {};
  for (let i = 0; i < header.length; i++) {
    const name = header[i];
    const raw = cells[i] ?? '';
    if (!READ.includes(name) || raw === '') continue;
    if (name === 'tags') body.tags = raw.split('|').filter((t) => t !== '');
    else if (name === 'passQuery') {
      if (raw !== 'true' && raw !== 'false') return { field: name, message: 'must be true or false' };
      body.passQuery = raw === 'true';
    } else if (name === 'rules' || name === 'variants') {
      try {
        body[name] = JSON.parse(raw);
      } catch {
        return { field: name, message: 'must be JSON (as the export writes it)' };
      }
    } else body[name] = raw;
  }
  if (!checkBody.Check(body)) {
    const [first] = checkBody.Errors(body);
    const [field] = first?.instancePath.split('/').filter(Boolean) ?? [];
    if (!field) return { field: 'url', message: 'url is required' };
    return { field, message: `${first?.instancePath.slice(1)} ${first?.message ?? 'is invalid'}` };
  }
  const badTime = normaliseInstants(CreateLinkBody, body);
  if (badTime !== undefined) return { field: 'expiresAt', message: 'must be an ISO 8601 date or date-time' };
  return { body: body as CreateLinkBody };
}

/** A row's link id: the same for the same job and row, on every attempt. */
const rowId = (jobId: number, row: number) =>
  `lnk_${createHash('sha256').update(`${IMPORT_TASK}:${jobId}:${row}`).digest('base64url').slice(0, 16)}`;

export function importTask(service: LinksService): TaskDefinition {
  return defineTask({
    name: IMPORT_TASK,
    payload: ImportPayload,
    visible: true,
    description:
      'Creates links from CSV (the columns of GET …/links/export; url required). Bad rows are reported in the result’s `rows` with their reason; the others are created.',
    example: { csv: 'url,code,title,tags\r\nhttps://example.com/spring,spring26,Spring sale,promo|spring\r\n' },
    maxAttempts: 3,
    prepare(payload) {
      readCsv(payload.csv);
      return payload;
    },
    async handler({ csv }, ctx) {
      const { collectionId, id: jobId } = ctx.job;
      const actor = `job:${jobId}`;
      const { header, rows } = readCsv(csv);
      const report: RowOutcome[] = [];
      let created = 0;
      for (let start = 0; start < rows.length; start += BATCH) {
        if (ctx.signal.aborted) throw new Error('Import interrupted by shutdown; it will be retried');
        const batch: { row: number; prepared: PreparedLink; id: string }[] = [];
        for (let i = start; i < Math.min(start + BATCH, rows.length); i++) {
          const row = i + 1;
          const parsed = rowBody(header, rows[i]);
          if ('field' in parsed) {
            report.push({ row, status: 'error', field: parsed.field, message: parsed.message });
            continue;
          }
          try {
            batch.push({ row, prepared: await service.prepare(parsed.body), id: rowId(jobId, row) });
          } catch (err) {
            if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
            report.push({ row, status: 'error', field: fieldOf(err), message: err.message });
          }
        }
        if (batch.length > 0) {
          const { rows: written } = await service.insertBatch(collectionId, actor, batch);
          written.forEach((w, k) => {
            const { row, id } = batch[k];
            if (w instanceof AppError) report.push({ row, status: 'error', field: fieldOf(w), message: w.message });
            else {
              created++;
              report.push({ row, status: 'created', id, code: w.row.code });
            }
          });
        }
        const done = Math.min(start + BATCH, rows.length);
        await ctx.progress({ done, total: rows.length, message: `${done} of ${rows.length} rows` });
      }
      report.sort((x, y) => x.row - y.row);
      return { total: rows.length, created, failed: rows.length - created, rows: report };
    },
  });
}

const fieldOf = (err: AppError) => {
  const f = (err.details as { field?: unknown } | undefined)?.field;
  return typeof f === 'string' ? f : undefined;
};
