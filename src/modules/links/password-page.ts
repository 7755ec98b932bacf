/**
 * Password-protected links: the password's hash, and the small page a visitor enters it on.
 *
 * The hash is scrypt from node:crypto (N = 2^14, r = 8, p = 1: 16 MiB and tens of milliseconds
 * per check, on libuv's thread pool rather than the event loop), with its parameters stored in
 * the hash so that they can be raised later without breaking stored ones. Attempts are bounded
 * per link and visitor by the rate limiter (redirect.routes.ts), so a check's cost is too.
 *
 * The page is one self-contained document: no script, no external asset, its one style block
 * allowed by hash in a Content-Security-Policy that allows nothing else. It is never framed and
 * never cached. The form posts back to the address it was shown at (the short URL with its
 * query string, so the query is still passed on after the password).
 *
 * A right password is remembered for a day by a cookie per link (`lpw_<linkId>`), so a visitor
 * follows the link again without the page, as with Dub or Bitly. Its value is a hash of the link
 * id and the stored password hash, so it needs no secret of its own, reveals nothing of the
 * password, and stops working the moment the password changes or is removed.
 */
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16_384;
const R = 8;
const P = 1;
const KEY_BYTES = 32;

function derive(password: string, salt: Buffer, n: number, r: number, p: number, bytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, bytes, { N: n, r, p, maxmem: 256 * n * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** `scrypt$N$r$p$salt$key` (salt and key in base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P, KEY_BYTES);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const got = await derive(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p), expected.length);
  return timingSafeEqual(got, expected);
}

/** How long a right password is remembered (the cookie's Max-Age). */
export const REMEMBER_S = 86_400;

/** The cookie that remembers a link's password, and its value for the link's current hash. */
export const passCookieName = (linkId: string) => `lpw_${linkId}`;
export const passToken = (linkId: string, passwordHash: string): string =>
  createHash('sha256').update(`${linkId}\n${passwordHash}`).digest('base64url');

/** Whether the request's cookies carry the link's current token. */
export function remembered(cookieHeader: string, linkId: string, passwordHash: string): boolean {
  const name = `${passCookieName(linkId)}=`;
  for (const part of cookieHeader.split(';')) {
    const p = part.trim();
    if (!p.startsWith(name)) continue;
    const got = Buffer.from(p.slice(name.length));
    const want = Buffer.from(passToken(linkId, passwordHash));
    if (got.length === want.length && timingSafeEqual(got, want)) return true;
  }
  return false;
}

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;min-height:100vh;display:grid;place-items:center;background:#f6f7f9;color:#1b1f24}' +
  'main{background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002;width:min(22rem,90vw)}' +
  'h1{font-size:1.2rem;margin:0 0 1rem}label{display:block;margin-bottom:.25rem}' +
  'input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit;margin-bottom:1rem}' +
  'button{padding:.5rem 1rem;font:inherit;cursor:pointer}.error{color:#b00020}';
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

/** Sent with the page: nothing but its own style, never framed, no referrer to the next page. */
export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; base-uri 'none'; frame-ancestors 'none'`,
  'cache-control': 'private, no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/** Messages are ours (never the request's), so the page needs no escaping of input. */
export type PageMessage = 'wrong' | 'limited' | undefined;
const MESSAGES = {
  wrong: 'That password is not right. Try again.',
  limited: 'Too many attempts. Wait a while, then try again.',
};

export function passwordPage(message?: PageMessage): string {
  const note = message ? `<p class="error" role="alert">${MESSAGES[message]}</p>` : '';
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">' +
    `<title>Password required</title><style>${STYLE}</style></head><body><main>` +
    `<h1>This link is password protected</h1>${note}` +
    '<form method="post"><label for="password">Password</label>' +
    '<input id="password" name="password" type="password" autocomplete="current-password" maxlength="200" required autofocus>' +
    '<button type="submit">Continue</button></form></main></body></html>'
  );
}
