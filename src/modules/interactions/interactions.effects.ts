/**
 * Interaction effects: what an interaction type's `data.effects` asks to happen after each of
 * its events is stored (docs/interactions.md, Effects). Each effect of each event is one job of
 * the `interactions.effect` task, enqueued in the event's own transaction (so an event rolled
 * back runs nothing, and one stored always runs its effects, whatever happens to the process),
 * run after the commit by the job engine in the `deliveries` lane (outbound HTTP, like webhook
 * deliveries, so a slow receiver holds none of the default lane's slots). The event's answer
 * never waits for one; one effect's failure touches neither the event nor its other effects.
 *
 * - `webhook`: an HTTP request built from the config with `{{token}}` interpolation, through
 *   the SSRF guard; no 2xx answer throws, so the engine tries again with its backoff.
 * - `appRecord`: a record created through the app-objects module (found and updated instead
 *   under `singletonPer`).
 * - any other type (`transactional`, `tag`, `loyalty`, `segment`, unknown ones): kept as
 *   stored and reported `not_supported` by its job, never dropped unseen.
 *
 * The job's result says what the effect did (`status`: succeeded, skipped, refused, invalid,
 * not_supported); its status, attempts and lastError say how running it went.
 */
import { createHash } from 'node:crypto';
import { Type } from 'typebox';
import type { Queryable } from '../../db/index.ts';
import { AppError, validationFailed } from '../../platform/errors.ts';
import type { OutboundHttp } from '../../platform/outbound-http.ts';
import { isObject, OpenObject } from '../../platform/schemas.ts';
import { defineTask, type TaskContext, type TaskDefinition } from '../../platform/tasks.ts';
import type { AppObjectServices } from '../app-objects/index.ts';
import {
  type EventContext,
  eventContext,
  interpolate,
  interpolateString,
  standardBody,
} from './interactions.effect-context.ts';
import { ANCHORS, EFFECT_LIMITS, effectProblem, SINGLETON_PER, SUPPORTED } from './interactions.effect-rules.ts';
import * as repo from './interactions.events.repository.ts';

export const EFFECT_TASK = 'interactions.effect';

// -------------------------------------------------------------------------------- the task

export const EffectPayload = Type.Object(
  {
    interactionId: Type.String({ maxLength: 100 }),
    eventId: Type.String({ maxLength: 200, description: 'The logical event (for reading; the row is eventRowId)' }),
    eventRowId: Type.Integer({ minimum: 1, description: 'The stored version of the event the effect is run for' }),
    index: Type.Integer({ minimum: 0, maximum: EFFECT_LIMITS.perType - 1, description: 'Its place in data.effects' }),
    effect: Type.Object(
      { type: Type.String({ maxLength: 100 }), config: Type.Optional(OpenObject()) },
      { description: 'The effect as configured when the event was stored' },
    ),
  },
  { additionalProperties: false },
);
export type EffectPayload = Type.Static<typeof EffectPayload>;

export type EffectResult = {
  type: string;
  status: 'succeeded' | 'skipped' | 'refused' | 'invalid' | 'not_supported';
  reason?: string;
  statusCode?: number;
  durationMs?: number;
  recordId?: string;
};

/** What an appRecord effect writes for an event: the record's app, type and key fields, or why nothing. */
type RecordPlan =
  | { skip: string }
  | {
      appId: string;
      recordType: string;
      /** The anchors and the contact, by the records API's field names (null: none). */
      values: Record<string, string | null>;
      singleton?: { per: string; needs: keyof EventContext | null };
    };

function recordPlan(config: Record<string, unknown>, c: EventContext): RecordPlan {
  const singleton = config.singletonPer === undefined ? undefined : SINGLETON_PER.get(String(config.singletonPer));
  const anchors = Object.fromEntries(
    ANCHORS.map((key) => {
      const given = (config.anchors as Record<string, string> | undefined)?.[key];
      return [key, given === undefined ? c[key] : interpolateString(given, c) || null];
    }),
  ) as Record<(typeof ANCHORS)[number], string | null>;
  const values: Record<string, string | null> = { ...anchors, contactId: c.contactId };
  if (singleton?.needs && !values[singleton.needs]) {
    return {
      skip: `singletonPer "${String(config.singletonPer)}" needs the event's ${singleton.needs}, and it has none`,
    };
  }
  const appId = (config.appId as string | undefined) ?? c.appId;
  if (!appId) return { skip: 'the event has no appId and the config names none' };
  return { appId, recordType: (config.recordType as string | undefined) ?? 'default', values, singleton };
}

/**
 * The named queue of an appRecord effect under `singletonPer`: the effects that write one
 * record (one app, record type, key and contact) run one at a time, in the order their events
 * were stored, so the record ends with the latest event's data whatever the workers' timing.
 * The price of that order: while one of them waits for a retry, the later ones wait too (until
 * it succeeds or fails for good). Other effects run independently (no queue). The name is a
 * digest: the key's values are the tenant's and unbounded; `:` keeps the name the service's own.
 */
function singletonQueue(effect: Record<string, unknown>, c: EventContext): string | undefined {
  if (effect.type !== 'appRecord' || effectProblem(effect, 'effect') || !isObject(effect.config)) return undefined;
  const plan = recordPlan(effect.config, c);
  if ('skip' in plan || !plan.singleton) return undefined;
  const { per, needs } = plan.singleton;
  const key = [plan.appId, plan.recordType, per, needs ? plan.values[needs] : c.collectionId, plan.values.contactId];
  return `${EFFECT_TASK}:${createHash('sha256').update(JSON.stringify(key)).digest('base64url').slice(0, 22)}`;
}

/** Builds the job of each effect of one stored event. */
export function effectJobs(
  row: repo.EventRow,
  effects: Record<string, unknown>[],
  maxAttempts: number,
): { task: string; payload: EffectPayload; maxAttempts: number; queueName?: string }[] {
  const context = eventContext(row);
  return effects.map((effect, index) => {
    const type = typeof effect.type === 'string' ? effect.type.slice(0, 100) : '(none)';
    // The config of a type this service does not run is not needed to report it so.
    const config = SUPPORTED.has(type) && isObject(effect.config) ? { config: effect.config } : {};
    return {
      task: EFFECT_TASK,
      payload: {
        interactionId: row.interaction_id,
        eventId: row.event_id,
        eventRowId: row.id,
        index,
        effect: { type, ...config },
      },
      maxAttempts,
      queueName: singletonQueue(effect, context),
    };
  });
}

type RecordInput = Parameters<AppObjectServices['records']['create']>[3];

/** The admin the records an effect writes are authored by. */
const EFFECT_ACTOR = { role: 'admin' as const, actorId: 'interaction-effect' };

export class EffectRunner {
  constructor(
    private readonly http: OutboundHttp,
    private readonly appObjects: AppObjectServices,
  ) {}

  close(): void {
    this.http.close();
  }

  task(maxAttempts: number): TaskDefinition {
    return defineTask({
      name: EFFECT_TASK,
      payload: EffectPayload,
      visible: true,
      description:
        'Runs one effect of an interaction type for one stored event again (the jobs the service queues for `data.effects`; see docs/interactions.md).',
      example: {
        interactionId: 'signup',
        eventId: 'evt_1',
        eventRowId: 1,
        index: 0,
        effect: { type: 'webhook', config: { url: 'https://hooks.example.com/signup' } },
      },
      lane: 'deliveries',
      maxAttempts,
      // A job enqueued through the jobs API (running an effect again) is held to the same rules.
      prepare: (payload) => {
        const problem = effectProblem(payload.effect, 'payload.effect');
        if (problem) throw validationFailed([problem]);
        return payload;
      },
      handler: (payload, ctx) => this.run(ctx.db, ctx.job.collectionId, payload, ctx),
    });
  }

  async run(
    q: Queryable,
    collectionId: string,
    p: EffectPayload,
    ctx: Pick<TaskContext, 'signal'>,
  ): Promise<EffectResult> {
    const type = p.effect.type;
    // Judged again: a type stored before the rules may hold a config they refuse.
    const problem = effectProblem(p.effect, 'effect');
    if (problem) return { type, status: 'invalid', reason: `${problem.path} ${problem.message}` };
    if (!SUPPORTED.has(type)) {
      return {
        type,
        status: 'not_supported',
        reason: `effects of type "${type}" are kept but not run by this service`,
      };
    }
    const row = await repo.findEventRow(q, collectionId, p.eventRowId);
    if (!row) return { type, status: 'skipped', reason: 'the event is no longer stored' };
    const context = eventContext(row);
    const config = p.effect.config ?? {};
    return type === 'webhook' ? this.webhook(config, context, ctx.signal) : this.appRecord(p, config, context);
  }

  private async webhook(config: Record<string, unknown>, c: EventContext, signal: AbortSignal): Promise<EffectResult> {
    const method = String(config.method ?? 'POST').toUpperCase();
    const url = interpolateString(config.url as string, c, encodeURIComponent);
    const headers: Record<string, string> = { 'user-agent': 'collection-platform-effects/1' };
    let body: string | undefined;
    if (method !== 'GET') {
      const template = config.body ?? standardBody(c);
      const text = typeof template === 'string';
      body = text ? interpolateString(template, c) : JSON.stringify(interpolate(template, c));
      headers['content-type'] = text ? 'text/plain; charset=utf-8' : 'application/json';
    }
    for (const [name, value] of Object.entries((config.headers ?? {}) as Record<string, string>)) {
      // A token's text may hold a line break; a header value may not.
      headers[name.toLowerCase()] = interpolateString(value, c).replace(/[\r\n\0]+/g, ' ');
    }
    const timeoutMs = (config.timeout as number | undefined) ?? EFFECT_LIMITS.defaultTimeoutMs;
    const r = await this.http.send({ url, method, headers, body, timeoutMs, signal });
    if (r.outcome === 'refused') return { type: 'webhook', status: 'refused', reason: r.error ?? 'refused' };
    // Thrown: the job is tried again after the engine's backoff, and lastError shows why.
    if (r.outcome === 'failed') throw new Error(`${method} ${new URL(url).host}: ${r.error}`);
    return { type: 'webhook', status: 'succeeded', statusCode: r.statusCode ?? 0, durationMs: r.durationMs };
  }

  private async appRecord(p: EffectPayload, config: Record<string, unknown>, c: EventContext): Promise<EffectResult> {
    const plan = recordPlan(config, c);
    if ('skip' in plan) return { type: 'appRecord', status: 'skipped', reason: plan.skip };
    const { appId, singleton } = plan;
    const input = {
      recordType: plan.recordType,
      ...Object.fromEntries(Object.entries(plan.values).filter(([, v]) => v !== null)),
      data: (interpolate(config.data ?? {}, c) as Record<string, unknown>) ?? {},
      // Without singletonPer, a ref of the event's row and the effect's place: a run repeated
      // after a crash (jobs run at least once) finds its record taken instead of adding one.
      ...(singleton
        ? { singletonPer: singleton.per as 'contactId' }
        : { ref: `interaction-effect:${p.eventRowId}:${p.index}` }),
    };
    try {
      // The records schema's static type does not spell singletonPer's literals; checked above.
      const record = await this.appObjects.records.create(c.collectionId, appId, EFFECT_ACTOR, input as RecordInput);
      return { type: 'appRecord', status: 'succeeded', recordId: String(record.id) };
    } catch (err) {
      // A refusal (the record's own rules, its ref already taken by an earlier run) will not
      // change on another attempt: reported. Anything else is tried again.
      if (err instanceof AppError && err.statusCode < 500) {
        if (err.statusCode === 409 && !singleton) {
          return { type: 'appRecord', status: 'skipped', reason: 'an earlier run of this effect created its record' };
        }
        return { type: 'appRecord', status: 'invalid', reason: err.message };
      }
      throw err;
    }
  }
}
