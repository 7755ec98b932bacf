/**
 * Journeys that begin with a short link's clicks (issue 28, attribution): the first step's
 * interaction is the pseudo-interaction `link:<linkId>` (docs/journeys.md, "A journey from a
 * link's clicks"), so a funnel runs from a click to a conversion.
 *
 * - recipient: one click of the link in the period (a click is a visit; the same person
 *   clicking twice is two recipients, as the link's click count says);
 * - step 1 (the link step) is entered and completed at the click;
 * - the click's identity (by idField) is that of its first event carrying its click id
 *   (`clickId`, given to the destination as `pl_cid` when the link tracks conversions), at or
 *   after the click;
 * - step k > 1 is completed by the first event mapped to it, at or after entering it, in the
 *   period, that carries the click id or comes from the click's identity.
 * A click without a click id (the link did not track conversions then) enters and completes
 * step 1 and goes no further. `link:` steps after the first are refused (a click has no
 * identity of its own to follow from an earlier step).
 *
 * Reads link_clicks (the links module's; its columns collection_id, link_id, id, clicked_at and
 * click_id are read as that module documents them) and interaction_events.
 */
import sql, { join, raw, type Sql } from 'sql-template-tag';
import type { Queryable } from '../../db/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { type FunnelInput, type StepCounts, stepCountsOf } from './journeys.repository.ts';

export const LINK_STEP_PREFIX = 'link:';

/** The link of a `link:<linkId>` step, or undefined for an interaction step. */
export const linkOfStep = (interactionId: string): string | undefined =>
  interactionId.startsWith(LINK_STEP_PREFIX) ? interactionId.slice(LINK_STEP_PREFIX.length) : undefined;

/** Whether the steps begin with a link's clicks; a link step anywhere else is a 400. */
export function beginsWithLink(steps: { stepId: string; interactionId: string }[]): boolean {
  steps.forEach((s, k) => {
    if (k > 0 && linkOfStep(s.interactionId) !== undefined) {
      throw badRequest(`Step "${s.stepId}" is a link step: only the first step of a journey may be one`, {
        stepId: s.stepId,
      });
    }
  });
  return steps.length > 0 && linkOfStep(steps[0].interactionId) !== undefined;
}

function linkFunnelCtes(collectionId: string, f: FunnelInput): Sql {
  const linkId = linkOfStep(f.steps[0].interactionId) ?? '';
  const rid = raw(f.idField === 'contactId' ? 'contact_id' : 'user_id');
  const start = f.start ? sql`AND clicked_at >= ${f.start}::timestamptz` : sql``;
  const end = f.end ? sql`AND clicked_at < ${f.end}::timestamptz` : sql``;
  const xEnd = f.end ? sql`AND x.occurred_at < ${f.end}::timestamptz` : sql``;
  const ctes: Sql[] = [
    sql`entry AS (
      SELECT id AS cid, click_id, clicked_at AS t FROM link_clicks
      WHERE collection_id = ${collectionId} AND link_id = ${linkId} ${start} ${end})`,
    sql`ident AS (
      SELECT e.cid, (SELECT x.${rid} FROM interaction_events x
        WHERE x.collection_id = ${collectionId} AND x.click_id = e.click_id AND x.occurred_at >= e.t
          AND x.deleted_at IS NULL AND x.${rid} IS NOT NULL ${xEnd}
        ORDER BY x.occurred_at, x.id LIMIT 1) AS rid
      FROM entry e WHERE e.click_id IS NOT NULL)`,
    sql`s0 AS (SELECT e.cid, e.click_id, i.rid, e.t AS entered, e.t AS completed
      FROM entry e LEFT JOIN ident i ON i.cid = e.cid)`,
  ];
  f.steps.forEach((step, k) => {
    if (k === 0) return;
    const mapped = sql`x.collection_id = ${collectionId} AND x.interaction_id = ${step.interactionId}
      AND x.outcome = ${step.outcome} AND x.deleted_at IS NULL AND x.occurred_at >= p.entered ${xEnd}`;
    // Two indexed looks per recipient (by click id, by identity), the earlier one wins.
    ctes.push(sql`${raw(`s${k}`)} AS (
      SELECT p.cid, p.click_id, p.rid, p.entered,
        least(
          (SELECT min(x.occurred_at) FROM interaction_events x WHERE ${mapped} AND x.click_id = p.click_id),
          (SELECT min(x.occurred_at) FROM interaction_events x WHERE ${mapped} AND x.${rid} = p.rid)
        ) AS completed
      FROM (SELECT cid, click_id, rid, completed AS entered FROM ${raw(`s${k - 1}`)}
        WHERE completed IS NOT NULL AND click_id IS NOT NULL) p)`);
  });
  return sql`WITH ${join(ctes, ',\n')}`;
}

/** The funnel counts of a journey whose first step is `link:<linkId>` (see the top). */
export async function linkFunnelCounts(
  db: Queryable,
  collectionId: string,
  f: FunnelInput,
): Promise<{ totalEntered: number; steps: StepCounts[] }> {
  const parts = stepCountsOf(f.steps.length);
  const { rows } = await db.query<StepCounts>(
    sql`${linkFunnelCtes(collectionId, f)} ${join(parts, ' UNION ALL ')} ORDER BY idx`,
  );
  return { totalEntered: rows[0]?.entered ?? 0, steps: rows };
}
