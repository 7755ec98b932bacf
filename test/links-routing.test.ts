/**
 * Routing of the public redirect (issue 28, part B): rules by OS, device, country and language;
 * A/B variants, sticky per visitor; the query string passed through; an expired link's
 * fallback; password-protected links.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressKey, primaryLanguage, target, variantIndex, withQuery } from '../src/modules/links/routing.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { writeMmdb } from './helpers/mmdb.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';
const ANDROID =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36';
const DESKTOP =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const IPAD =
  'Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';

beforeAll(async () => {
  t = await createTestApp({
    TRUSTED_PROXIES: '127.0.0.1',
    CLICK_FLUSH_MS: '5',
    ROLE: 'api',
    LINK_PASSWORD_ATTEMPTS: '3',
  });
  ({ a, b } = await twoCollections(t));
  const hook = await t.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: a.auth,
    payload: { url: 'https://receiver.example/hook', events: ['link.updated'] },
  });
  expect(hook.statusCode).toBe(200);
});
afterAll(() => t.close());

const base = (c: TestCollection) => `/admin/collection/${c.id}/links`;
const create = (payload: Record<string, unknown>, c: TestCollection = a) =>
  t.inject({ method: 'POST', url: base(c), headers: c.auth, payload });
async function link(payload: Record<string, unknown>, c: TestCollection = a) {
  const res = await create(payload, c);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}
const go = (code: string, headers: Record<string, string> = {}, query = '') =>
  t.inject({ method: 'GET', url: `/l/${code}${query}`, headers });
const where = async (code: string, headers: Record<string, string> = {}, query = '') => {
  const res = await go(code, headers, query);
  expect(res.statusCode, res.body).toBe(302);
  return res.headers.location as string;
};
const clicksOf = async (linkId: string) => {
  await t.app.services.links.redirects.flush();
  return (
    await t.testDb.db.query<{ n: number }>('SELECT count(*)::int AS n FROM link_clicks WHERE link_id = $1', [linkId])
  ).rows[0].n;
};

describe('rules', () => {
  it('sends an iPhone, an Android phone and a desktop browser to three destinations (deep links)', async () => {
    const l = await link({
      url: 'https://example.com/desktop',
      rules: [
        { when: { os: 'ios' }, url: 'myapp://item/42' },
        { when: { os: 'android' }, url: 'intent://item/42#Intent;scheme=myapp;package=com.example.app;end' },
      ],
    });
    expect(l.rules).toHaveLength(2);
    expect(await where(l.code, { 'user-agent': IPHONE })).toBe('myapp://item/42');
    expect(await where(l.code, { 'user-agent': ANDROID })).toBe(
      'intent://item/42#Intent;scheme=myapp;package=com.example.app;end',
    );
    expect(await where(l.code, { 'user-agent': DESKTOP })).toBe('https://example.com/desktop');
    expect(await where(l.code)).toBe('https://example.com/desktop');
    expect(await clicksOf(l.id)).toBe(4);
    // Each click keeps the way it was sent.
    const { rows } = await t.testDb.db.query<{ user_agent: string; route: string }>(
      'SELECT user_agent, route FROM link_clicks WHERE link_id = $1',
      [l.id],
    );
    expect(Object.fromEntries(rows.map((r) => [r.user_agent, r.route]))).toEqual({
      [IPHONE]: 'rule:0',
      [ANDROID]: 'rule:1',
      [DESKTOP]: 'destination',
      lightMyRequest: 'destination', // the injector's own user agent
    });
  });

  it('evaluates in order, first match wins; a list matches any value; every condition must hold', async () => {
    const l = await link({
      url: 'https://example.com/default',
      rules: [
        { when: { device: 'tablet' }, url: 'https://example.com/tablet' },
        { when: { device: ['mobile'], country: ['DE', 'at'] }, url: 'https://example.com/mobile-dach' },
        { when: { device: 'mobile' }, url: 'https://example.com/mobile' },
        { when: { os: ['windows', 'macos'], language: 'fr' }, url: 'https://example.com/desktop-fr' },
      ],
    });
    expect(await where(l.code, { 'user-agent': IPAD })).toBe('https://example.com/tablet');
    expect(await where(l.code, { 'user-agent': IPHONE, 'cf-ipcountry': 'AT' })).toBe('https://example.com/mobile-dach');
    expect(await where(l.code, { 'user-agent': IPHONE, 'cf-ipcountry': 'US' })).toBe('https://example.com/mobile');
    expect(await where(l.code, { 'user-agent': DESKTOP, 'accept-language': 'fr-CA,fr;q=0.9,en;q=0.5' })).toBe(
      'https://example.com/desktop-fr',
    );
    expect(await where(l.code, { 'user-agent': DESKTOP, 'accept-language': 'en-US,fr;q=0.9' })).toBe(
      'https://example.com/default',
    );
  });

  it('believes a country header only from a trusted proxy', async () => {
    const l = await link({
      url: 'https://example.com/world',
      rules: [{ when: { country: 'CH' }, url: 'https://example.com/ch' }],
    });
    expect(await where(l.code, { 'cf-ipcountry': 'CH' })).toBe('https://example.com/ch');
    const spoofed = await t.inject({
      method: 'GET',
      url: `/l/${l.code}`,
      headers: { 'cf-ipcountry': 'CH' },
      remoteAddress: '203.0.113.7',
    });
    expect(spoofed.headers.location).toBe('https://example.com/world');
  });

  it('takes the country from the GeoIP database first, then from a trusted proxy’s header', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'geoip-rules-'));
    const path = join(dir, 'city.mmdb');
    writeMmdb(path, { '203.0.113.0/24': { country: { iso_code: 'DE', names: { en: 'Germany' } } } });
    const geo = await createTestApp({ GEOIP_DB: path, TRUSTED_PROXIES: '127.0.0.1', ROLE: 'api' });
    try {
      const c = await geo.createCollection();
      const res = await geo.inject({
        method: 'POST',
        url: base(c),
        headers: c.auth,
        payload: {
          url: 'https://example.com/world',
          rules: [
            { when: { country: 'de' }, url: 'https://example.com/de' },
            { when: { country: 'FR' }, url: 'https://example.com/fr' },
          ],
        },
      });
      const { code } = res.json();
      const from = async (ip: string, headers: Record<string, string> = {}) =>
        (await geo.inject({ method: 'GET', url: `/l/${code}`, headers: { 'x-forwarded-for': ip, ...headers } })).headers
          .location;
      expect(await from('203.0.113.9', { 'cf-ipcountry': 'FR' })).toBe('https://example.com/de');
      expect(await from('192.0.2.1', { 'cf-ipcountry': 'FR' })).toBe('https://example.com/fr');
      expect(await from('192.0.2.1')).toBe('https://example.com/world');
    } finally {
      await geo.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the preferred language’s primary subtag', () => {
    expect(primaryLanguage('de-CH, en;q=0.8')).toBe('de');
    expect(primaryLanguage('en;q=0.5, pt-BR;q=0.9')).toBe('pt');
    expect(primaryLanguage('*, es')).toBe('es');
    expect(primaryLanguage('')).toBe('');
  });

  it('follows a change of rules at once (the cache entry is dropped)', async () => {
    const l = await link({ url: 'https://example.com/a' });
    expect(await where(l.code, { 'user-agent': IPHONE })).toBe('https://example.com/a');
    const res = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${l.id}`,
      headers: a.auth,
      payload: { rules: [{ when: { os: 'ios' }, url: 'https://example.com/ios' }] },
    });
    expect(res.statusCode).toBe(200);
    expect(await where(l.code, { 'user-agent': IPHONE })).toBe('https://example.com/ios');
    const { rows } = await t.testDb.db.query<{ body: string }>(
      "SELECT body FROM webhook_events WHERE collection_id = $1 AND type = 'link.updated' ORDER BY created_at DESC LIMIT 1",
      [a.id],
    );
    expect(JSON.parse(rows[0].body).data.changed_fields).toEqual(['rules']);
    const cleared = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${l.id}`,
      headers: a.auth,
      payload: { rules: null },
    });
    expect(cleared.json().rules).toBeNull();
    expect(await where(l.code, { 'user-agent': IPHONE })).toBe('https://example.com/a');
  });

  it('refuses script and browser-internal schemes, deep links outside rules, and too many rules', async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ rules: [{ when: { os: 'ios' }, url: 'javascript:alert(1)' }] }, 'rules[0].url'],
      [
        {
          rules: [
            { when: { os: 'ios' }, url: 'https://example.com/ok' },
            { when: { os: 'android' }, url: 'data:text/html,<script>alert(1)</script>' },
          ],
        },
        'rules[1].url',
      ],
      [{ rules: [{ when: { os: 'ios' }, url: 'file:///etc/passwd' }] }, 'rules[0].url'],
      [
        {
          variants: [
            { url: 'myapp://x', weight: 1 },
            { url: 'https://example.com/b', weight: 1 },
          ],
        },
        'variants[0].url',
      ],
      [{ expiredUrl: 'javascript:alert(1)' }, 'expiredUrl'],
    ];
    for (const [fields, field] of bad) {
      const res = await create({ url: 'https://example.com/x', ...fields });
      expect(res.statusCode, JSON.stringify(fields)).toBe(400);
      expect(res.json().details.field).toBe(field);
    }
    expect((await create({ url: 'myapp://x' })).statusCode).toBe(400);
    const many = Array.from({ length: 51 }, () => ({ when: { os: 'ios' }, url: 'https://example.com/i' }));
    expect((await create({ url: 'https://example.com/x', rules: many })).statusCode).toBe(400);
    const unknownOs = await create({
      url: 'https://example.com/x',
      rules: [{ when: { os: 'beos' }, url: 'https://e.x/' }],
    });
    expect(unknownOs.statusCode).toBe(400);
    const emptyWhen = await create({ url: 'https://example.com/x', rules: [{ when: {}, url: 'https://e.x/' }] });
    expect(emptyWhen.statusCode).toBe(400);
  });
});

describe('variants', () => {
  it('splits 70/30 within 2 points over 10,000 visitor keys (the pure assignment function)', () => {
    const bounds = [70, 100];
    let first = 0;
    for (let i = 0; i < 10_000; i++)
      if (variantIndex(bounds, addressKey(`10.1.${i >> 8}.${i & 255}`, DESKTOP), 'lnk_fixed') === 0) first++;
    expect(Math.abs(first / 10_000 - 0.7)).toBeLessThan(0.02);
  });

  it('splits 10,000 visitors of the real redirect 70/30 within 2 points, each as the assignment function says', async () => {
    const l = await link({
      url: 'https://example.com/a',
      variants: [
        { url: 'https://example.com/a', weight: 70 },
        { url: 'https://example.com/b', weight: 30 },
      ],
    });
    expect(l.variants).toEqual([
      { url: 'https://example.com/a', weight: 70 },
      { url: 'https://example.com/b', weight: 30 },
    ]);
    let toA = 0;
    for (let i = 0; i < 10_000; i++) {
      const ip = `198.51.${100 + (i >> 8)}.${i & 255}`;
      const ua = i % 2 ? DESKTOP : IPHONE;
      const res = await go(l.code, { 'x-forwarded-for': ip, 'user-agent': ua });
      const expected =
        variantIndex([70, 100], addressKey(ip, ua), l.id) === 0 ? 'https://example.com/a' : 'https://example.com/b';
      expect(res.headers.location).toBe(expected);
      if (expected.endsWith('/a')) toA++;
    }
    expect(Math.abs(toA / 10_000 - 0.7)).toBeLessThan(0.02);
    expect(await clicksOf(l.id)).toBe(10_000);
  });

  it('gives the same visitor the same variant every time: by address and user agent, and by cookie', async () => {
    const l = await link({
      url: 'https://example.com/a',
      variants: [
        { url: 'https://example.com/a', weight: 1 },
        { url: 'https://example.com/b', weight: 1 },
        { url: 'https://example.com/c', weight: 1 },
      ],
    });
    const seen = new Set<string>();
    for (let visitor = 0; visitor < 30; visitor++) {
      const headers = { 'x-forwarded-for': `192.0.2.${visitor}`, 'user-agent': IPHONE };
      const firstVisit = await go(l.code, headers);
      const cookie = String(firstVisit.headers['set-cookie']).split(';')[0];
      expect(cookie).toMatch(/^lvid=[A-Za-z0-9_-]{16,}$/);
      expect(String(firstVisit.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Lax/);
      seen.add(firstVisit.headers.location as string);
      for (let again = 0; again < 3; again++) {
        expect((await go(l.code, headers)).headers.location).toBe(firstVisit.headers.location);
      }
      // Another address (a phone moving to another network): the cookie keeps the variant.
      const moved = await go(l.code, { 'x-forwarded-for': '203.0.113.200', 'user-agent': IPHONE, cookie });
      expect(moved.headers.location).toBe(firstVisit.headers.location);
      expect(moved.headers['set-cookie']).toBeUndefined();
    }
    expect(seen.size).toBe(3);
  });

  it('refuses weights that are not positive integers, one variant alone and more than 10', async () => {
    const v = (weight: unknown) => ({ url: 'https://example.com/v', weight });
    for (const variants of [[v(0), v(1)], [v(1.5), v(1)], [v(1)], Array.from({ length: 11 }, () => v(1))]) {
      expect((await create({ url: 'https://example.com/x', variants })).statusCode).toBe(400);
    }
  });
});

describe('query string', () => {
  it('passes the short URL’s query on by default: the destination’s own parameters win, reserved ones are dropped', async () => {
    const l = await link({ url: 'https://example.com/p?utm_source=news&a=1#top' });
    expect(l.passQuery).toBe(true);
    expect(await where(l.code, {}, '?a=2&utm_campaign=spring&qr=1&flag')).toBe(
      'https://example.com/p?utm_source=news&a=1&utm_campaign=spring&flag#top',
    );
    expect(await where(l.code, {}, '?qr=1')).toBe('https://example.com/p?utm_source=news&a=1#top');
    const plain = await link({ url: 'https://example.com/plain' });
    expect(await where(plain.code, {}, '?x=%20y&z=%C3%A9')).toBe('https://example.com/plain?x=%20y&z=%C3%A9');
  });

  it('merges by decoded name, keeps malformed escapes as sent, and encodes what a Location cannot carry', () => {
    const t1 = target('https://example.com/p?a%20b=1&c=2#f');
    expect(withQuery(t1, 'a+b=9&c=9&d=%zz&e')).toBe('https://example.com/p?a%20b=1&c=2&d=%zz&e#f');
    expect(withQuery(target('https://example.com/'), 'q=\u00e9 x')).toBe('https://example.com/?q=%E9%20x');
    expect(withQuery(target('https://example.com/'), '&&qr=1&')).toBe('https://example.com/');
  });

  it('passes it to a rule’s destination too, and not at all when passQuery is false', async () => {
    const l = await link({
      url: 'https://example.com/d',
      rules: [{ when: { os: 'ios' }, url: 'myapp://open' }],
      passQuery: false,
    });
    expect(l.passQuery).toBe(false);
    expect(await where(l.code, {}, '?x=1')).toBe('https://example.com/d');
    await t.inject({ method: 'PATCH', url: `${base(a)}/${l.id}`, headers: a.auth, payload: { passQuery: true } });
    expect(await where(l.code, { 'user-agent': IPHONE }, '?x=1')).toBe('myapp://open?x=1');
  });
});

describe('expired links', () => {
  it('sends visitors of an expired link to its expiredUrl (302), without counting a click; 410 without one', async () => {
    const l = await link({ url: 'https://example.com/live', expiredUrl: 'https://example.com/over' });
    expect(l.expiredUrl).toBe('https://example.com/over');
    expect(await where(l.code)).toBe('https://example.com/live');
    await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${l.id}`,
      headers: a.auth,
      payload: { expiresAt: '2020-01-01T00:00:00Z' },
    });
    expect(await where(l.code)).toBe('https://example.com/over');
    expect((await t.inject({ method: 'HEAD', url: `/l/${l.code}` })).headers.location).toBe('https://example.com/over');
    expect(await clicksOf(l.id)).toBe(1);
    await t.inject({ method: 'PATCH', url: `${base(a)}/${l.id}`, headers: a.auth, payload: { expiredUrl: null } });
    expect((await go(l.code)).statusCode).toBe(410);
  });
});

describe('password-protected links', () => {
  it('shows a self-contained page instead of redirecting; never answers the password or its hash', async () => {
    const l = await link({ url: 'https://example.com/secret', password: 'open sesame' });
    expect(l.passwordProtected).toBe(true);
    expect(JSON.stringify(l)).not.toMatch(/sesame|scrypt/);
    const listed = await t.inject({ method: 'GET', url: base(a), headers: a.auth });
    expect(listed.body).not.toMatch(/sesame|scrypt/);
    const stored = await t.testDb.db.query<{ password_hash: string }>('SELECT password_hash FROM links WHERE id = $1', [
      l.id,
    ]);
    expect(stored.rows[0].password_hash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(stored.rows[0].password_hash).not.toContain('sesame');

    const res = await go(l.code);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'; style-src 'sha256-/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('private, no-store');
    expect(res.body).toContain('<form method="post">');
    expect(res.body).not.toMatch(/<script|src=|href=|example\.com/);
    const head = await t.inject({ method: 'HEAD', url: `/l/${l.code}` });
    expect(head.statusCode).toBe(200);
    expect(head.headers.location).toBeUndefined();
    expect(await clicksOf(l.id)).toBe(0);
  });

  it('redirects on the right password (a form post or JSON) and counts the click; the wrong one gets the page', async () => {
    const l = await link({ url: 'https://example.com/secret', password: 'open sesame' });
    const form = (password: string, ip: string, query = '') =>
      t.inject({
        method: 'POST',
        url: `/l/${l.code}${query}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
        payload: new URLSearchParams({ password }).toString(),
      });
    const wrong = await form('<script>alert(1)</script>', '198.18.0.1');
    expect(wrong.statusCode).toBe(403);
    expect(wrong.headers['content-type']).toMatch(/^text\/html/);
    expect(wrong.body).toContain('not right');
    expect(wrong.body).not.toContain('<script');
    const right = await form('open sesame', '198.18.0.2', '?utm_source=mail');
    expect(right.statusCode).toBe(303);
    expect(right.headers.location).toBe('https://example.com/secret?utm_source=mail');
    const json = await t.inject({
      method: 'POST',
      url: `/l/${l.code}`,
      headers: { 'x-forwarded-for': '198.18.0.3' },
      payload: { password: 'open sesame' },
    });
    expect(json.statusCode).toBe(303);
    const jsonWrong = await t.inject({
      method: 'POST',
      url: `/l/${l.code}`,
      headers: { 'x-forwarded-for': '198.18.0.3' },
      payload: { password: 'nope' },
    });
    expect(jsonWrong.statusCode).toBe(403);
    expect(jsonWrong.json()).toMatchObject({ errorCode: 'FORBIDDEN', details: { field: 'password' } });
    expect(await clicksOf(l.id)).toBe(2);
  });

  it('remembers a right password for a day (a cookie per link), until the password changes', async () => {
    const l = await link({ url: 'https://example.com/kept', password: 'first' });
    const other = await link({ url: 'https://example.com/other', password: 'first' });
    const wrong = await t.inject({ method: 'POST', url: `/l/${l.code}`, payload: { password: 'nope' } });
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const right = await t.inject({ method: 'POST', url: `/l/${l.code}`, payload: { password: 'first' } });
    expect(right.statusCode).toBe(303);
    const setCookie = [right.headers['set-cookie']].flat().find((c) => String(c).startsWith(`lpw_${l.id}=`));
    expect(setCookie).toMatch(/; Path=\/; Max-Age=86400; HttpOnly; SameSite=Lax/);
    const cookie = String(setCookie).split(';')[0];
    // The cookie opens this link without the page, and counts the visit.
    const again = await go(l.code, { cookie: `a=b; ${cookie}` });
    expect(again.statusCode).toBe(302);
    expect(again.headers.location).toBe('https://example.com/kept');
    expect(await clicksOf(l.id)).toBe(2);
    // Not another link with the same password, nor a forged or stale value.
    const forOther = await go(other.code, { cookie: cookie.replace(l.id, other.id) });
    expect(forOther.statusCode).toBe(200);
    expect(forOther.body).toContain('password protected');
    expect((await go(l.code, { cookie: `lpw_${l.id}=${'A'.repeat(43)}` })).statusCode).toBe(200);
    // A new password: the old cookie opens nothing.
    const patched = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${l.id}`,
      headers: a.auth,
      payload: { password: 'second' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await go(l.code, { cookie })).statusCode).toBe(200);
  });

  it('limits attempts per link and visitor: the fourth is refused, another visitor or link is not', async () => {
    const l = await link({ url: 'https://example.com/secret', password: 'right' });
    const other = await link({ url: 'https://example.com/other', password: 'right' });
    const attempt = (code: string, password: string, ip: string) =>
      t.inject({
        method: 'POST',
        url: `/l/${code}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
        payload: `password=${encodeURIComponent(password)}`,
      });
    for (let i = 0; i < 3; i++) expect((await attempt(l.code, 'guess', '198.18.1.1')).statusCode).toBe(403);
    const limited = await attempt(l.code, 'right', '198.18.1.1');
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['content-type']).toMatch(/^text\/html/);
    expect(limited.headers['retry-after']).toBeDefined();
    expect(limited.body).toContain('Too many attempts');
    expect((await attempt(l.code, 'right', '198.18.1.2')).statusCode).toBe(303);
    expect((await attempt(other.code, 'right', '198.18.1.1')).statusCode).toBe(303);
    const limitedJson = await t.inject({
      method: 'POST',
      url: `/l/${l.code}`,
      headers: { 'x-forwarded-for': '198.18.1.1' },
      payload: { password: 'right' },
    });
    expect(limitedJson.statusCode).toBe(429);
    expect(limitedJson.json().errorCode).toBe('RATE_LIMITED');
  });

  it('answers a post to an unknown code 404, and a post without a password 400', async () => {
    const unknown = await t.inject({ method: 'POST', url: '/l/no-such-code', payload: { password: 'x' } });
    expect(unknown.statusCode).toBe(404);
    const l = await link({ url: 'https://example.com/s', password: 'pw' });
    const empty = await t.inject({ method: 'POST', url: `/l/${l.code}`, payload: {} });
    expect(empty.statusCode).toBe(400);
    const tooLong = await t.inject({ method: 'POST', url: `/l/${l.code}`, payload: { password: 'x'.repeat(201) } });
    expect(tooLong.statusCode).toBe(400);
  });

  it('removes the password with null; a link without one answers a post as a visit', async () => {
    const l = await link({ url: 'https://example.com/s', password: 'pw' });
    const res = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${l.id}`,
      headers: a.auth,
      payload: { password: null },
    });
    expect(res.json().passwordProtected).toBe(false);
    expect(await where(l.code)).toBe('https://example.com/s');
    const post = await t.inject({ method: 'POST', url: `/l/${l.code}`, payload: { password: 'anything' } });
    expect(post.statusCode).toBe(303);
    expect(post.headers.location).toBe('https://example.com/s');
  });
});

describe('tenancy', () => {
  it('cannot change another collection’s routing: 404, and its link is unchanged', async () => {
    const theirs = await link(
      { url: 'https://b.example/x', rules: [{ when: { os: 'ios' }, url: 'https://b.example/ios' }] },
      b,
    );
    await link({ url: 'https://a.example/x' }, a);
    const res = await t.inject({
      method: 'PATCH',
      url: `${base(b)}/${theirs.id}`,
      headers: a.auth,
      payload: { rules: [{ when: { os: 'ios' }, url: 'https://evil.example/' }], password: 'mine' },
    });
    expect(res.statusCode).toBe(401);
    const viaOwnPath = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${theirs.id}`,
      headers: a.auth,
      payload: { rules: [{ when: { os: 'ios' }, url: 'https://evil.example/' }], password: 'mine' },
    });
    expect(viaOwnPath.statusCode).toBe(404);
    expect(await where(theirs.code, { 'user-agent': IPHONE })).toBe('https://b.example/ios');
    expect((await go(theirs.code)).statusCode).toBe(302);
  });
});
