/**
 * Files a job writes into the database for any API process to serve: a file row (format, row
 * and byte counts, complete or not) and its content as ~1 MiB chunks, so that the download need
 * not reach the worker that wrote it and the file goes wherever the database goes (backups,
 * replicas). Interaction exports (migration 0104's `interaction_exports`) and funnel people
 * exports (0208's `funnel_exports`, `format` since 0640) share the shape, each in its own pair
 * of tables, so a module's files stay its own (tenancy, deletion with the collection).
 *
 * A file's states: started (its row, no chunks; a retried attempt starts over, dropping the
 * partial chunks with the old row) → written (chunks appended in order, counts kept on the
 * row) → complete (readable by `open`). Only a complete file is ever served.
 */
import { Readable } from 'node:stream';
import type { Queryable } from './client.ts';

/** The table pairs that hold such files: names are never a caller's text. */
export type FileTables =
  | { files: 'interaction_exports'; chunks: 'interaction_export_chunks' }
  | { files: 'funnel_exports'; chunks: 'funnel_export_chunks' };

/** Bytes gathered before a chunk is written. */
const CHUNK_BYTES = 1024 * 1024;

export interface StoredFile {
  format: string;
  rowCount: number;
  byteCount: number;
  stream: Readable;
}

export function chunkedFiles(tables: FileTables) {
  // Interpolated below: each is one of the literals of FileTables, never a caller's text.
  const find = async (db: Queryable, collectionId: string, jobId: number) => {
    const { rows } = await db.query<{
      format: string;
      row_count: number;
      byte_count: number;
      complete: boolean;
      chunks: number;
    }>(
      `SELECT format, row_count, byte_count, complete,
        (SELECT count(*)::int FROM ${tables.chunks} c WHERE c.collection_id = x.collection_id AND c.job_id = x.job_id) AS chunks
      FROM ${tables.files} x WHERE collection_id = $1 AND job_id = $2`,
      [collectionId, jobId],
    );
    return rows[0];
  };
  return {
    /**
     * Starts the file of job `jobId` (over again, for a retried attempt) and answers a writer:
     * `line` gathers text, written as a chunk each ~1 MiB; `close` writes the rest and marks the
     * file complete. Counts (rows, bytes) are kept on the file's row as chunks are written.
     */
    async create(db: Queryable, collectionId: string, jobId: number, format: string) {
      await db.query(`DELETE FROM ${tables.files} WHERE collection_id = $1 AND job_id = $2`, [collectionId, jobId]);
      await db.query(`INSERT INTO ${tables.files} (collection_id, job_id, format) VALUES ($1, $2, $3)`, [
        collectionId,
        jobId,
        format,
      ]);
      let pending: string[] = [];
      let pendingBytes = 0;
      let pendingRows = 0;
      let seq = 0;
      const totals = { rows: 0, bytes: 0 };
      const flush = async () => {
        if (pendingRows === 0 && pendingBytes === 0 && seq > 0) return;
        const data = Buffer.from(pending.join(''), 'utf8');
        await db.query(`INSERT INTO ${tables.chunks} (collection_id, job_id, seq, data) VALUES ($1, $2, $3, $4)`, [
          collectionId,
          jobId,
          seq++,
          data,
        ]);
        await db.query(
          `UPDATE ${tables.files} SET row_count = row_count + $3, byte_count = byte_count + $4
           WHERE collection_id = $1 AND job_id = $2`,
          [collectionId, jobId, pendingRows, data.length],
        );
        totals.rows += pendingRows;
        totals.bytes += data.length;
        pending = [];
        pendingBytes = 0;
        pendingRows = 0;
      };
      return {
        totals,
        /** Adds text; `rows` says how many rows it holds (0 for a header). True when a chunk was written. */
        async write(text: string, rows = 1): Promise<boolean> {
          pending.push(text);
          pendingBytes += text.length;
          pendingRows += rows;
          if (pendingBytes < CHUNK_BYTES) return false;
          await flush();
          return true;
        },
        async close(): Promise<{ rows: number; bytes: number }> {
          await flush();
          await db.query(`UPDATE ${tables.files} SET complete = true WHERE collection_id = $1 AND job_id = $2`, [
            collectionId,
            jobId,
          ]);
          return totals;
        },
      };
    },

    /** A complete file of this collection, streamed chunk by chunk; undefined when there is none (yet). */
    async open(db: Queryable, collectionId: string, jobId: number): Promise<StoredFile | undefined> {
      const x = await find(db, collectionId, jobId);
      if (!x?.complete) return undefined;
      async function* read() {
        for (let seq = 0; seq < x.chunks; seq++) {
          const { rows } = await db.query<{ data: Uint8Array }>(
            `SELECT data FROM ${tables.chunks} WHERE collection_id = $1 AND job_id = $2 AND seq = $3`,
            [collectionId, jobId, seq],
          );
          if (rows[0]) yield Buffer.from(rows[0].data);
        }
      }
      return { format: x.format, rowCount: x.row_count, byteCount: x.byte_count, stream: Readable.from(read()) };
    },
  };
}

export type ChunkedFiles = ReturnType<typeof chunkedFiles>;
export type FileWriter = Awaited<ReturnType<ChunkedFiles['create']>>;
