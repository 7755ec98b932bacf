/**
 * The rules of an interaction type's `data` (docs/interactions.md, Effects and Milestones): the
 * bounds of its effects and milestones, checked when a type is created or updated (400 naming
 * the field) and again by each effect's job when it runs (a type stored before a rule keeps its
 * data; an effect that no longer passes is reported `invalid`, not run).
 */
import { validationFailed } from '../../platform/errors.ts';
import { FRAMING_HEADERS, HEADER_NAME, OUTBOUND_METHODS } from '../../platform/outbound-http.ts';
import { isObject } from '../../platform/schemas.ts';
import { type EventContext, TOKEN } from './interactions.effect-context.ts';

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
export const SUPPORTED = new Set(['webhook', 'appRecord']);

/**
 * `singletonPer` as the original's guide spells it (`contact`, `product`, `proof`, `global`)
 * and as the records API does (`contactId`, `productId`, ..., `collection`), each to the
 * records API's value and the event field it needs.
 */
export const SINGLETON_PER = new Map<string, { per: string; needs: keyof EventContext | null }>([
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

export const ANCHORS = ['productId', 'proofId', 'variantId', 'batchId'] as const;

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? '');

export interface Problem {
  path: string;
  message: string;
}

/** The first problem of one effect, or undefined; `at` is its path (`body.data.effects.0`). */
export function effectProblem(effect: unknown, at: string): Problem | undefined {
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
