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
import { FRAMING_HEADERS, HEADER_NAME, OUTBOUND_METHODS, type OutboundHttp } from '../../platform/outbound-http.ts';
import { isObject, OpenObject } from '../../platform/schemas.ts';
import { defineTask, type TaskContext, type TaskDefinition } from '../../platform/tasks.ts';
import type { AppObjectServices } from '../app-objects/index.ts';
import * as repo from './interactions.events.repository.ts';

export const EFFECT_TASK = 'interactions.effect';

/** Bounds of `data.effects`, checked when a type is created or updated (400 naming the field). */
export const EFFECT_LIMITS = {
  /** Effects of one interaction type: each is one job per event. */
  perType: 10,
  /** A webhook body or an appRecord data template, as JSON. */
  templateBytes: 16 * 1024,
  headers: 20,
  headerValueLength: 2000,
  urlLength: 2048,
  defaultTimeoutMs: 10_000,
  minTimeoutMs: 100,
  maxTimeoutMs: 30_000,
} as const;

/** Bounds of `data.milestones`. */
export const MILESTONE_LIMITS = { count: 20, max: Number.MAX_SAFE_INTEGER } as const;

/** The effect types this service runs; the others are reported `not_supported`. */
const SUPPORTED = new Set(['webhook', 'appRecord']);

/**
 * `singletonPer` as the original's guide spells it (`contact`, `product`, `proof`, `global`)
 * and as the records API does (`contactId`, `productId`, ..., `collection`), each to the
 * records API's value and the event field it needs.
 */
const SINGLETON_PER = new Map<string, { per: string; needs: keyof EventContext | null }>([
  ['contact', { per: 'contactId', needs: 'contactId' }],
  ['contactId', { per: 'contactId', needs: 'contactId' }],
  ['product', { per: 'productId', needs: 'productId' }],
  ['productId', { per: 'productId', needs: 'productId' }],
  ['proof', { per: 'proofId', needs: 'proofId' }],
  ['proofId', { per: 'proofId', needs: 'proofId' }],
  ['variant', { per: 'variantId', needs: 'variantId' }],
  ['variantId', { per: 'variantId', needs: 'variantId' }],
  ['batch', { per: 'batchId', needs: 'batchId' }],
  ['batchId', { per: 'batchId', needs: 'batchId' }],
  ['global', { per: 'collection', needs: null }],
  ['collection', { per: 'collection', needs: null }],
]);

const ANCHORS = ['productId', 'proofId', 'variantId', 'batchId'] as const;

const TOKEN = /\{\{\s*([A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*)\s*\}\}/g;

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? '');

interface Problem {
  path: string;
  message: string;
}

/** The first problem of one effect, or undefined; `at` is its path (`body.data.effects.0`). */
function effectProblem(effect: unknown, at: string): Problem | undefined {
  if (!isObject(effect)) return { path: at, message: 'must be an object {type, config?}' };
  if (typeof effect.type !== 'string' || effect.type.length === 0 || effect.type.length > 100) {
    return { path: `${at}.type`, message: 'must be a string of 1 to 100 characters' };
  }
  if (effect.config !== undefined && !isObject(effect.config)) {
    return { path: `${at}.config`, message: 'must be an object' };
  }
  const config = effect.config ?? {};
  const c = `${at}.config`;
  const unknownKey = (allowed: readonly string[]) => {
    const key = Object.keys(config).find((k) => !allowed.includes(k));
    return key === undefined ? undefined : { path: `${c}.${key}`, message: `is not a ${effect.type} setting` };
  };
  if (effect.type === 'webhook') {
    const bad = unknownKey(['url', 'method', 'headers', 'body', 'timeout']);
    if (bad) return bad;
    if (typeof config.url !== 'string' || config.url.length === 0 || config.url.length > EFFECT_LIMITS.urlLength) {
      return {
        path: `${c}.url`,
        message: `is required: an http(s) URL of at most ${EFFECT_LIMITS.urlLength} characters`,
      };
    }
    // Tokens stand for text the event gives; the rest must already make an http(s) URL.
    let url: URL | undefined;
    try {
      url = new URL(config.url.replace(TOKEN, 'x'));
    } catch {}
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
      return { path: `${c}.url`, message: 'must be an http(s) URL without credentials ({{tokens}} allowed)' };
    }
    if (config.method !== undefined && !OUTBOUND_METHODS.includes(String(config.method).toUpperCase() as 'GET')) {
      return { path: `${c}.method`, message: `must be one of ${OUTBOUND_METHODS.join(', ')}` };
    }
    if (config.headers !== undefined) {
      if (!isObject(config.headers)) return { path: `${c}.headers`, message: 'must be an object of strings' };
      const entries = Object.entries(config.headers);
      if (entries.length > EFFECT_LIMITS.headers) {
        return { path: `${c}.headers`, message: `must have at most ${EFFECT_LIMITS.headers} headers` };
      }
      for (const [name, value] of entries) {
        if (!HEADER_NAME.test(name) || FRAMING_HEADERS.has(name.toLowerCase())) {
          return { path: `${c}.headers.${name}`, message: 'is not a header name an effect may set' };
        }
        if (typeof value !== 'string' || value.length > EFFECT_LIMITS.headerValueLength || /[\r\n\0]/.test(value)) {
          return {
            path: `${c}.headers.${name}`,
            message: `must be a string of at most ${EFFECT_LIMITS.headerValueLength} characters on one line`,
          };
        }
      }
    }
    if (config.body !== undefined) {
      if (!isObject(config.body) && typeof config.body !== 'string') {
        return { path: `${c}.body`, message: 'must be an object or a string' };
      }
      if (jsonBytes(config.body) > EFFECT_LIMITS.templateBytes) {
        return { path: `${c}.body`, message: `must take at most ${EFFECT_LIMITS.templateBytes} bytes as JSON` };
      }
    }
    if (
      config.timeout !== undefined &&
      (!Number.isInteger(config.timeout) ||
        (config.timeout as number) < EFFECT_LIMITS.minTimeoutMs ||
        (config.timeout as number) > EFFECT_LIMITS.maxTimeoutMs)
    ) {
      return {
        path: `${c}.timeout`,
        message: `must be an integer of milliseconds from ${EFFECT_LIMITS.minTimeoutMs} to ${EFFECT_LIMITS.maxTimeoutMs}`,
      };
    }
  }
  if (effect.type === 'appRecord') {
    const bad = unknownKey(['appId', 'recordType', 'singletonPer', 'data', 'anchors']);
    if (bad) return bad;
    for (const key of ['appId', 'recordType'] as const) {
      const v = config[key];
      if (v !== undefined && (typeof v !== 'string' || v.length === 0 || v.length > 100)) {
        return { path: `${c}.${key}`, message: 'must be a string of 1 to 100 characters' };
      }
    }
    if (config.singletonPer !== undefined && !SINGLETON_PER.has(String(config.singletonPer))) {
      return { path: `${c}.singletonPer`, message: `must be one of ${[...SINGLETON_PER.keys()].join(', ')}` };
    }
    if (config.data !== undefined) {
      if (!isObject(config.data)) return { path: `${c}.data`, message: 'must be an object' };
      if (jsonBytes(config.data) > EFFECT_LIMITS.templateBytes) {
        return { path: `${c}.data`, message: `must take at most ${EFFECT_LIMITS.templateBytes} bytes as JSON` };
      }
    }
    if (config.anchors !== undefined) {
      if (!isObject(config.anchors)) return { path: `${c}.anchors`, message: 'must be an object' };
      for (const [key, value] of Object.entries(config.anchors)) {
        if (!(ANCHORS as readonly string[]).includes(key)) {
          return { path: `${c}.anchors.${key}`, message: `is not an anchor (${ANCHORS.join(', ')})` };
        }
        if (typeof value !== 'string' || value.length === 0 || value.length > 200) {
          return { path: `${c}.anchors.${key}`, message: 'must be a string of 1 to 200 characters' };
        }
      }
    }
  }
  return undefined;
}

/** The first problem of a `data.effects` value, or undefined. */
function effectsProblem(effects: unknown, at: string): Problem | undefined {
  if (!Array.isArray(effects)) return { path: at, message: 'must be an array of effects' };
  if (effects.length > EFFECT_LIMITS.perType) {
    return { path: at, message: `must have at most ${EFFECT_LIMITS.perType} effects` };
  }
  for (const [i, effect] of effects.entries()) {
    const problem = effectProblem(effect, `${at}.${i}`);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Checks what a type create or update sends in `data` (effects and milestones): 400 naming the
 * field. Only the keys sent are checked: a type stored before these rules keeps its data, and
 * its effects are judged again when they run (an invalid one is reported, not run).
 */
export function checkTypeData(data: Record<string, unknown> | undefined): void {
  if (!data) return;
  const problem =
    (data.effects !== undefined && data.effects !== null
      ? effectsProblem(data.effects, 'body.data.effects')
      : undefined) ??
    (data.milestones !== undefined && data.milestones !== null
      ? milestonesProblem(data.milestones, 'body.data.milestones')
      : undefined);
  if (problem) throw validationFailed([problem]);
}

function milestonesProblem(v: unknown, at: string): Problem | undefined {
  const message = `must be at most ${MILESTONE_LIMITS.count} positive integers in ascending order, each once`;
  if (!Array.isArray(v) || v.length > MILESTONE_LIMITS.count) return { path: at, message };
  for (const [i, t] of v.entries()) {
    if (!Number.isSafeInteger(t) || (t as number) < 1 || (i > 0 && (t as number) <= v[i - 1])) {
      return { path: `${at}.${i}`, message };
    }
  }
  return undefined;
}

/** A type's own thresholds when its stored `data.milestones` is a valid list, else null (the defaults). */
export function ownMilestones(data: Record<string, unknown>): number[] | null {
  const v = data.milestones;
  return v !== undefined && v !== null && !milestonesProblem(v, '') ? (v as number[]) : null;
}

/** A type's effects as stored (only objects: a stored stray value has nothing to run). */
export function storedEffects(data: Record<string, unknown>): Record<string, unknown>[] {
  return Array.isArray(data.effects) ? data.effects.filter(isObject).slice(0, EFFECT_LIMITS.perType) : [];
}

// -------------------------------------------------------------------------------- interpolation

/** What `{{token}}`s read: the guide's context of an event (docs/interactions.md, Effects). */
export interface EventContext {
  eventId: string;
  collectionId: string;
  appId: string | null;
  interactionId: string;
  contactId: string | null;
  userId: string | null;
  anonId: string | null;
  productId: string | null;
  proofId: string | null;
  variantId: string | null;
  batchId: string | null;
  outcome: string | null;
  eventType: string | null;
  source: string | null;
  channel: string;
  scope: string | null;
  broadcastId: string | null;
  journeyId: string | null;
  timestamp: string;
  metadata: Record<string, unknown>;
}

export function eventContext(e: repo.EventRow): EventContext {
  return {
    eventId: e.event_id,
    collectionId: e.collection_id,
    appId: e.app_id,
    interactionId: e.interaction_id,
    contactId: e.contact_id,
    userId: e.user_id,
    anonId: e.anon_id,
    productId: e.product_id,
    proofId: e.proof_id,
    variantId: e.variant_id,
    batchId: e.batch_id,
    outcome: e.outcome,
    eventType: e.event_type,
    source: e.source_tag,
    channel: e.source,
    scope: e.scope,
    broadcastId: e.broadcast_id,
    journeyId: e.journey_id,
    timestamp: e.occurred_at.toISOString(),
    metadata: e.metadata ?? {},
  };
}

/** A dot path's value; own fields only (`{{metadata.constructor}}` is no value). */
function lookup(context: EventContext, path: string): unknown {
  let value: unknown = context;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A token's text: null and undefined are '', objects their JSON. */
function tokenText(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Every `{{token}}` of a string replaced by its text (`encode` applied to each, for URLs). */
export function interpolateString(s: string, context: EventContext, encode = (t: string) => t): string {
  return s.replace(TOKEN, (_, path: string) => encode(tokenText(lookup(context, path))));
}

/** A template (object, array, string) with every string interpolated; keys are kept as written. */
export function interpolate(template: unknown, context: EventContext): unknown {
  if (typeof template === 'string') return interpolateString(template, context);
  if (Array.isArray(template)) return template.map((v) => interpolate(v, context));
  if (isObject(template)) {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, interpolate(v, context)]));
  }
  return template;
}

/** The body a webhook effect without `body` sends: the guide's standard payload. */
function standardBody(c: EventContext) {
  return {
    eventId: c.eventId,
    collectionId: c.collectionId,
    appId: c.appId,
    interactionId: c.interactionId,
    contactId: c.contactId,
    userId: c.userId,
    productId: c.productId,
    proofId: c.proofId,
    outcome: c.outcome,
    eventType: c.eventType,
    metadata: c.metadata,
    timestamp: c.timestamp,
  };
}

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
