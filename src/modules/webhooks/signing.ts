/**
 * Signatures a receiver checks before trusting a delivery:
 * - `x-service-signature`: lowercase hex HMAC-SHA-256 of the exact body bytes, keyed with the
 *   registration's secret string as given to the customer (docs/webhooks.md, Verifying a
 *   delivery).
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`): base64
 *   HMAC-SHA-256 of `${id}.${timestamp}.${body}`, keyed with the base64-decoded part of the
 *   `whsec_` secret, so receivers get replay protection from the timestamp.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: 32 random bytes, base64, in the Standard Webhooks form. */
export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

export function serviceSignature(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

export function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/**
 * Every signature header of one attempt. `now` is the attempt's own time (replay window).
 * While a rotated-out secret is in its grace period (`previousSecret`), it signs too: Standard
 * Webhooks carries several signatures in one header, space separated, and `x-service-signature`
 * gets a second header (`x-service-signature-previous`), so a receiver verifies with whichever secret it holds.
 */
export function signatureHeaders(
  secret: string,
  eventId: string,
  body: string,
  now = new Date(),
  previousSecret?: string | null,
): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers: Record<string, string> = {
    'x-service-signature': serviceSignature(secret, body),
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardSignature(secret, eventId, timestamp, body),
  };
  if (previousSecret) {
    headers['x-service-signature-previous'] = serviceSignature(previousSecret, body);
    headers['webhook-signature'] += ` ${standardSignature(previousSecret, eventId, timestamp, body)}`;
  }
  return headers;
}
