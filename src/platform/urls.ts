/** Addresses a client gives the service to send people or requests to. */
import { badRequest } from './errors.ts';

/**
 * `raw` as an absolute http(s) URL, or a 400 naming `field`: a short link's destination and a
 * webhook receiver are refused alike (the receiver's private-network guard comes after).
 */
export function httpUrl(raw: string, field = 'url'): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest(`${field} must be an absolute http or https address`, { field });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw badRequest(`${field} must use http or https`, { field });
  return u;
}
