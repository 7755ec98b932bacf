import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceType } from '../src/modules/links/index.ts';
import { clientAddress, parseTrustedProxies, proxyGeo } from '../src/platform/client-address.ts';
import { createTestApp, superAuth, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { writeMmdb } from './helpers/mmdb.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

beforeAll(async () => {
  // ROLE=api: no workers, so the deliveries these events queue stay queued (delivery is
  // webhooks.test.ts's subject); events are stored only for subscribed registrations.
  t = await createTestApp({ TRUSTED_PROXIES: '127.0.0.1,10.0.0.0/8', CLICK_FLUSH_MS: '5', ROLE: 'api' });
  ({ a, b } = await twoCollections(t));
  await subscribe(a);
});

async function subscribe(c: TestCollection) {
  const res = await t.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: c.auth,
    payload: {
      url: 'https://receiver.example/hook',
      events: ['link.created', 'link.updated', 'link.deleted', 'link.clicked'],
    },
  });
  expect(res.statusCode).toBe(200);
}
afterAll(() => t.close());

const base = (c: TestCollection) => `/admin/collection/${c.id}/links`;
const create = (payload: Record<string, unknown>, c: TestCollection = a, headers = c.auth) =>
  t.inject({ method: 'POST', url: base(c), headers, payload });

/** For tests that run their own app (other settings than `t`): a link, visits, stored clicks. */
const linkIn = async (app: TestApp, c: TestCollection, url: string) =>
  (await app.inject({ method: 'POST', url: base(c), headers: c.auth, payload: { url } })).json();
async function visit(app: TestApp, code: string, times: number) {
  for (let i = 0; i < times; i++) expect((await app.inject({ method: 'GET', url: `/l/${code}` })).statusCode).toBe(302);
}
const storedClicks = async (app: TestApp, column: 'link_id' | 'collection_id', value: string) =>
  (await app.testDb.db.query<{ n: number }>(`SELECT count(*) AS n FROM link_clicks WHERE ${column} = $1`, [value]))
    .rows[0].n;

async function events(collectionId: string, type?: string) {
  const { rows } = await t.testDb.db.query<{ type: string; body: string }>(
    'SELECT type, body FROM webhook_events WHERE collection_id = $1 AND ($2::text IS NULL OR type = $2) ORDER BY created_at, id',
    [collectionId, type ?? null],
  );
  return rows.map((r) => JSON.parse(r.body));
}

async function until<T>(fn: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('create and read', () => {
  it('creates a link with a generated code and every field', async () => {
    const res = await create({ url: 'https://example.com/a?x=1', title: 'A', tags: ['promo'] });
    expect(res.statusCode).toBe(200);
    const link = res.json();
    expect(link).toMatchObject({
      destinationUrl: 'https://example.com/a?x=1',
      title: 'A',
      tags: ['promo'],
      clicks: 0,
      expiresAt: null,
      createdBy: expect.any(String),
    });
    expect(link.code).toMatch(/^[A-Za-z0-9]{7}$/);
    expect(link.shortUrl).toBe(`http://short.test/l/${link.code}`);
    const got = await t.inject({ method: 'GET', url: `${base(a)}/${link.id}`, headers: a.auth });
    expect(got.json()).toEqual(link);
  });

  it('accepts a custom code and refuses a taken one, in any collection', async () => {
    const res = await create({ url: 'https://example.com/c', code: 'my-custom_1' });
    expect(res.statusCode).toBe(200);
    expect(res.json().code).toBe('my-custom_1');
    const again = await create({ url: 'https://example.com/d', code: 'my-custom_1' }, b);
    expect(again.statusCode).toBe(409);
    expect(again.json().errorCode).toBe('CONFLICT');
  });

  it('refuses bad input and changes nothing', async () => {
    const before = (await t.inject({ method: 'GET', url: base(a), headers: a.auth })).json().total;
    for (const payload of [
      { url: 'ftp://example.com/x' },
      { url: 'javascript:alert(1)' },
      { url: 'not a url' },
      { url: 'https://example.com', code: 'a b' },
      { url: 'https://example.com', code: 'x' },
      { url: 'https://example.com', expiresAt: '2001-01-01T00:00:00Z' },
      { url: 'https://example.com', expiresAt: 'tomorrow' },
      { url: 'https://example.com', unknown: 1 },
      { code: 'abcdef' },
    ]) {
      const res = await create(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    const after = (await t.inject({ method: 'GET', url: base(a), headers: a.auth })).json().total;
    expect(after).toBe(before);
  });

  it('lists newest first with search, tag filter and paging', async () => {
    await create({ url: 'https://list.example/1', title: 'Spring sale', tags: ['sale'] });
    await create({ url: 'https://list.example/2', title: 'Winter', tags: ['sale', 'winter'] });
    const res = await t.inject({ method: 'GET', url: `${base(a)}?tag=sale&limit=1`, headers: a.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ total: 2, limit: 1, offset: 0 });
    expect(res.json().items[0].title).toBe('Winter');
    const q = await t.inject({ method: 'GET', url: `${base(a)}?q=spring`, headers: a.auth });
    expect(q.json().items.map((l: { title: string }) => l.title)).toEqual(['Spring sale']);
    const bad = await t.inject({ method: 'GET', url: `${base(a)}?limit=0`, headers: a.auth });
    expect(bad.statusCode).toBe(400);
  });
});

describe('auth and tenancy', () => {
  it('needs an admin credential of the collection', async () => {
    const link = (await create({ url: 'https://example.com/t' })).json();
    for (const headers of [{}, b.auth, a.userAuth]) {
      for (const [method, url] of [
        ['GET', base(a)],
        ['POST', base(a)],
        ['GET', `${base(a)}/${link.id}`],
        ['PATCH', `${base(a)}/${link.id}`],
        ['DELETE', `${base(a)}/${link.id}`],
        ['GET', `${base(a)}/${link.id}/clicks`],
      ] as const) {
        const res = await t.inject({
          method,
          url,
          headers,
          payload: method === 'POST' || method === 'PATCH' ? { url: 'https://x.example' } : undefined,
        });
        expect(res.statusCode, `${method} ${url}`).toBe(401);
      }
    }
    // Another collection's link is not found, even for its own admin through its own path.
    const other = await t.inject({ method: 'GET', url: `${base(b)}/${link.id}`, headers: b.auth });
    expect(other.statusCode).toBe(404);
    const superRead = await t.inject({ method: 'GET', url: `${base(a)}/${link.id}`, headers: superAuth });
    expect(superRead.statusCode).toBe(200);
  });
});

describe('redirect', () => {
  it('answers 302 to the destination, 404 for unknown codes', async () => {
    const link = (await create({ url: 'https://dest.example/path?q=1' })).json();
    const res = await t.inject({ method: 'GET', url: `/l/${link.code}` });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('https://dest.example/path?q=1');
    expect(res.headers['cache-control']).toContain('no-store');
    const unknown = await t.inject({ method: 'GET', url: '/l/doesnotexist' });
    expect(unknown.statusCode).toBe(404);
  });

  it('sees changes at once: new code after a miss, new destination, delete, expiry', async () => {
    // A miss is cached; creating the code must drop that negative entry.
    expect((await t.inject({ method: 'GET', url: '/l/later-code' })).statusCode).toBe(404);
    const link = (await create({ url: 'https://one.example/', code: 'later-code' })).json();
    expect((await t.inject({ method: 'GET', url: '/l/later-code' })).headers.location).toBe('https://one.example/');

    const patched = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${link.id}`,
      headers: a.auth,
      payload: { url: 'https://two.example/' },
    });
    expect(patched.statusCode).toBe(200);
    expect((await t.inject({ method: 'GET', url: '/l/later-code' })).headers.location).toBe('https://two.example/');

    const renamed = await t.inject({
      method: 'PATCH',
      url: `${base(a)}/${link.id}`,
      headers: a.auth,
      payload: { code: 'renamed-code' },
    });
    expect(renamed.json().shortUrl).toBe('http://short.test/l/renamed-code');
    expect((await t.inject({ method: 'GET', url: '/l/later-code' })).statusCode).toBe(404);
    expect((await t.inject({ method: 'GET', url: '/l/renamed-code' })).statusCode).toBe(302);

    const soon = new Date(Date.now() + 60_000).toISOString();
    await t.inject({ method: 'PATCH', url: `${base(a)}/${link.id}`, headers: a.auth, payload: { expiresAt: soon } });
    expect((await t.inject({ method: 'GET', url: '/l/renamed-code' })).statusCode).toBe(302);
    const past = new Date(Date.now() - 1000).toISOString();
    await t.inject({ method: 'PATCH', url: `${base(a)}/${link.id}`, headers: a.auth, payload: { expiresAt: past } });
    const expired = await t.inject({ method: 'GET', url: '/l/renamed-code' });
    expect(expired.statusCode).toBe(410);
    expect(expired.json().errorCode).toBe('GONE');
    await t.inject({ method: 'PATCH', url: `${base(a)}/${link.id}`, headers: a.auth, payload: { expiresAt: null } });
    expect((await t.inject({ method: 'GET', url: '/l/renamed-code' })).statusCode).toBe(302);

    const del = await t.inject({ method: 'DELETE', url: `${base(a)}/${link.id}`, headers: a.auth });
    expect(del.json()).toEqual({ success: true });
    expect((await t.inject({ method: 'GET', url: '/l/renamed-code' })).statusCode).toBe(404);
    expect((await t.inject({ method: 'GET', url: `${base(a)}/${link.id}`, headers: a.auth })).statusCode).toBe(404);
    // The code of a deleted link stays reserved.
    expect((await create({ url: 'https://three.example/', code: 'renamed-code' })).statusCode).toBe(409);
  });

  it('drops a code changed by another process (LISTEN/NOTIFY)', async () => {
    const link = (await create({ url: 'https://before.example/' })).json();
    expect((await t.inject({ method: 'GET', url: `/l/${link.code}` })).headers.location).toBe(
      'https://before.example/',
    );
    // Change the row behind the service's back, as another process would, and announce it.
    await t.testDb.db.transaction(async (tx) => {
      await tx.query("UPDATE links SET destination_url = 'https://after.example/' WHERE id = $1", [link.id]);
      await tx.query("SELECT pg_notify('links_changed', $1)", [link.code]);
    });
    const location = await until(async () => {
      const res = await t.inject({ method: 'GET', url: `/l/${link.code}` });
      return res.headers.location === 'https://after.example/' ? res.headers.location : undefined;
    }, 'the cache to drop the code');
    expect(location).toBe('https://after.example/');
  });
});

describe('clicks', () => {
  it('records each visit off the response path, counts it, and lists it', async () => {
    const link = (await create({ url: 'https://clicks.example/' })).json();
    const iphone =
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
    const res = await t.inject({
      method: 'GET',
      url: `/l/${link.code}`,
      headers: {
        'user-agent': iphone,
        referer: 'https://news.example/post',
        'x-forwarded-for': '203.0.113.9, 10.1.2.3',
        'cf-ipcountry': 'de',
        'x-vercel-ip-city': 'M%C3%BCnchen',
      },
    });
    expect(res.statusCode).toBe(302);
    await t.inject({ method: 'GET', url: `/l/${link.code}` });
    const page: { items: { userAgent: string }[] } = await until(async () => {
      const r = await t.inject({ method: 'GET', url: `${base(a)}/${link.id}/clicks`, headers: a.auth });
      return r.json().total === 2 ? r.json() : undefined;
    }, 'two clicks');
    const withUa = page.items.find((c: { userAgent: string }) => c.userAgent === iphone);
    expect(withUa).toMatchObject({
      ipAddress: '203.0.113.9',
      referer: 'https://news.example/post',
      country: 'DE',
      city: 'München',
      deviceType: 'mobile',
    });
    const got = await t.inject({ method: 'GET', url: `${base(a)}/${link.id}`, headers: a.auth });
    expect(got.json().clicks).toBe(2);
    // The batch noted them; a process that runs jobs publishes them (this app is ROLE=api, so
    // the test drains as a worker would: links click-events.ts).
    await t.app.services.links.clickEvents.drainAll();
    const clicked = await until(async () => {
      const list = (await events(a.id, 'link.clicked')).filter((e) => e.data.link_id === link.id);
      return list.length >= 2 ? list : undefined;
    }, 'two link.clicked events');
    expect(clicked).toHaveLength(2);
    expect(clicked.find((e) => e.data.click.user_agent === iphone).data).toEqual({
      link_id: link.id,
      short_url: link.shortUrl,
      destination_url: 'https://clicks.example/',
      clicked_at: expect.any(String),
      click: {
        ip_address: '203.0.113.9',
        user_agent: iphone,
        referer: 'https://news.example/post',
        country: 'DE',
        city: 'München',
        device_type: 'mobile',
        trigger: 'link',
        click_id: null,
      },
    });
  });

  it('stores clicks still buffered when the app is stopped gracefully', async () => {
    const s = await createTestApp({ CLICK_FLUSH_MS: '60000', ROLE: 'api' });
    try {
      const link = await linkIn(s, await s.createCollection(), 'https://bye.example/');
      await visit(s, link.code, 5);
      expect(await storedClicks(s, 'link_id', link.id)).toBe(0); // still in memory: the flush interval is a minute
      await s.app.close();
      expect(await storedClicks(s, 'link_id', link.id)).toBe(5);
    } finally {
      await s.app.close();
      await s.testDb.drop();
    }
  });

  it('keeps no click of a removed collection, and stores the rest of the batch', async () => {
    // link_clicks has no foreign key (migration 0401): the writer and a trigger keep it whole.
    const s = await createTestApp({ CLICK_FLUSH_MS: '60000', ROLE: 'api' });
    try {
      const [gone, kept] = [await s.createCollection(), await s.createCollection()];
      const [g, k] = [await linkIn(s, gone, 'https://x.example/'), await linkIn(s, kept, 'https://x.example/')];
      const clicksOf = (collectionId: string) => storedClicks(s, 'collection_id', collectionId);
      await visit(s, g.code, 3);
      await s.app.services.links.redirects.flush();
      expect(await clicksOf(gone.id)).toBe(3);

      // Two more clicks wait in memory, next to one of another collection, when `gone` is removed.
      await visit(s, g.code, 2);
      await visit(s, k.code, 1);
      await s.testDb.db.query('DELETE FROM collections WHERE id = $1', [gone.id]);
      expect(await clicksOf(gone.id)).toBe(0); // the stored ones went with their links
      await s.app.services.links.redirects.flush();
      expect(await clicksOf(gone.id)).toBe(0); // the buffered ones were not stored
      expect(await clicksOf(kept.id)).toBe(1);
      const counter = await s.inject({ method: 'GET', url: `${base(kept)}/${k.id}`, headers: kept.auth });
      expect(counter.json().clicks).toBe(1);
    } finally {
      await s.close();
    }
  });

  it('keeps clicks in memory while the database cannot store them, and stores them after', async () => {
    const s = await createTestApp({ CLICK_FLUSH_MS: '10', ROLE: 'api' });
    try {
      const c = await s.createCollection();
      const link = await linkIn(s, c, 'https://down.example/');
      const stored = () => storedClicks(s, 'link_id', link.id);
      // A real failure of the storing transaction: the table it writes is gone for a while.
      await s.testDb.db.query('ALTER TABLE link_clicks RENAME TO link_clicks_away');
      await visit(s, link.code, 5);
      await new Promise((r) => setTimeout(r, 300)); // several flush intervals: the first attempt failed
      await s.testDb.db.query('ALTER TABLE link_clicks_away RENAME TO link_clicks');
      // The next try comes 1 s after the first failure (2 s after the second, …).
      const deadline = Date.now() + 20_000;
      while ((await stored()) < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(await stored()).toBe(5);
      const got = await s.inject({ method: 'GET', url: `${base(c)}/${link.id}`, headers: c.auth });
      expect(got.json().clicks).toBe(5);
    } finally {
      await s.close();
    }
  });

  it('takes country and city from the GeoIP database, else from a trusted proxy’s headers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'geoip-'));
    const path = join(dir, 'city.mmdb');
    writeMmdb(path, {
      '203.0.113.0/24': { country: { iso_code: 'DE', names: { en: 'Germany' } }, city: { names: { en: 'Berlin' } } },
      '198.51.100.0/25': { country: { iso_code: 'JP', names: { en: 'Japan' } } },
    });
    const s = await createTestApp({
      GEOIP_DB: path,
      TRUSTED_PROXIES: '127.0.0.1',
      CLICK_FLUSH_MS: '60000',
      ROLE: 'api',
    });
    try {
      const c = await s.createCollection();
      const link = await linkIn(s, c, 'https://geo.example/');
      // The proxy says France, Paris for every visit; the database knows better where it can.
      for (const client of ['203.0.113.9', '198.51.100.7', '192.0.2.1', '2001:db8::1']) {
        const res = await s.inject({
          method: 'GET',
          url: `/l/${link.code}`,
          headers: { 'x-forwarded-for': client, 'cf-ipcountry': 'FR', 'x-vercel-ip-city': 'Paris' },
        });
        expect(res.statusCode).toBe(302);
      }
      await s.app.services.links.redirects.flush();
      const clicks = (await s.inject({ method: 'GET', url: `${base(c)}/${link.id}/clicks`, headers: c.auth })).json();
      const place = Object.fromEntries(
        clicks.items.map((k: { ipAddress: string; country: string; city: string }) => [
          k.ipAddress,
          `${k.country}/${k.city}`,
        ]),
      );
      expect(place).toEqual({
        '203.0.113.9': 'DE/Berlin', // from the database
        '198.51.100.7': 'JP/', // the database knows the country only: no city of another country
        '192.0.2.1': 'FR/Paris', // not in the database: the trusted proxy's headers
        '2001:db8::1': 'FR/Paris', // an IPv6 client and an IPv4-only database
      });
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('believes forwarding headers only from trusted proxies', () => {
    const trusted = parseTrustedProxies('10.0.0.0/8, 192.168.1.1');
    expect(clientAddress('198.51.100.7', '1.2.3.4', trusted)).toEqual({ ip: '198.51.100.7', viaTrustedProxy: false });
    expect(clientAddress('::ffff:10.0.0.5', '1.2.3.4', trusted)).toEqual({ ip: '1.2.3.4', viaTrustedProxy: true });
    // A client-written entry left of an untrusted hop is ignored.
    expect(clientAddress('10.0.0.5', '6.6.6.6, 8.8.4.4, 192.168.1.1', trusted).ip).toBe('8.8.4.4');
    expect(clientAddress('10.0.0.5', undefined, trusted).ip).toBe('10.0.0.5');
    expect(parseTrustedProxies('')('127.0.0.1')).toBe(false);
    expect(() => parseTrustedProxies('nonsense')).toThrow(/TRUSTED_PROXIES/);
    expect(proxyGeo({ 'cf-ipcountry': 'XX' })).toEqual({ country: '', region: '', city: '' });
  });

  it('tells device types apart', () => {
    expect(deviceType('')).toBe('');
    expect(deviceType('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36')).toBe(
      'desktop',
    );
    expect(deviceType('Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148')).toBe(
      'tablet',
    );
    expect(deviceType('Googlebot/2.1 (+http://www.google.com/bot.html)')).toBe('bot');
  });

  it('validates the clicks query and hides other collections', async () => {
    const link = (await create({ url: 'https://q.example/' })).json();
    const bad = await t.inject({ method: 'GET', url: `${base(a)}/${link.id}/clicks?from=yesterday`, headers: a.auth });
    expect(bad.statusCode).toBe(400);
    const other = await t.inject({ method: 'GET', url: `${base(b)}/${link.id}/clicks`, headers: b.auth });
    expect(other.statusCode).toBe(404);
  });
});

describe('events (outbox)', () => {
  it('writes link.created/updated/deleted with the seed envelope in the change’s transaction', async () => {
    const c = await t.createCollection();
    // Without a subscribed registration nothing is stored.
    const unheard = (await create({ url: 'https://ev.example/' }, c)).json();
    await t.inject({ method: 'DELETE', url: `${base(c)}/${unheard.id}`, headers: c.auth });
    expect(await events(c.id)).toEqual([]);
    await subscribe(c);
    const link = (await create({ url: 'https://ev.example/', code: `ev-${c.id}` }, c)).json();
    await t.inject({
      method: 'PATCH',
      url: `${base(c)}/${link.id}`,
      headers: c.auth,
      payload: { url: 'https://ev2.example/', title: 'T' },
    });
    await t.inject({ method: 'DELETE', url: `${base(c)}/${link.id}`, headers: c.auth });
    const all = await events(c.id);
    expect(all.map((e) => e.type)).toEqual(['link.created', 'link.updated', 'link.deleted']);
    for (const e of all) {
      expect(Object.keys(e).sort()).toEqual(['created_at', 'data', 'id', 'type']);
      expect(e.id).toMatch(/^evt_/);
      expect(new Date(e.created_at).toISOString()).toBe(e.created_at);
    }
    expect(all[0].data).toMatchObject({
      link_id: link.id,
      short_url: link.shortUrl,
      destination_url: 'https://ev.example/',
      created_by: link.createdBy,
    });
    expect(all[1].data).toMatchObject({
      link_id: link.id,
      destination_url: 'https://ev2.example/',
      changed_fields: ['destination_url', 'title'],
      previous: { destination_url: 'https://ev.example/', title: null },
    });
    expect(all[2].data).toMatchObject({ link_id: link.id, short_url: link.shortUrl, deleted_at: expect.any(String) });
    // A refused change writes no event.
    await create({ url: 'https://ev.example/', code: `ev-${c.id}` }, c);
    expect(await events(c.id)).toHaveLength(3);
  });
});
