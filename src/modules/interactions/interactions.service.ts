/**
 * Interaction types and events: the rules. Admins define types and append events freely;
 * public callers submit events under the type's permissions, and read their own events or
 * summaries only where the type allows it. A refusal always names its reason in
 * `details.reason` (see docs/interactions.md for the list).
 */
import { type Db, inAnalyticsTransaction, type Queryable } from '../../db/index.ts';
import type { Caller } from '../../platform/auth.ts';
import { AppError, badRequest, conflict, notFound } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { type ExportDownload, openExport } from './interactions.export.ts';
import { toEventRow } from './interactions.present.ts';
import * as repo from './interactions.repository.ts';
import type {
  AdminInteractionsAggregateRequest,
  AdminInteractionsAggregateResponse,
  AdminInteractionsCountsByOutcomeRequest,
  AdminInteractionsQueryRequest,
  AppendInteractionBody,
  CreateInteractionTypeBody,
  InteractionEventRow,
  InteractionPermissions,
  InteractionTypeRecord,
  ListTypesQuery,
  OutcomeCount,
  PublicInteractionsByUserRequest,
  PublicInteractionsCountsByOutcomeRequest,
  SubmitInteractionBody,
  UpdateEventBody,
  UpdateInteractionTypeBody,
} from './interactions.schema.ts';
import type { InteractionsSettings } from './interactions.settings.ts';

/** Why a public call was refused; stable codes clients can branch on. */
export type RefusalReason =
  | 'interaction_disabled'
  | 'public_submit_not_allowed'
  | 'auth_required'
  | 'anonymous_submit_not_allowed'
  | 'origin_not_allowed'
  | 'not_started'
  | 'ended'
  | 'identity_mismatch'
  | 'already_submitted'
  | 'own_read_not_allowed'
  | 'summary_not_allowed';

export function refusal(reason: RefusalReason, message: string): AppError {
  if (reason === 'already_submitted') return new AppError(409, 'CONFLICT', message, { reason, error: 'FORBIDDEN' });
  const code = reason === 'auth_required' || reason === 'anonymous_submit_not_allowed' ? 'UNAUTHORIZED' : 'FORBIDDEN';
  return new AppError(401, code, message, { reason, error: 'FORBIDDEN' });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function toTypeRecord(r: repo.TypeRow): InteractionTypeRecord {
  const rec: InteractionTypeRecord = {
    id: r.id,
    collectionId: r.collection_id,
    appId: r.app_id,
    permissions: r.permissions,
    data: r.data,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
  // Presentation fields (display, scopes, interactionType, effects) are stored inside `data`
  // and shown at the top level when present (docs/interactions.md, Types).
  if (isObject(r.data.display)) rec.display = r.data.display;
  if (isObject(r.data.scopes)) rec.scopes = r.data.scopes;
  if (typeof r.data.interactionType === 'string') rec.interactionType = r.data.interactionType;
  if (Array.isArray(r.data.effects)) rec.effects = r.data.effects.filter(isObject);
  return rec;
}

const enabled = (p: InteractionPermissions) => p.enabled !== false;

function checkWindow(p: InteractionPermissions) {
  if (p.startAt && p.endAt && Date.parse(p.startAt) >= Date.parse(p.endAt)) {
    throw badRequest('permissions.startAt must be before permissions.endAt');
  }
}

/** `https://*.example.com` matches any subdomain; `*` matches every origin. */
export function originAllowed(allowed: string[], origin: string | undefined): boolean {
  if (allowed.length === 0) return true;
  if (allowed.includes('*')) return true;
  if (!origin) return false;
  const o = origin.toLowerCase().replace(/\/+$/, '');
  return allowed.some((a) => {
    const pattern = a.toLowerCase().replace(/\/+$/, '');
    if (!pattern.includes('*')) return pattern === o;
    const re = new RegExp(
      `^${pattern
        .split('*')
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]+')}$`,
    );
    return re.test(o);
  });
}

export class InteractionsService {
  constructor(
    private readonly db: Db,
    private readonly settings: InteractionsSettings,
  ) {}

  /** A finished export file of this collection (the `interactions.export` task writes it). */
  openExport(collectionId: string, jobId: number): Promise<ExportDownload> {
    return openExport(this.db, collectionId, jobId);
  }

  /** Runs an analytics query in its own transaction with a larger work_mem. */
  private analytics<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    return inAnalyticsTransaction(this.db, this.settings.analyticsWorkMemMb, fn);
  }

  // ------------------------------------------------------------------------------ types
  async createType(collectionId: string, body: CreateInteractionTypeBody): Promise<InteractionTypeRecord> {
    const permissions = body.permissions ?? {};
    checkWindow(permissions);
    const row = await repo.insertType(this.db, collectionId, {
      id: body.id,
      appId: body.appId,
      permissions,
      data: body.data ?? {},
    });
    if (!row) throw conflict(`An interaction type with id "${body.id}" already exists`);
    return toTypeRecord(row);
  }

  async listTypes(collectionId: string, q: ListTypesQuery, publicOnly: boolean) {
    const limit = q.limit ?? 100;
    const offset = q.offset ?? 0;
    const rows = await repo.listTypes(this.db, collectionId, {
      appId: q.appId,
      limit,
      offset,
      enabledOnly: publicOnly,
    });
    return { items: rows.map(toTypeRecord), limit, offset };
  }

  async getType(collectionId: string, id: string, publicOnly: boolean): Promise<InteractionTypeRecord> {
    const row = await repo.findType(this.db, collectionId, id);
    if (!row || (publicOnly && !enabled(row.permissions))) throw notFound('Interaction type');
    return toTypeRecord(row);
  }

  async updateType(collectionId: string, id: string, body: UpdateInteractionTypeBody): Promise<InteractionTypeRecord> {
    if (body.permissions) checkWindow(body.permissions);
    const row = await repo.updateType(this.db, collectionId, id, body);
    if (!row) throw notFound('Interaction type');
    return toTypeRecord(row);
  }

  /** Events of a removed type are kept (history); new ones for its id are refused. */
  async removeType(collectionId: string, id: string): Promise<{ success: boolean; id: string }> {
    if (!(await repo.deleteType(this.db, collectionId, id))) throw notFound('Interaction type');
    return { success: true, id };
  }

  private async typeForEvent(collectionId: string, interactionId: string, appId?: string): Promise<repo.TypeRow> {
    const type = await repo.findType(this.db, collectionId, interactionId);
    if (!type) throw badRequest(`Interaction type "${interactionId}" is not defined in this collection`);
    if (appId !== undefined && appId !== type.app_id) {
      throw badRequest(`appId "${appId}" does not match the interaction type's appId "${type.app_id}"`);
    }
    return type;
  }

  // ------------------------------------------------------------------------------ events
  /** Admin append: no permission checks, any identity, optional backdated timestamp. */
  async append(collectionId: string, body: AppendInteractionBody): Promise<{ success: boolean; eventId: string }> {
    if (body.userId === undefined && body.contactId === undefined) {
      throw badRequest('userId or contactId is required');
    }
    const type = await this.typeForEvent(collectionId, body.interactionId, body.appId);
    const eventId = body.eventId ?? newId('evt');
    await repo.insertEvent(this.db, collectionId, {
      eventId,
      interactionId: type.id,
      appId: type.app_id,
      occurredAt: body.timestamp ? new Date(body.timestamp) : null,
      userId: body.userId ?? null,
      contactId: body.contactId ?? null,
      anonId: body.anonId ?? null,
      outcome: body.outcome ?? null,
      scope: body.scope ?? null,
      broadcastId: body.broadcastId ?? null,
      journeyId: body.journeyId ?? null,
      metadata: body.metadata ?? null,
      source: 'admin',
    });
    return { success: true, eventId };
  }

  /**
   * Public submit. Checks run in a fixed order so the reason given is the first rule broken:
   * enabled, allowPublicSubmit, authentication, origin, time window, identity, uniqueness.
   */
  async submit(
    collectionId: string,
    caller: Caller,
    body: SubmitInteractionBody,
    origin: string | undefined,
    now = new Date(),
  ): Promise<{ success: boolean; eventId: string }> {
    const type = await this.typeForEvent(collectionId, body.interactionId, body.appId);
    const p = type.permissions;
    if (!enabled(p)) throw refusal('interaction_disabled', 'This interaction type is disabled');
    if (p.allowPublicSubmit !== true) {
      throw refusal('public_submit_not_allowed', 'This interaction type does not accept public submits');
    }
    if (caller.role === 'anonymous') {
      if (p.requireAuth) throw refusal('auth_required', 'This interaction type requires a user token');
      if (p.allowAnonymousSubmit !== true) {
        throw refusal('anonymous_submit_not_allowed', 'This interaction type does not accept anonymous submits');
      }
    }
    if (!originAllowed(p.allowedOrigins ?? [], origin)) {
      throw refusal('origin_not_allowed', `Origin ${origin ?? '(none)'} may not submit this interaction`);
    }
    if (p.startAt && now.getTime() < Date.parse(p.startAt)) {
      throw refusal('not_started', `Submits open at ${p.startAt}`);
    }
    if (p.endAt && now.getTime() >= Date.parse(p.endAt)) throw refusal('ended', `Submits closed at ${p.endAt}`);

    let userId: string | null = null;
    let contactId: string | null = null;
    if (caller.role === 'user') {
      if ((body.userId && body.userId !== caller.userId) || (body.contactId && body.contactId !== caller.contactId)) {
        throw refusal('identity_mismatch', 'userId and contactId are taken from the user token');
      }
      userId = caller.userId;
      contactId = caller.contactId;
    } else if (caller.role === 'admin') {
      userId = body.userId ?? null;
      contactId = body.contactId ?? null;
    } else if (body.userId || body.contactId) {
      throw refusal('identity_mismatch', 'An anonymous submit cannot name a user; send a user token');
    }
    const anonId = body.anonId ?? null;
    if (p.uniquePerAnonId && userId === null && anonId === null) {
      throw badRequest('anonId is required: this interaction type allows one event per anonymous id');
    }

    // uniqueOutcome narrows uniqueness to events with that outcome: other outcomes are free.
    const uniqueOutcome = p.uniqueOutcome ?? null;
    const guarded = uniqueOutcome === null || (body.outcome ?? null) === uniqueOutcome;
    const checks: { column: 'user_id' | 'anon_id'; value: string; windowSeconds?: number }[] = [];
    if (guarded && p.uniquePerUser && userId !== null) {
      checks.push({ column: 'user_id', value: userId, windowSeconds: p.uniquePerUserWindowSeconds });
    }
    if (guarded && p.uniquePerAnonId && anonId !== null && userId === null) {
      checks.push({ column: 'anon_id', value: anonId, windowSeconds: p.uniquePerAnonIdWindowSeconds });
    }

    const eventId = newId('evt');
    const event: repo.NewEvent = {
      eventId,
      interactionId: type.id,
      appId: type.app_id,
      occurredAt: now,
      userId,
      contactId,
      anonId,
      outcome: body.outcome ?? null,
      scope: body.scope ?? null,
      broadcastId: body.broadcastId ?? null,
      journeyId: body.journeyId ?? null,
      metadata: body.metadata ?? null,
      source: 'public',
    };
    if (checks.length === 0) {
      await repo.insertEvent(this.db, collectionId, event);
      return { success: true, eventId };
    }
    await this.db.transaction(async (tx) => {
      for (const c of checks) await repo.lockUniqueness(tx, collectionId, `${type.id}:${c.column}:${c.value}`);
      for (const c of checks) {
        const since = c.windowSeconds ? new Date(now.getTime() - c.windowSeconds * 1000) : null;
        const exists = await repo.existsForIdentity(tx, collectionId, {
          interactionId: type.id,
          column: c.column,
          value: c.value,
          since,
          outcome: uniqueOutcome,
        });
        if (exists) {
          const who = c.column === 'user_id' ? 'this user' : 'this anonymous id';
          const window = c.windowSeconds ? ` in the last ${c.windowSeconds} s` : '';
          throw refusal('already_submitted', `An event of this interaction already exists for ${who}${window}`);
        }
      }
      await repo.insertEvent(tx, collectionId, event);
    });
    return { success: true, eventId };
  }

  /** Changes the latest version of an event, or marks every version deleted / restored. */
  async updateEvent(collectionId: string, eventId: string, body: UpdateEventBody): Promise<InteractionEventRow> {
    return this.db.transaction(async (tx) => {
      const latest = await repo.findLatestVersion(tx, collectionId, eventId);
      if (!latest) throw notFound('Interaction event');
      const { deleted, ...fields } = body;
      if (Object.keys(fields).length > 0) await repo.updateEventVersion(tx, collectionId, latest.id, fields);
      if (deleted !== undefined) await repo.setEventDeleted(tx, collectionId, eventId, deleted);
      const after = await repo.findLatestVersion(tx, collectionId, eventId);
      return toEventRow(after!);
    });
  }

  // ------------------------------------------------------------------------------ reads
  async query(collectionId: string, q: AdminInteractionsQueryRequest): Promise<InteractionEventRow[]> {
    const rows = await repo.queryEvents(this.db, collectionId, {
      ...q,
      limit: q.limit ?? 100,
      order: q.order ?? 'DESC',
      latestPerEventId: q.latestPerEventId ?? false,
    });
    const events = rows.map(toEventRow);
    if (q.include?.includes('interaction')) {
      const types = await repo.findTypes(this.db, collectionId, [...new Set(rows.map((r) => r.interaction_id))]);
      const byId = new Map(types.map((t) => [t.id, toTypeRecord(t)]));
      for (const e of events) e.interaction = byId.get(e.interactionId) ?? null;
    }
    return events;
  }

  async countsByOutcome(collectionId: string, q: AdminInteractionsCountsByOutcomeRequest): Promise<OutcomeCount[]> {
    const filter = {
      ...q,
      limit: q.limit ?? 100,
      dedupeLatest: q.dedupeLatest ?? false,
      idField: q.idField ?? 'userId',
    };
    if (!filter.dedupeLatest) return repo.countsByOutcome(this.db, collectionId, filter);
    return this.analytics((tx) => repo.countsByOutcome(tx, collectionId, filter));
  }

  async aggregate(
    collectionId: string,
    q: AdminInteractionsAggregateRequest,
  ): Promise<AdminInteractionsAggregateResponse> {
    const dedupeLatest = q.dedupeLatest ?? false;
    const rows = await this.analytics((tx) =>
      repo.aggregate(tx, collectionId, { ...q, limit: q.limit ?? 100, dedupeLatest, idField: q.idField ?? 'userId' }),
    );
    const wanted = new Set(q.ops);
    return {
      groupBy: q.groupBy,
      aggregate: q.aggregate,
      field: q.field,
      ops: q.ops,
      dedupeLatest,
      rows: rows.map((r) => {
        const row: AdminInteractionsAggregateResponse['rows'][number] = {
          groupValue: r.groupValue as string | null,
          eventCount: r.eventCount as number,
        };
        for (const op of ['count', 'sum', 'avg', 'min', 'max'] as const) {
          if (wanted.has(op)) (row as Record<string, unknown>)[op] = r[op];
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
      const type = await repo.findType(this.db, collectionId, q.interactionId);
      if (!type || !enabled(type.permissions)) throw notFound('Interaction type');
      if (type.permissions.allowOwnRead !== true) {
        throw refusal('own_read_not_allowed', 'This interaction type does not allow users to read their events');
      }
    }
    const rows = await repo.queryOwnEvents(this.db, collectionId, caller.userId, { ...q, limit: q.limit ?? 100 });
    return rows.map(toEventRow);
  }

  async publicCounts(
    collectionId: string,
    caller: Caller,
    q: PublicInteractionsCountsByOutcomeRequest,
  ): Promise<OutcomeCount[]> {
    const type = await repo.findType(this.db, collectionId, q.interactionId);
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
    return repo.countsByOutcome(this.db, collectionId, {
      ...q,
      limit: q.limit ?? 100,
      dedupeLatest: false,
      idField: 'userId',
    });
  }
}
