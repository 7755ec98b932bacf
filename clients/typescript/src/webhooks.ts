/**
 * Verifying a webhook delivery in a receiver (docs/webhooks.md, "Verifying a delivery").
 * Every delivery carries two signatures of the same secret:
 *
 * - `x-service-signature`: hex HMAC-SHA-256 of the raw body, keyed with the whole secret
 *   string (`whsec_…`) as UTF-8; during a rotation's grace period `x-service-signature-previous`
 *   carries the replaced secret's.
 * - Standard Webhooks: `webhook-signature` = `v1,<base64 HMAC-SHA-256 of "{id}.{timestamp}.{body}">`,
 *   keyed with the base64-decoded part after `whsec_`; during a grace period two of them,
 *   separated by a space.
 *
 * Only the second signs a timestamp, so only it refuses a replayed delivery. When a delivery
 * carries the Standard Webhooks headers they must verify (timestamp included): falling back to
 * `x-service-signature` would let an old delivery through again. A delivery with only
 * `x-service-signature` is verified by it, with no timestamp to check.
 *
 * Web Crypto (`crypto.subtle`, global in Node ≥ 20 and in browsers) does the HMAC, and its
 * `verify` compares the signatures in constant time.
 */
import type { webhooks } from './schema.ts';

/** The body the service sends for one type: the envelope with that type's `data`. */
type EventBody<K extends keyof webhooks> = webhooks[K]['post'] extends {
  requestBody: { content: { 'application/json': infer Body } };
}
  ? Body
  : never;

/**
 * Every event the service sends (its catalogue: `GET /v1/webhooks/event-types`, the OpenAPI
 * document's `webhooks`), one member per type: switch on `type` and `data` has that type's
 * fields. Deduplicate on `id`.
 */
export type WebhookEvent = { [K in keyof webhooks]: EventBody<K> }[keyof webhooks];

/** Every event type, `webhook.test` included. */
export type WebhookEventType = WebhookEvent['type'];

/** The event of one type: `WebhookEventOf<'case.updated'>['data']`. */
export type WebhookEventOf<T extends WebhookEventType> = Extract<WebhookEvent, { type: T }>;

/** Node's `IncomingHttpHeaders`, a fetch `Headers`, or any record of header names (any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export type WebhookScheme = 'standard' | 'service';

export interface VerifyWebhookOptions {
  /** The body exactly as received, before any parsing: bytes (a Buffer is fine), or its text. */
  rawBody: Uint8Array | ArrayBuffer | string;
  headers: WebhookHeaders;
  /**
   * The registration's secret (`whsec_…`). Several are accepted (any one verifying is
   * enough), for a receiver that is itself switching secrets.
   */
  secret: string | readonly string[];
  /** How far `webhook-timestamp` may be from now, either way. Default 300 s. */
  toleranceSeconds?: number;
  /** The time to check against (ms since the epoch or a Date); default now. */
  now?: number | Date;
  /**
   * Schemes accepted. Default both. `['standard']` refuses a delivery whose Standard Webhooks
   * headers were stripped, so every accepted delivery has had its timestamp checked.
   */
  schemes?: readonly WebhookScheme[];
}

export type WebhookFailure =
  | 'missing_signature'
  | 'bad_signature'
  | 'bad_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'bad_body';

export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly reason: WebhookFailure,
    message: string,
  ) {
    super(message);
  }
}

const encoder = new TextEncoder();

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    value = key === undefined ? undefined : record[key];
  }
  return Array.isArray(value) ? value.join(', ') : value;
}

function bytesOf(body: Uint8Array | ArrayBuffer | string): Uint8Array<ArrayBuffer> {
  if (typeof body === 'string') return encoder.encode(body);
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  // A copy (the constructor copies a typed array): Web Crypto's types want an array over an
  // ArrayBuffer of its own, and a Buffer is often a view into Node's shared pool.
  return new Uint8Array(body);
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

function fromHex(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(text)) return undefined;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return out;
}

const hmacKey = (key: Uint8Array<ArrayBuffer>) =>
  crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);

/** Whether any of `signatures` is the HMAC-SHA-256 of `data` under any of `keys`. */
async function anyVerifies(
  keys: Uint8Array<ArrayBuffer>[],
  signatures: Uint8Array<ArrayBuffer>[],
  data: Uint8Array<ArrayBuffer>,
): Promise<boolean> {
  let ok = false;
  for (const key of keys) {
    const k = await hmacKey(key);
    for (const sig of signatures) {
      // No early return: every pair is checked, so the time taken says nothing about which matched.
      if (await crypto.subtle.verify('HMAC', k, sig, data)) ok = true;
    }
  }
  return ok;
}

/** The Standard Webhooks key: the base64 part after `whsec_` (a secret without the prefix is taken as base64 whole). */
function standardKey(secret: string): Uint8Array<ArrayBuffer> | undefined {
  return fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
}

function parseEvent(body: Uint8Array<ArrayBuffer>): WebhookEvent {
  try {
    const event = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
    if (event && typeof event === 'object' && typeof event.type === 'string' && typeof event.id === 'string') {
      return event as WebhookEvent;
    }
  } catch {
    // fall through
  }
  throw new WebhookVerificationError('bad_body', 'The signed body is not an event envelope');
}

/**
 * Verifies a delivery and answers its event, or throws a WebhookVerificationError whose
 * `reason` says why (answer 401 then). Give it the raw body, never a re-serialised object.
 */
export async function verifyWebhook(options: VerifyWebhookOptions): Promise<WebhookEvent> {
  const { headers, toleranceSeconds = 300 } = options;
  const secrets = (typeof options.secret === 'string' ? [options.secret] : [...options.secret]).filter(Boolean);
  if (!secrets.length) throw new TypeError('verifyWebhook: a secret is required');
  const schemes = options.schemes ?? ['standard', 'service'];
  const body = bytesOf(options.rawBody);

  const standardSignature = header(headers, 'webhook-signature');
  if (standardSignature !== undefined && schemes.includes('standard')) {
    const id = header(headers, 'webhook-id') ?? '';
    const timestamp = header(headers, 'webhook-timestamp') ?? '';
    if (!id) throw new WebhookVerificationError('missing_signature', 'webhook-id is missing');
    if (!/^\d{1,15}$/.test(timestamp)) {
      throw new WebhookVerificationError('bad_timestamp', 'webhook-timestamp is not a number of seconds');
    }
    const nowSeconds = Number(options.now ?? Date.now()) / 1000;
    const age = nowSeconds - Number(timestamp);
    if (age > toleranceSeconds) {
      throw new WebhookVerificationError('timestamp_too_old', `The delivery is ${Math.round(age)} s old`);
    }
    if (age < -toleranceSeconds) {
      throw new WebhookVerificationError('timestamp_too_new', `The delivery is dated ${Math.round(-age)} s ahead`);
    }
    const signatures = standardSignature
      .split(' ')
      .filter((s) => s.startsWith('v1,'))
      .map((s) => fromBase64(s.slice(3)))
      .filter((s): s is Uint8Array<ArrayBuffer> => s?.length === 32);
    const keys = secrets.map(standardKey).filter((k): k is Uint8Array<ArrayBuffer> => k !== undefined);
    const signed = concat(encoder.encode(`${id}.${timestamp}.`), body);
    if (!(await anyVerifies(keys, signatures, signed))) {
      throw new WebhookVerificationError('bad_signature', 'No webhook-signature matches the secret and the body');
    }
    return parseEvent(body);
  }

  const serviceSignatures = ['x-service-signature', 'x-service-signature-previous']
    .map((name) => header(headers, name))
    .filter((s): s is string => s !== undefined);
  if (serviceSignatures.length && schemes.includes('service')) {
    const signatures = serviceSignatures
      .map((s) => fromHex(s.trim()))
      .filter((s): s is Uint8Array<ArrayBuffer> => s !== undefined);
    const keys = secrets.map((s) => encoder.encode(s));
    if (!(await anyVerifies(keys, signatures, body))) {
      throw new WebhookVerificationError('bad_signature', 'No x-service-signature matches the secret and the body');
    }
    return parseEvent(body);
  }

  throw new WebhookVerificationError(
    'missing_signature',
    `The delivery carries no signature of an accepted scheme (${schemes.join(', ')})`,
  );
}

/** `verifyWebhook` as a yes or no, for a receiver that only needs to refuse. */
export async function isValidWebhook(options: VerifyWebhookOptions): Promise<boolean> {
  try {
    await verifyWebhook(options);
    return true;
  } catch (err) {
    if (err instanceof WebhookVerificationError) return false;
    throw err;
  }
}
