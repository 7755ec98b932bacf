/**
 * Event reads: admin queries, counts by outcome (from the maintained counters where they can
 * answer, which `X-Analytics-Source` says), aggregates, a user's own events, published
 * summaries, and the download of an export's file.
 */
import type { Analytics, Db, ReadSignal } from '../../db/index.ts';
import type { Analysed } from '../../platform/analytics.ts';
import type { Caller } from '../../platform/auth.ts';
import { notFound, validationFailed } from '../../platform/errors.ts';
import { type ExportDownload, openExport } from './interactions.export.ts';
import { enabled, refusal } from './interactions.permissions.ts';
import { toEventRow } from './interactions.present.ts';
import * as repo from './interactions.reads.repository.ts';
import type {
  AdminInteractionsAggregateRequest,
  AdminInteractionsAggregateResponse,
  AdminInteractionsAggregateRow,
  AdminInteractionsCountsByOutcomeRequest,
  AdminInteractionsQueryRequest,
  InteractionEventRow,
  OutcomeCount,
  PublicInteractionsByUserRequest,
  PublicInteractionsCountsByOutcomeRequest,
} from './interactions.schema.ts';
import type { InteractionTypes } from './interactions.types.service.ts';

export class InteractionReads {
  constructor(
    private readonly db: Db,
    /** Aggregates and dedupes sort many rows: the platform's transaction with a larger work_mem. */
    private readonly analytics: Analytics,
    private readonly types: InteractionTypes,
  ) {}

  /** A finished export file of this collection (the `interactions.export` task writes it). */
  openExport(collectionId: string, jobId: number): Promise<ExportDownload> {
    return openExport(this.db, collectionId, jobId);
  }

  async query(collectionId: string, q: AdminInteractionsQueryRequest): Promise<InteractionEventRow[]> {
    // Lists and counts read a replica when one may serve the collection (db/client.ts, `Db.read`).
    const rows = await this.db.read(collectionId, (r) =>
      repo.queryEvents(r, collectionId, {
        ...q,
        limit: q.limit ?? 100,
        order: q.order ?? 'DESC',
        latestPerEventId: q.latestPerEventId ?? false,
      }),
    );
    const events = rows.map(toEventRow);
    if (q.include?.includes('interaction')) {
      const byId = await this.types.recordsById(
        collectionId,
        rows.map((r) => r.interaction_id),
      );
      // A removed type is left out: the row then has no `interaction`.
      for (const e of events) {
        const type = byId.get(e.interactionId);
        if (type) e.interaction = type;
      }
    }
    return events;
  }

  /**
   * Plain counts read the hourly rollup where the filters allow (the repository decides).
   * dedupeLatest counts by interaction and window read the maintained latest events
   * (interaction_latest) when they can answer, and otherwise sort the window's events.
   */
  async countsByOutcome(
    collectionId: string,
    q: AdminInteractionsCountsByOutcomeRequest,
    signal?: ReadSignal,
  ): Promise<Analysed<OutcomeCount[]>> {
    const filter = {
      ...q,
      limit: q.limit ?? 100,
      dedupeLatest: q.dedupeLatest ?? false,
      idField: q.idField ?? 'userId',
    };
    // The rollup's answer is a few rows: a plain read. Counts the rollup cannot give (filters
    // it does not keep) read the events: in an analytics slot, bounded, as every such read.
    if (!filter.dedupeLatest && repo.hourlyRollupAnswers(filter)) {
      const answer = await this.db.read(collectionId, (r) => repo.countsByOutcome(r, collectionId, filter));
      return { answer, source: 'maintained' };
    }
    if (filter.dedupeLatest && q.appId === undefined && q.scope === undefined) {
      const answer = await repo.latestCountsByOutcome(this.db, collectionId, filter);
      if (answer) return { answer, source: 'maintained' };
    }
    const answer = await this.analytics.read(
      collectionId,
      (tx) => repo.countsByOutcome(tx, collectionId, filter),
      signal,
    );
    return { answer, source: 'events' };
  }

  /** `field` and `ops` come from the top level, else from `aggregate` (the top-level ones win). */
  async aggregate(
    collectionId: string,
    q: AdminInteractionsAggregateRequest,
    signal?: ReadSignal,
  ): Promise<AdminInteractionsAggregateResponse> {
    const field = q.field ?? q.aggregate.field;
    const ops = q.ops ?? q.aggregate.ops;
    if (field === undefined || ops === undefined) {
      throw validationFailed([
        { path: field === undefined ? 'body.field' : 'body.ops', message: 'is required (here or in aggregate)' },
      ]);
    }
    const dedupeLatest = q.dedupeLatest ?? false;
    const rows = await this.analytics.read(
      collectionId,
      (tx) =>
        repo.aggregate(tx, collectionId, {
          ...q,
          field,
          ops,
          limit: q.limit ?? 100,
          dedupeLatest,
          idField: q.idField ?? 'userId',
        }),
      signal,
    );
    const wanted = new Set(ops);
    return {
      groupBy: q.groupBy,
      aggregate: q.aggregate,
      field,
      ops,
      dedupeLatest,
      rows: rows.map((r) => {
        const row: AdminInteractionsAggregateRow = {
          groupValue: r.groupValue as string | null,
          eventCount: r.eventCount as number,
        };
        // An op asked for is present when it has a value: count always, the others only when
        // the group holds a number (SQL answers null over no numbers; the field is then absent).
        for (const op of ['count', 'sum', 'avg', 'min', 'max'] as const) {
          if (wanted.has(op) && r[op] !== null) row[op] = r[op] as number;
        }
        return row;
      }),
    };
  }

  async byUser(
    collectionId: string,
    caller: Caller,
    q: PublicInteractionsByUserRequest,
  ): Promise<InteractionEventRow[]> {
    if (caller.role !== 'user') throw refusal('auth_required', 'A user token is required to read one’s own events');
    if (q.interactionId !== undefined) {
      const type = await this.types.find(collectionId, q.interactionId);
      if (!type || !enabled(type.permissions)) throw notFound('Interaction type');
      if (type.permissions.allowOwnRead !== true) {
        throw refusal('own_read_not_allowed', 'This interaction type does not allow users to read their events');
      }
    }
    const rows = await this.db.read(collectionId, (r) =>
      repo.queryOwnEvents(r, collectionId, caller.userId, { ...q, limit: q.limit ?? 100 }),
    );
    return rows.map(toEventRow);
  }

  async publicCounts(
    collectionId: string,
    caller: Caller,
    q: PublicInteractionsCountsByOutcomeRequest,
  ): Promise<OutcomeCount[]> {
    const type = await this.types.find(collectionId, q.interactionId);
    if (!type || !enabled(type.permissions) || type.app_id !== q.appId) throw notFound('Interaction type');
    const p = type.permissions;
    const allowed =
      p.allowPublicSummary === true || (p.allowAuthenticatedSummary === true && caller.role !== 'anonymous');
    if (!allowed) {
      if (p.allowAuthenticatedSummary === true) {
        throw refusal('auth_required', 'A user token is required to read this summary');
      }
      throw refusal('summary_not_allowed', 'This interaction type does not publish a summary');
    }
    return this.db.read(collectionId, (r) =>
      repo.countsByOutcome(r, collectionId, {
        ...q,
        limit: q.limit ?? 100,
        dedupeLatest: false,
        idField: 'userId',
      }),
    );
  }
}
