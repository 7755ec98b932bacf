/**
 * Event writes: admin appends (no checks), public submits (every permission enforced, in a
 * fixed order, each refusal named), and updates of an event's latest version. Recording an
 * event also tells others, in its transaction: `interaction.recorded`, one job per effect of
 * its type, and an `interaction.milestone` for each threshold its interaction's total reaches.
 */
import type { FastifyBaseLogger } from 'fastify';
import { type Db, type Queryable, retryOnConflict } from '../../db/index.ts';
import type { Caller } from '../../platform/auth.ts';
import { AppError, badRequest, notFound, validationFailed } from '../../platform/errors.ts';
import type { EventPublisher, NewEvent } from '../../platform/events.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import type { JobQueue, TaskDefinition } from '../../platform/tasks.ts';
import type { InteractionCounters } from './interactions.counters.service.ts';
import { ownMilestones, storedEffects } from './interactions.effect-rules.ts';
import { type EffectRunner, effectJobs } from './interactions.effects.ts';
import { anonIdOf, bodyColumns, checkCollection, extrasOf } from './interactions.event-bodies.ts';
import * as repo from './interactions.events.repository.ts';
import { milestoneEvents, recordedEvent } from './interactions.events.ts';
import { originAllowed } from './interactions.origins.ts';
import { enabled, refusal } from './interactions.permissions.ts';
import { toEventRow } from './interactions.present.ts';
import {
  AppendInteractionBody,
  EVENT_CHANGE_FIELDS,
  type InteractionEventRow,
  SERVICE_SET_FIELDS,
  SubmitInteractionBody,
  type UpdateEventBody,
  type UpdateInteractionBody,
} from './interactions.schema.ts';
import type { InteractionsSettings } from './interactions.settings.ts';
import type { InteractionTypes, TypeRow } from './interactions.types.service.ts';

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

/** What an event's transaction tells others: webhook events, and the jobs of its effects. */
export interface EventOutlets {
  events: EventPublisher;
  jobs: JobQueue;
  effects: EffectRunner;
}

export class InteractionEventWriter {
  constructor(
    private readonly db: Db,
    private readonly settings: InteractionsSettings,
    private readonly types: InteractionTypes,
    private readonly counters: InteractionCounters,
    private readonly log?: Pick<FastifyBaseLogger, 'warn'>,
    /**
     * The manifest always gives them; a writer built without them (a bench folding counters)
     * stores events without publishing them or running effects.
     */
    private readonly outlets?: EventOutlets,
  ) {}

  /** The `interactions.effect` task (registered by the manifest). */
  effectTask(): TaskDefinition[] {
    return this.outlets ? [this.outlets.effects.task(this.settings.effectMaxAttempts)] : [];
  }

  close(): void {
    this.outlets?.effects.close();
  }

  /** Admin append: no permission checks, any identity, optional backdated timestamp. */
  async append(collectionId: string, body: AppendInteractionBody): Promise<{ success: boolean; eventId: string }> {
    checkCollection(collectionId, body);
    if (body.userId === undefined && body.contactId === undefined) {
      throw badRequest('userId or contactId is required');
    }
    const extra = extrasOf(body, AppendInteractionBody.properties, SERVICE_SET_FIELDS);
    const anonId = anonIdOf(body);
    const type = await this.types.forEvent(collectionId, body.interactionId, body.appId);
    // In time order: the events' index by event id takes each new one at its end (ids.ts).
    const eventId = body.eventId ?? newTimeOrderedId('evt');
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
  private async record(tx: Queryable, collectionId: string, type: TypeRow, event: repo.NewEvent): Promise<void> {
    const row = await repo.insertEvent(tx, collectionId, event);
    if (!this.outlets) return;
    const { events, jobs } = this.outlets;
    await events.publish(tx, collectionId, [recordedEvent(row)]);
    const effects = storedEffects(type.data);
    if (effects.length > 0) {
      await jobs.enqueueMany(tx, collectionId, effectJobs(row, effects, this.settings.effectMaxAttempts));
    }
    const after = await this.counters.add(tx, collectionId, type.id, 1);
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
  private async recordQuietly(collectionId: string, type: TypeRow, event: repo.NewEvent): Promise<void> {
    await retryOnConflict(() => repo.insertEvent(this.db, collectionId, event));
    try {
      await retryOnConflict(() => this.counters.add(this.db, collectionId, type.id, 1));
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
    const type = await this.types.forEvent(collectionId, body.interactionId, body.appId);
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

    const eventId = newTimeOrderedId('evt');
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
}
