/**
 * SQL of journey milestones (migration 0207): noted by the progress triggers, published by
 * journeys.milestones.ts.
 */
import sql from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import type { MilestoneRow } from './journeys.events.ts';

/**
 * Collections with milestones still to publish, of every collection: the publisher's safety
 * net after a missed NOTIFY (the worker was down when they were noted) looks across tenants,
 * as `journeysWithoutProgress` does.
 */
export async function collectionsWithPendingMilestones(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ collection_id: string }>(sql`
    WITH RECURSIVE c AS (
      (SELECT collection_id FROM journey_milestones WHERE published_at IS NULL ORDER BY collection_id LIMIT 1)
      UNION ALL
      SELECT (SELECT m.collection_id FROM journey_milestones m
              WHERE m.published_at IS NULL AND m.collection_id > c.collection_id ORDER BY m.collection_id LIMIT 1)
      FROM c WHERE c.collection_id IS NOT NULL
    )
    SELECT collection_id FROM c WHERE collection_id IS NOT NULL LIMIT ${limit}`);
  return rows.map((r) => r.collection_id);
}

/**
 * Takes up to `limit` of a collection's unpublished milestones, in the order noted, locked for
 * the caller's transaction (another publisher skips them), with the journey's name and app.
 */
export async function takeMilestones(tx: Queryable, collectionId: string, limit: number): Promise<MilestoneRow[]> {
  const { rows } = await tx.query<MilestoneRow>(sql`
    SELECT m.seq, m.journey_id, m.id_field, m.rid, m.step_id, m.step, m.step_name, m.n_steps, m.entered_at,
      m.completed_at, m.event_id, j.name AS journey_name, j.app_id
    FROM journey_milestones m
    LEFT JOIN journeys j ON j.collection_id = m.collection_id AND j.id = m.journey_id
    WHERE m.collection_id = ${collectionId} AND m.published_at IS NULL
    ORDER BY m.seq LIMIT ${limit}
    FOR UPDATE OF m SKIP LOCKED`);
  return rows;
}

export async function markMilestonesPublished(tx: Queryable, collectionId: string, seqs: number[]): Promise<void> {
  await tx.query(sql`
    UPDATE journey_milestones SET published_at = now()
    WHERE collection_id = ${collectionId} AND published_at IS NULL AND seq = ANY(${seqs}::bigint[])`);
}

/** A deleted journey's milestones (the progress task removes them with its rows). */
export async function dropMilestones(db: Queryable, collectionId: string, journeyId: string): Promise<number> {
  const { rowCount } = await db.query(
    sql`DELETE FROM journey_milestones WHERE collection_id = ${collectionId} AND journey_id = ${journeyId}`,
  );
  return rowCount;
}
