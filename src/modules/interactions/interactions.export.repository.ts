/** SQL of export files (interaction_exports, interaction_export_chunks): written by the task, read by the download. */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';

export async function startExport(db: Queryable, collectionId: string, jobId: number, format: string): Promise<void> {
  // A retried attempt starts over: its partial chunks are dropped with the old row.
  await db.query(sql`DELETE FROM interaction_exports WHERE collection_id = ${collectionId} AND job_id = ${jobId}`);
  await db.query(
    sql`INSERT INTO interaction_exports (collection_id, job_id, format) VALUES (${collectionId}, ${jobId}, ${format})`,
  );
}

export async function appendExportChunk(
  db: Queryable,
  collectionId: string,
  jobId: number,
  seq: number,
  data: Buffer,
  rows: number,
): Promise<void> {
  await db.query(
    sql`INSERT INTO interaction_export_chunks (collection_id, job_id, seq, data) VALUES (${collectionId}, ${jobId}, ${seq}, ${data})`,
  );
  await db.query(sql`
    UPDATE interaction_exports SET row_count = row_count + ${rows}, byte_count = byte_count + ${data.length}
    WHERE collection_id = ${collectionId} AND job_id = ${jobId}`);
}

export async function finishExport(db: Queryable, collectionId: string, jobId: number): Promise<void> {
  await db.query(
    sql`UPDATE interaction_exports SET complete = true WHERE collection_id = ${collectionId} AND job_id = ${jobId}`,
  );
}

export interface ExportRow {
  format: string;
  row_count: number;
  byte_count: number;
  complete: boolean;
  chunks: number;
}

export async function findExport(db: Queryable, collectionId: string, jobId: number): Promise<ExportRow | undefined> {
  const { rows } = await db.query<ExportRow>(sql`
    SELECT format, row_count, byte_count, complete,
      (SELECT count(*)::int FROM interaction_export_chunks c WHERE c.collection_id = x.collection_id AND c.job_id = x.job_id) AS chunks
    FROM interaction_exports x WHERE collection_id = ${collectionId} AND job_id = ${jobId}`);
  return rows[0];
}

export async function readExportChunk(
  db: Queryable,
  collectionId: string,
  jobId: number,
  seq: number,
): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ data: Uint8Array }>(sql`
    SELECT data FROM interaction_export_chunks WHERE collection_id = ${collectionId} AND job_id = ${jobId} AND seq = ${seq}`);
  return rows[0] ? Buffer.from(rows[0].data) : undefined;
}
