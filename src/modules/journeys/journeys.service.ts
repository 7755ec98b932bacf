/**
 * Journeys: stored, listed, changed and removed, with the progress kept for each
 * (journeys.progress.ts); their analytics are journeys.reports.ts. A journey's steps are
 * `data.steps` in order; a step is completed through interaction events mapped to it
 * (`config.interactionId` / `.outcome` on the step, or a request's `stepMappings`). A recipient
 * enters the journey at its first event carrying `journeyId` in the period, enters step 1 then
 * and step k on completing step k−1, and completes a step at its first event mapped to it at or
 * after entering it, in the period; written out with a worked example in docs/journeys.md
 * (Semantics).
 */
import type { Analytics, Db } from '../../db/index.ts';
import { notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { isObject, paging } from '../../platform/schemas.ts';
import type { JobQueue } from '../../platform/tasks.ts';
import { FunnelsService } from './funnels.service.ts';
import type { MilestonePublisher } from './journeys.milestones.ts';
import * as progressRepo from './journeys.progress.repository.ts';
import { followSteps, queueRebuild } from './journeys.progress.ts';
import { JourneyReports } from './journeys.reports.ts';
import * as repo from './journeys.repository.ts';
import type { CreateJourneyBody, JourneyRecord, ListJourneysQuery, UpdateJourneyBody } from './journeys.schema.ts';
import { keptProperties, keptSteps } from './journeys.steps.ts';

export function toJourney(r: repo.JourneyRow): JourneyRecord {
  const j: JourneyRecord = {
    id: r.id,
    collectionId: r.collection_id,
    name: r.name,
    active: r.active,
    journeyType: r.journey_type,
    data: r.data,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
  if (r.app_id !== null) j.appId = r.app_id;
  const d = r.data;
  if (isObject(d.display)) j.display = d.display;
  for (const k of ['title', 'description', 'icon', 'color'] as const) if (typeof d[k] === 'string') j[k] = d[k];
  if (Array.isArray(d.steps)) j.steps = d.steps.filter(isObject);
  if (Array.isArray(d.triggers)) j.triggers = d.triggers.filter(isObject);
  if (Array.isArray(d.entryRules)) j.entryRules = d.entryRules;
  if (Array.isArray(d.exitRules)) j.exitRules = d.exitRules;
  if (isObject(d.metadata)) j.metadata = d.metadata;
  return j;
}

export class JourneysService {
  /** The funnel options' path (issue 29): windows, ordering, exclusions, breakdowns, trends, people. */
  readonly funnels: FunnelsService;
  /** The analytics of journeys, and ad-hoc funnels (journeys.reports.ts). */
  readonly reports: JourneyReports;

  constructor(
    private readonly db: Db,
    /**
     * Funnel queries join and sort many rows: the platform's analytics transaction (a larger
     * work_mem, shared with the interaction queries over the same events).
     */
    readonly analytics: Analytics,
    /** Where the progress rebuilds go: the job engine (modules/jobs). */
    private readonly jobs: JobQueue,
    private readonly log: { info(o: object, msg: string): void; warn(o: object, msg: string): void },
    /** Publishes the milestones progress notes (in processes that run jobs). */
    readonly milestones: MilestonePublisher,
  ) {
    this.funnels = new FunnelsService(analytics);
    this.reports = new JourneyReports(db, analytics, this.funnels);
  }

  async create(collectionId: string, body: CreateJourneyBody): Promise<JourneyRecord> {
    const data = body.data ?? {};
    const props = keptProperties(data);
    const row = await this.db.transaction(async (tx) => {
      const created = await repo.insertJourney(tx, collectionId, {
        id: newId('jrn'),
        appId: body.appId ?? null,
        name: body.name,
        active: body.active ?? true,
        journeyType: body.journeyType,
        data,
      });
      await followSteps(tx, this.jobs, collectionId, created.id, keptSteps(data), props);
      return created;
    });
    return toJourney(row);
  }

  /**
   * Starts keeping progress for journeys stored before it was kept (run at start in worker
   * processes). A journey whose steps cannot be kept gets a state without steps, so it is not
   * looked at again.
   */
  async adoptJourneys(): Promise<number> {
    let adopted = 0;
    try {
      for (;;) {
        const page = await progressRepo.journeysWithoutProgress(this.db, 100);
        let failed = 0;
        for (const j of page) {
          // One journey's failure (deleted meanwhile, say) does not keep the others unadopted.
          try {
            await this.db.transaction((tx) =>
              followSteps(tx, this.jobs, j.collection_id, j.id, keptSteps(j.data), keptProperties(j.data, true)),
            );
            adopted++;
          } catch (err) {
            failed++;
            this.log.warn(
              { err, collectionId: j.collection_id, journeyId: j.id },
              'journeys: adopting a journey failed',
            );
          }
        }
        // A failed one would come back in the next page: the next start tries it again.
        if (page.length < 100 || failed > 0) break;
      }
      if (adopted > 0) this.log.info({ adopted }, 'journeys: progress is now kept for journeys stored before it was');
    } catch (err) {
      // The next start tries again; until then those journeys' analytics read the events.
      this.log.warn({ err, adopted }, 'journeys: adopting stored journeys failed');
    }
    return adopted;
  }

  async list(collectionId: string, q: ListJourneysQuery) {
    const { limit, offset } = paging(q, 100);
    const rows = await repo.listJourneys(this.db, collectionId, { ...q, limit, offset });
    return { items: rows.map(toJourney), limit, offset };
  }

  async get(collectionId: string, id: string): Promise<JourneyRecord> {
    return toJourney(await this.row(collectionId, id));
  }

  async update(collectionId: string, id: string, body: UpdateJourneyBody): Promise<JourneyRecord> {
    if (body.data !== undefined) keptProperties(body.data);
    const row = await this.db.transaction(async (tx) => {
      const updated = await repo.updateJourney(tx, collectionId, id, body);
      if (updated) {
        await followSteps(tx, this.jobs, collectionId, id, keptSteps(updated.data), keptProperties(updated.data, true));
      }
      return updated;
    });
    if (!row) throw notFound('Journey');
    return toJourney(row);
  }

  async remove(collectionId: string, id: string): Promise<{ success: boolean; id: string }> {
    const deleted = await this.db.transaction(async (tx) => {
      // The state goes with the journey (foreign key); its rows go in the background.
      const kept = await progressRepo.findProgressState(tx, collectionId, id);
      if (!(await repo.deleteJourney(tx, collectionId, id))) return false;
      if (kept) await queueRebuild(tx, this.jobs, collectionId, id);
      return true;
    });
    if (!deleted) throw notFound('Journey');
    return { success: true, id };
  }

  private async row(collectionId: string, id: string): Promise<repo.JourneyRow> {
    const row = await repo.findJourney(this.db, collectionId, id);
    if (!row) throw notFound('Journey');
    return row;
  }
}
