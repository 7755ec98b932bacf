/**
 * Interaction types and events: the rules. Admins define types and append events freely;
 * public callers submit events under the type's permissions, and read their own events or
 * summaries only where the type allows it. A refusal always names its reason, in
 * `details.reason` and as `reason` at the top level of the error body (see
 * docs/interactions.md for the list).
 */
import type { FastifyBaseLogger } from 'fastify';
import { type Db, inAnalyticsTransaction, type Queryable, retryOnConflict } from '../../db/index.ts';
import type { Analysed } from '../../platform/analytics.ts';
import type { Caller } from '../../platform/auth.ts';
import { AppError, badRequest, conflict, notFound, refused, validationFailed } from '../../platform/errors.ts';
import type { EventPublisher, NewEvent } from '../../platform/events.ts';
import { newId } from '../../platform/ids.ts';
import type { TaskDefinition } from '../../platform/tasks.ts';
import { checkTypeData, type EffectRunner, effectJobs, ownMilestones, storedEffects } from './interactions.effects.ts';
import { milestoneEvents, recordedEvent } from './interactions.events.ts';
import { type ExportDownload, openExport } from './interactions.export.ts';
import { originAllowed, unmatchableOrigin } from './interactions.origins.ts';
import { toEventRow } from './interactions.present.ts';
import * as repo from './interactions.repository.ts';
import {
  type AdminInteractionsAggregateRequest,
  type AdminInteractionsAggregateResponse,
  type AdminInteractionsAggregateRow,
  type AdminInteractionsCountsByOutcomeRequest,
  type AdminInteractionsQueryRequest,
  AppendInteractionBody,
  type CreateInteractionTypeBody,
  EVENT_CHANGE_FIELDS,
  EVENT_EXTRA_MAX_BYTES,
  type InteractionEventRow,
  type InteractionPermissions,
  type InteractionTypeRecord,
  type ListTypesQuery,
  type OutcomeCount,
  type PublicInteractionsByUserRequest,
  type PublicInteractionsCountsByOutcomeRequest,
  SERVICE_SET_FIELDS,
  SubmitInteractionBody,
  type UpdateEventBody,
  type UpdateInteractionBody,
  type UpdateInteractionTypeBody,
} from './interactions.schema.ts';
import type { InteractionsSettings } from './interactions.settings.ts';

/**
 * Why a public call was refused; stable names clients branch on. A refused submit is named as
 * clients of the original service know it (its `SubmitInteractionError.reason`): `disabled`,
 * `not_public`, `auth_required`, `origin_forbidden`, `before_start`, `after_end`, `duplicate`,
 * `duplicate_anon`. The rest name refusals it has no name for.
 */
export type RefusalReason =
  | 'disabled'
  | 'not_public'
  | 'auth_required'
  | 'origin_forbidden'
  | 'before_start'
  | 'after_end'
  | 'duplicate'
  | 'duplicate_anon'
  | 'identity_mismatch'
  | 'own_read_not_allowed'
  | 'summary_not_allowed';

/**
 * Every refusal is `error: FORBIDDEN` with its reason. The status follows the interface: 401
 * for a caller who may not do this (UNAUTHORIZED when a user token would help), 409 for a
 * duplicate, which other credentials would not make acceptable.
 */
export function refusal(reason: RefusalReason, message: string): AppError {
  const named = { error: 'FORBIDDEN', reason };
  if (reason === 'duplicate' || reason === 'duplicate_anon') return refused(409, 'CONFLICT', message, named);
  return refused(401, reason === 'auth_required' ? 'UNAUTHORIZED' : 'FORBIDDEN', message, named);
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

/**
 * Checks on permissions about to be stored: a window that holds at least one instant (startAt
 * is included and so is endAt, so they may be equal), and allowedOrigins entries that can
 * each match some origin (an entry that could match none is a mistake better told at once).
 */
function checkPermissions(p: { startAt?: string | null; endAt?: string | null; allowedOrigins?: string[] | null }) {
  if (p.startAt && p.endAt && Date.parse(p.startAt) > Date.parse(p.endAt)) {
    throw badRequest('permissions.startAt must not be after permissions.endAt', {
      fields: ['permissions.startAt', 'permissions.endAt'],
    });
  }
  const bad = p.allowedOrigins ? unmatchableOrigin(p.allowedOrigins) : -1;
  if (bad >= 0) {
    throw validationFailed([
      {
        path: `body.permissions.allowedOrigins.${bad}`,
        message:
          'must be *, an origin (https://shop.example.com, https://*.example.com) or a host (shop.example.com, *.example.com), with an optional port',
      },
    ]);
  }
}

/**
 * A PATCH of an open section (permissions, data) at its top level: a key given replaces that
 * key whole, `null` removes it (permissions: back to its default), keys left out stay.
 */
function mergeKeys<T extends object>(stored: T, patch: { [K in keyof T]?: T[K] | null }): T {
  // fromEntries keeps even odd names (`__proto__` is refused by the body parser) own fields.
  const kept = Object.entries(stored).filter(([key]) => !Object.hasOwn(patch, key));
  const given = Object.entries(patch).filter(([, value]) => value !== null);
  return Object.fromEntries([...kept, ...given]) as T;
}

/** A body's `collectionId` is the original's required field; it must name the path's collection. */
function checkCollection(collectionId: string, body: { collectionId?: string }) {
  if (body.collectionId !== undefined && body.collectionId !== collectionId) {
    throw validationFailed([{ path: 'body.collectionId', message: 'must equal the collectionId of the path' }]);
  }
}

/**
 * The anonymous id: `anonId`, or `metadata.anonId`, where clients of the original service put
 * it ("pass anonId inside metadata" for uniquePerAnonId). Both given must agree.
 */
function anonIdOf(body: { anonId?: string; metadata?: Record<string, unknown> }): string | null {
  if (!body.metadata || !Object.hasOwn(body.metadata, 'anonId')) return body.anonId ?? null;
  const inMetadata = body.metadata.anonId;
  if (typeof inMetadata !== 'string' || inMetadata.length === 0 || inMetadata.length > 200) {
    throw validationFailed([{ path: 'body.metadata.anonId', message: 'must be a string of 1 to 200 characters' }]);
  }
  if (body.anonId !== undefined && body.anonId !== inMetadata) {
    throw validationFailed([{ path: 'body.anonId', message: 'must equal metadata.anonId when both are given' }]);
  }
  return inMetadata;
}

/**
 * The fields of a body its schema does not name, kept with the event and returned with it.
 * Names of row fields the service sets are refused: stored, they would never be seen.
 */
function extrasOf(
  body: Record<string, unknown>,
  named: Record<string, unknown>,
  serviceSet: readonly string[],
): Record<string, unknown> | null {
  const extra = Object.entries(body).filter(([key]) => !Object.hasOwn(named, key));
  if (extra.length === 0) return null;
  const taken = extra.find(([key]) => serviceSet.includes(key));
  if (taken) throw validationFailed([{ path: `body.${taken[0]}`, message: 'is set by the service' }]);
  const extras = Object.fromEntries(extra);
  if (Buffer.byteLength(JSON.stringify(extras)) > EVENT_EXTRA_MAX_BYTES) {
    throw badRequest(
      `The fields other than the event's own take more than ${EVENT_EXTRA_MAX_BYTES} bytes as JSON; large data belongs in metadata`,
      { fields: extra.map(([key]) => key) },
    );
  }
  return extras;
}

/** The columns append and submit fill alike from the body. */
function bodyColumns(body: AppendInteractionBody | SubmitInteractionBody) {
  return {
    outcome: body.outcome ?? null,
    scope: body.scope ?? null,
    broadcastId: body.broadcastId ?? null,
    journeyId: body.journeyId ?? null,
    metadata: body.metadata ?? null,
    orgId: body.orgId ?? null,
    productId: body.productId ?? null,
    proofId: body.proofId ?? null,
    variantId: body.variantId ?? null,
    batchId: body.batchId ?? null,
    eventType: body.eventType ?? null,
    sourceTag: body.source ?? null,
  };
}

const SUBMIT_SERVICE_SET = ['eventId', ...SERVICE_SET_FIELDS];

/** Fields of the original's update body that name the event rather than change it. */
const UPDATE_NAMING_FIELDS = ['eventId', 'collectionId', 'interactionId', 'userId', 'contactId', 'appId', 'status'];

/** What the event named for an update must be (fields left undefined are not checked). */
interface EventNamedAs {
  interactionId?: string;
  appId?: string;
  userId?: string;
  contactId?: string;
}

/** Past hours only: the current one is where writers are spreading over slots right now. */
const COMPACT_AFTER_MS = 2 * 3600_000;
/** Counter rows per compaction statement: short row locks beside the writers. */
const COMPACT_BATCH = 5000;

/** Enqueues jobs in the caller's transaction (the job engine's `enqueueMany`). */
export interface JobQueue {
  enqueueMany(
    q: Queryable,
    collectionId: string,
    list: { task: string; payload: unknown; maxAttempts: number }[],
  ): Promise<unknown>;
}

/** What an event's transaction tells others: webhook events, and the jobs of its effects. */
export interface EventOutlets {
  events: EventPublisher;
  jobs: JobQueue;
  effects: EffectRunner;
}

export class InteractionsService {
  private compactTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly settings: InteractionsSettings,
    private readonly log?: Pick<FastifyBaseLogger, 'warn'>,
    /**
     * The manifest always gives them; a service built without them (a bench folding counters)
     * stores events without publishing them or running effects.
     */
    private readonly outlets?: EventOutlets,
  ) {}

  /** The `interactions.effect` task (registered by the manifest). */
  effectTask(): TaskDefinition[] {
    return this.outlets ? [this.outlets.effects.task(this.settings.effectMaxAttempts)] : [];
  }

  /**
   * Folds the striped counters of hours more than two hours past into one row each (see
   * repo.compactCounters); returns the counter rows removed.
   */
  compactCounters(now = Date.now()): Promise<number> {
    return repo.compactCounters(this.db, new Date(now - COMPACT_AFTER_MS), COMPACT_BATCH);
  }

  /** In worker processes (see the manifest): compaction every INTERACTIONS_COMPACT_EVERY_MS. */
  startHousekeeping(): void {
    if (this.compactTimer) return;
    let running = false;
    this.compactTimer = setInterval(() => {
      // One run at a time in a process: a slow one is not joined by the next.
      if (running) return;
      running = true;
      void this.compactCounters()
        .catch((err: unknown) =>
          this.log?.warn({ err }, 'interactions: compacting the counters failed (tried again next time)'),
        )
        .finally(() => {
          running = false;
        });
    }, this.settings.compactEveryMs);
    this.compactTimer.unref();
  }

  close(): void {
    clearInterval(this.compactTimer);
    this.compactTimer = undefined;
    this.outlets?.effects.close();
  }

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
    checkPermissions(permissions);
    checkTypeData(body.data);
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

  /**
   * permissions and data merge key by key into the stored ones, so a PATCH of one key leaves
   * the others as they were (`data.display` without losing `data.effects`). Read, merge, check
   * and write run in one transaction holding the row's lock: concurrent PATCHes of different
   * keys all land, and the window checked is the one stored.
   */
  async updateType(collectionId: string, id: string, body: UpdateInteractionTypeBody): Promise<InteractionTypeRecord> {
    return this.db.transaction(async (tx) => {
      const stored = await repo.findType(tx, collectionId, id, { forUpdate: true });
      if (!stored) throw notFound('Interaction type');
      let permissions: InteractionPermissions | undefined;
      if (body.permissions !== undefined) {
        permissions = mergeKeys(stored.permissions, body.permissions);
        // Only the origins sent are checked: entries stored earlier under other rules stay.
        checkPermissions({ ...permissions, allowedOrigins: body.permissions.allowedOrigins });
      }
      // Only the keys sent are checked: effects or milestones stored earlier stay as they are.
      checkTypeData(body.data);
      const data = body.data === undefined ? undefined : mergeKeys(stored.data, body.data);
      const row = await repo.updateType(tx, collectionId, id, { appId: body.appId, permissions, data });
      if (!row) throw notFound('Interaction type');
      return toTypeRecord(row);
    });
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
    checkCollection(collectionId, body);
    if (body.userId === undefined && body.contactId === undefined) {
      throw badRequest('userId or contactId is required');
    }
    const extra = extrasOf(body, AppendInteractionBody.properties, SERVICE_SET_FIELDS);
    const anonId = anonIdOf(body);
    const type = await this.typeForEvent(collectionId, body.interactionId, body.appId);
    const eventId = body.eventId ?? newId('evt');
    const event: repo.NewEvent = {
      ...bodyColumns(body),
      eventId,
      interactionId: type.id,
      appId: type.app_id,
      occurredAt: body.timestamp ? new Date(body.timestamp) : null,
      userId: body.userId ?? null,
      contactId: body.contactId ?? null,
      anonId,
      channel: 'admin',
      extra,
    };
    if (storedEffects(type.data).length === 0 && this.outlets?.events.hasNoSubscribers?.(collectionId)) {
      await this.recordQuietly(collectionId, type, event);
    } else await this.writeEvents((tx) => this.record(tx, collectionId, type, event));
    return { success: true, eventId };
  }

  /**
   * Stores one event and, in its transaction, what follows from it: its
   * `interaction.recorded`, one job per effect of its type, and the interaction's count, with
   * an `interaction.milestone` for each threshold the count reaches. The count comes last: its
   * row stays locked until the commit (concurrent writers of one interaction take turns there,
   * which is what makes each threshold reached by exactly one of them), so it is held for as
   * short a time as the transaction allows.
   */
  private async record(tx: Queryable, collectionId: string, type: repo.TypeRow, event: repo.NewEvent): Promise<void> {
    const row = await repo.insertEvent(tx, collectionId, event);
    if (!this.outlets) return;
    const { events, jobs } = this.outlets;
    await events.publish(tx, collectionId, [recordedEvent(row)]);
    const effects = storedEffects(type.data);
    if (effects.length > 0) {
      await jobs.enqueueMany(tx, collectionId, effectJobs(row, effects, this.settings.effectMaxAttempts));
    }
    const after = await repo.addToTotal(tx, collectionId, type.id, 1);
    const reached: NewEvent[] = milestoneEvents(type.id, type.app_id, after - 1, after, ownMilestones(type.data));
    if (reached.length > 0) await events.publish(tx, collectionId, reached);
  }

  /**
   * An event of a collection nobody subscribes to, whose type runs no effect: stored as one
   * statement, as before events, then counted in a second one. There is nothing to announce,
   * so neither needs the other's transaction; in one transaction the event's locks (the
   * triggers' per-user rows) were held across the count, and appends of one user kept 0.3 of
   * their throughput. Each increment still returns its own count, so a threshold is still
   * crossed once; a count lost to a failure between the two only makes later milestones one
   * event late, and does not fail an event already stored.
   */
  private async recordQuietly(collectionId: string, type: repo.TypeRow, event: repo.NewEvent): Promise<void> {
    await retryOnConflict(() => repo.insertEvent(this.db, collectionId, event));
    try {
      await retryOnConflict(() => repo.addToTotal(this.db, collectionId, type.id, 1));
    } catch (err) {
      this.log?.warn({ err, collectionId, interactionId: type.id }, 'interactions: an event was stored uncounted');
    }
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
    checkCollection(collectionId, body);
    const extra = extrasOf(body, SubmitInteractionBody.properties, SUBMIT_SERVICE_SET);
    const anonId = anonIdOf(body);
    const type = await this.typeForEvent(collectionId, body.interactionId, body.appId);
    const p = type.permissions;
    if (!enabled(p)) throw refusal('disabled', 'This interaction type is disabled');
    if (p.allowPublicSubmit !== true) {
      throw refusal('not_public', 'This interaction type does not accept public submits');
    }
    if (caller.role === 'anonymous') {
      if (p.requireAuth) throw refusal('auth_required', 'This interaction type requires a user token');
      if (p.allowAnonymousSubmit !== true) {
        throw refusal('auth_required', 'This interaction type does not accept anonymous submits; send a user token');
      }
    }
    if (!originAllowed(p.allowedOrigins ?? [], origin)) {
      throw refusal('origin_forbidden', `Origin ${origin ?? '(none)'} may not submit this interaction`);
    }
    if (p.startAt && now.getTime() < Date.parse(p.startAt)) {
      throw refusal('before_start', `Submits open at ${p.startAt}`);
    }
    // endAt is included: submits are allowed "up to and including" it.
    if (p.endAt && now.getTime() > Date.parse(p.endAt)) throw refusal('after_end', `Submits closed at ${p.endAt}`);

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
    if (p.uniquePerAnonId && userId === null && anonId === null) {
      throw badRequest('anonId is required: this interaction type allows one event per anonymous id');
    }

    // uniqueOutcome narrows uniqueness to events with that outcome: other outcomes are free.
    const uniqueOutcome = p.uniqueOutcome ?? null;
    const guarded = uniqueOutcome === null || (body.outcome ?? null) === uniqueOutcome;
    // A window of 0 means all time, as an absent one does.
    const checks: { column: 'user_id' | 'anon_id'; value: string; windowSeconds?: number }[] = [];
    if (guarded && p.uniquePerUser && userId !== null) {
      checks.push({ column: 'user_id', value: userId, windowSeconds: p.uniquePerUserWindowSeconds });
    }
    if (guarded && p.uniquePerAnonId && anonId !== null && userId === null) {
      checks.push({ column: 'anon_id', value: anonId, windowSeconds: p.uniquePerAnonIdWindowSeconds });
    }

    const eventId = newId('evt');
    // The body's timestamp is not used: windows and uniqueness are judged on the server's time.
    const event: repo.NewEvent = {
      ...bodyColumns(body),
      eventId,
      interactionId: type.id,
      appId: type.app_id,
      occurredAt: now,
      userId,
      contactId,
      anonId,
      channel: 'public',
      extra,
    };
    await this.writeEvents(async (tx) => {
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
          throw refusal(
            c.column === 'user_id' ? 'duplicate' : 'duplicate_anon',
            `An event of this interaction already exists for ${who}${window}`,
          );
        }
      }
      await this.record(tx, collectionId, type, event);
    });
    return { success: true, eventId };
  }

  /**
   * Changes the latest version of an event, or marks every version deleted / restored. With
   * `namedAs`, the event must also be of that type, app and actor, else 404 and nothing changes.
   * It publishes no event, runs no effect and leaves the interaction's count as it is: those
   * follow an event being recorded, and a correction records nothing new (docs/interactions.md).
   */
  async updateEvent(
    collectionId: string,
    eventId: string,
    body: UpdateEventBody,
    namedAs: EventNamedAs = {},
  ): Promise<InteractionEventRow> {
    const { deleted, ...fields } = body;
    if (Object.keys(fields).length === 0 && deleted === undefined) {
      throw badRequest(`Nothing to change: send one of ${EVENT_CHANGE_FIELDS.join(', ')}, or deleted (status)`);
    }
    return this.writeEvents(async (tx) => {
      const latest = await repo.findLatestVersion(tx, collectionId, eventId);
      if (!latest) throw notFound('Interaction event');
      const stored: Record<keyof EventNamedAs, string | null> = {
        interactionId: latest.interaction_id,
        appId: latest.app_id,
        userId: latest.user_id,
        contactId: latest.contact_id,
      };
      const differs = (Object.keys(stored) as (keyof EventNamedAs)[]).filter(
        (key) => namedAs[key] !== undefined && namedAs[key] !== stored[key],
      );
      if (differs.length > 0) {
        throw new AppError(404, 'NOT_FOUND', `No interaction event "${eventId}" with this ${differs.join(' and ')}`, {
          fields: differs.map((key) => `body.${key}`),
        });
      }
      if (Object.keys(fields).length > 0) await repo.updateEventVersion(tx, collectionId, latest.id, fields);
      if (deleted !== undefined) await repo.setEventDeleted(tx, collectionId, eventId, deleted);
      const after = await repo.findLatestVersion(tx, collectionId, eventId);
      return toEventRow(after!);
    });
  }

  /**
   * A transaction that writes events, run again after a deadlock: the triggers that keep the
   * derived tables lock their rows in key order, but an update touching two identities or two
   * statements of one transaction can still meet another writer the other way round.
   */
  private writeEvents<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return retryOnConflict(() => this.db.transaction(fn));
  }

  /**
   * The original's update call: the body names the event (eventId, its interactionId, and its
   * userId or contactId, one of which the original's clients always send) and carries what to
   * change; `status: deleted | active` is `deleted: true | false`. The rules are updateEvent's.
   */
  async updateEventByBody(collectionId: string, body: UpdateInteractionBody): Promise<{ success: true }> {
    checkCollection(collectionId, body);
    if (body.userId === undefined && body.contactId === undefined) {
      throw validationFailed([{ path: 'body.userId', message: 'userId or contactId is required (the event’s actor)' }]);
    }
    if (body.timestamp !== undefined) {
      throw validationFailed([
        {
          path: 'body.timestamp',
          message: 'is not changed by an update; append a new version with this eventId and timestamp instead',
        },
      ]);
    }
    const known = new Set<string>([...UPDATE_NAMING_FIELDS, ...EVENT_CHANGE_FIELDS]);
    const further = Object.keys(body).find((key) => !known.has(key));
    if (further !== undefined) {
      throw validationFailed([
        {
          path: `body.${further}`,
          message: `is not changed by an update, which changes ${EVENT_CHANGE_FIELDS.join(', ')} and status`,
        },
      ]);
    }
    const changes: UpdateEventBody = {};
    for (const field of EVENT_CHANGE_FIELDS) {
      if (body[field] !== undefined) Object.assign(changes, { [field]: body[field] });
    }
    if (body.status !== undefined) changes.deleted = body.status === 'deleted';
    await this.updateEvent(collectionId, body.eventId, changes, {
      interactionId: body.interactionId,
      appId: body.appId,
      userId: body.userId,
      contactId: body.contactId,
    });
    return { success: true };
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
  ): Promise<Analysed<OutcomeCount[]>> {
    const filter = {
      ...q,
      limit: q.limit ?? 100,
      dedupeLatest: q.dedupeLatest ?? false,
      idField: q.idField ?? 'userId',
    };
    if (!filter.dedupeLatest) {
      const answer = await repo.countsByOutcome(this.db, collectionId, filter);
      return { answer, source: repo.hourlyRollupAnswers(filter) ? 'maintained' : 'events' };
    }
    if (q.appId === undefined && q.scope === undefined) {
      const answer = await repo.latestCountsByOutcome(this.db, collectionId, filter);
      if (answer) return { answer, source: 'maintained' };
    }
    const answer = await this.analytics((tx) => repo.countsByOutcome(tx, collectionId, filter));
    return { answer, source: 'events' };
  }

  /** `field` and `ops` come from the top level, else from `aggregate` (the top-level ones win). */
  async aggregate(
    collectionId: string,
    q: AdminInteractionsAggregateRequest,
  ): Promise<AdminInteractionsAggregateResponse> {
    const field = q.field ?? q.aggregate.field;
    const ops = q.ops ?? q.aggregate.ops;
    if (field === undefined || ops === undefined) {
      throw validationFailed([
        { path: field === undefined ? 'body.field' : 'body.ops', message: 'is required (here or in aggregate)' },
      ]);
    }
    const dedupeLatest = q.dedupeLatest ?? false;
    const rows = await this.analytics((tx) =>
      repo.aggregate(tx, collectionId, {
        ...q,
        field,
        ops,
        limit: q.limit ?? 100,
        dedupeLatest,
        idField: q.idField ?? 'userId',
      }),
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
