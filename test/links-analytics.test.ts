/**
 * Click analytics (issue 28, part C): `GET …/links/{linkId}/analytics` and the collection-wide
 * `GET …/links/analytics` answer what a brute-force count over the stored clicks answers, for
 * every groupBy, bots left out and counted, over random windows and intervals. Random clicks go
 * through the real recorder (enrichment, visitor hashes, the rollup), in time order and in
 * several batches; the counts are then recomputed here from the rows read back. Also: capture
 * through a real redirect, the tenant boundary with data on both sides, the CSV exports, and
 * the refusals.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawClick } from '../src/modules/links/clicks.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { writeMmdb } from './helpers/mmdb.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
const linksOfA: { id: string; code: string }[] = [];
let linkOfB: { id: string; code: string };

// A seeded generator, the seed in every failure's message: a failing run can be replayed.
const SEED = Number(process.env.ANALYTICS_SEED ?? Date.now() % 1_000_000);
let state = SEED;
const rand = () => {
  state = (state + 0x6d2b79f5) | 0;
  let x = Math.imul(state ^ (state >>> 15), 1 | state);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)];
const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));

const AGENTS = [
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
  'Mozilla/5.0 (iPad; CPU OS 16_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.0 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'curl/8.4.0',
  'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)',
  '',
];
const REFERERS = [
  '',
  'https://news.example/a',
  'https://NEWS.example:8443/b?c=d',
  'https://user@blog.example/x#y',
  'android-app://com.example.reader/',
  'not a url',
];
const UTM_VALUES = ['', 'newsletter', 'twitter', 'spring sale', 'a,b"c'];
const PLACES = [
  ['DE', 'BE', 'Berlin'],
  ['DE', 'BY', 'Munich'],
  ['US', 'CA', 'San Francisco'],
  ['FR', '', ''],
  ['', '', ''],
];
const WINDOW_START = Date.parse('2026-03-01T00:00:00Z');
const WINDOW_MS = 5 * 86_400_000;

function randomQuery(): string {
  const parts: string[] = [];
  for (const k of ['utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content']) {
    const v = pick(UTM_VALUES);
    if (v) parts.push(`${k}=${encodeURIComponent(v)}`);
  }
  if (rand() < 0.2) parts.push('other=1');
  return parts.join('&');
}

function randomClick(link: { id: string; code: string }, collectionId: string): RawClick {
  const [country, region, city] = pick(PLACES);
  return {
    collectionId,
    linkId: link.id,
    code: link.code,
    destinationUrl: 'https://dest.example/',
    at: new Date(WINDOW_START + Math.floor(rand() * WINDOW_MS)),
    ip: `203.0.113.${int(1, 12)}`,
    userAgent: pick(AGENTS),
    referer: pick(REFERERS),
    proxyCountry: country,
    proxyRegion: region,
    proxyCity: city,
    query: randomQuery(),
    trigger: rand() < 0.25 ? 'qr' : 'link',
    route: pick(['destination', 'rule:0', 'variant:0', 'variant:1']),
  };
}

/** Records clicks through the real recorder, earliest first, in batches flushed one by one. */
async function record(clicks: RawClick[]) {
  clicks.sort((x, y) => x.at.getTime() - y.at.getTime());
  const links = t.app.services.links;
  for (let i = 0; i < clicks.length; i += 37) {
    for (const c of clicks.slice(i, i + 37)) links.redirects.recordClick(c);
    await links.redirects.flush();
  }
}

interface Row {
  collection_id: string;
  link_id: string;
  id: number;
  clicked_at: Date;
  country: string;
  region: string;
  city: string;
  device_type: string;
  browser: string;
  os: string;
  referer: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  utm_term: string;
  utm_content: string;
  trigger: string;
  route: string;
  visitor: string;
}

const stored = async (collectionId: string) =>
  (
    await t.testDb.db.query<Row>(
      `SELECT collection_id, link_id, id, clicked_at, country, region, city, device_type, browser, os, referer,
         utm_source, utm_medium, utm_campaign, utm_term, utm_content, trigger, route, visitor
       FROM link_clicks WHERE collection_id = $1 ORDER BY clicked_at, id`,
      [collectionId],
    )
  ).rows;

// --- the brute force ----------------------------------------------------------------------------

function host(referer: string): string {
  if (referer === '') return '';
  try {
    return new URL(referer).hostname.toLowerCase() || referer.slice(0, 100);
  } catch {
    return referer.slice(0, 100);
  }
}

const valueIn: Record<string, (r: Row) => string> = {
  country: (r) => r.country,
  region: (r) => r.region,
  city: (r) => r.city,
  device: (r) => r.device_type,
  browser: (r) => r.browser,
  os: (r) => r.os,
  referer: (r) => host(r.referer),
  referer_url: (r) => r.referer,
  utm_source: (r) => r.utm_source,
  utm_medium: (r) => r.utm_medium,
  utm_campaign: (r) => r.utm_campaign,
  utm_term: (r) => r.utm_term,
  utm_content: (r) => r.utm_content,
  trigger: (r) => r.trigger,
  link: (r) => r.link_id,
  route: (r) => r.route,
};
/** `route` is a link's own breakdown (its values name one link's ways), `link` the collection's. */
const LINK_GROUP_BY = Object.keys(valueIn).filter((g) => g !== 'link');
const COLLECTION_GROUP_BY = Object.keys(valueIn).filter((g) => g !== 'route');

const DAY = 86_400_000;
function bucketOf(interval: string, t: number): number {
  const d = new Date(t);
  if (interval === 'hour') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (interval === 'day') return day;
  if (interval === 'week') return day - ((d.getUTCDay() + 6) % 7) * DAY;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/**
 * The answer recomputed from the rows: `rows` are the scope's clicks (a link's or the
 * collection's), all of them, so that "first click of the visitor that day" looks before `from`.
 */
function bruteForce(
  rows: Row[],
  q: { from: string; to: string; interval: string; groupBy?: string; limit: number; includeBots: boolean },
) {
  const seen = new Set<string>();
  const from = Date.parse(q.from);
  const to = Date.parse(q.to);
  const counted: { r: Row; unique: number }[] = [];
  for (const r of rows) {
    // rows are in (clicked_at, id) order: the first of a (day, visitor) is the unique one
    const key = `${r.clicked_at.toISOString().slice(0, 10)}|${r.visitor}`;
    const unique = r.visitor !== '' && !seen.has(key) ? 1 : 0;
    seen.add(key);
    const at = r.clicked_at.getTime();
    if (at < from || at >= to) continue;
    if (!q.includeBots && r.device_type === 'bot') continue;
    counted.push({ r, unique });
  }
  const series = new Map<number, { clicks: number; uniques: number }>();
  for (let s = bucketOf(q.interval, from); s < to; ) {
    series.set(s, { clicks: 0, uniques: 0 });
    const next = bucketOf(
      q.interval,
      s + (q.interval === 'hour' ? 3_600_000 : q.interval === 'month' ? 32 * DAY : DAY),
    );
    s = q.interval === 'week' ? s + 7 * DAY : next;
  }
  const totals = { clicks: 0, uniques: 0 };
  const groups = new Map<string, { clicks: number; uniques: number }>();
  for (const { r, unique } of counted) {
    const s = series.get(bucketOf(q.interval, r.clicked_at.getTime()));
    if (!s) throw new Error('a click outside the series');
    s.clicks++;
    s.uniques += unique;
    totals.clicks++;
    totals.uniques += unique;
    if (q.groupBy) {
      const v = valueIn[q.groupBy](r).slice(0, 500);
      const g = groups.get(v) ?? { clicks: 0, uniques: 0 };
      g.clicks++;
      g.uniques += unique;
      groups.set(v, g);
    }
  }
  const items = [...groups.entries()]
    .map(([value, c]) => ({ value, ...c }))
    .sort((x, y) => y.clicks - x.clicks || (x.value < y.value ? -1 : x.value > y.value ? 1 : 0));
  const other = { clicks: 0, uniques: 0 };
  for (const i of items.slice(q.limit)) {
    other.clicks += i.clicks;
    other.uniques += i.uniques;
  }
  return {
    totals,
    series: [...series.entries()].map(([start, c]) => ({ start: new Date(start).toISOString(), ...c })),
    breakdown: q.groupBy ? { groupBy: q.groupBy, items: items.slice(0, q.limit), other } : undefined,
  };
}

const INTERVALS = ['hour', 'day', 'week', 'month'] as const;

/** A random window inside (and around) the data, with an interval whose buckets it can hold. */
function randomQuery2(groupBy: string | undefined, includeBots: boolean) {
  const interval = pick(INTERVALS);
  const start = WINDOW_START - DAY + Math.floor(rand() * WINDOW_MS);
  const end = start + 1 + Math.floor(rand() * (WINDOW_START + WINDOW_MS + DAY - start));
  const limit = int(1, 6);
  return {
    from: new Date(start).toISOString(),
    to: new Date(end).toISOString(),
    interval,
    groupBy,
    limit,
    includeBots,
  };
}

const queryString = (q: Record<string, unknown>) =>
  Object.entries(q)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

const analytics = (collectionId: string, path: string, query: string, headers: Record<string, string>) =>
  t.inject({ method: 'GET', url: `/admin/collection/${collectionId}/links${path}?${query}`, headers });

beforeAll(async () => {
  t = await createTestApp({ CLICK_FLUSH_MS: '60000', ROLE: 'api', TRUSTED_PROXIES: '127.0.0.1' });
  ({ a, b } = await twoCollections(t));
  for (let i = 0; i < 4; i++) {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/links`,
      headers: a.auth,
      payload: { url: `https://a.example/${i}` },
    });
    linksOfA.push(res.json());
  }
  linkOfB = (
    await t.inject({
      method: 'POST',
      url: `/admin/collection/${b.id}/links`,
      headers: b.auth,
      payload: { url: 'https://b.example/' },
    })
  ).json();
  const clicks = [
    ...Array.from({ length: 700 }, () => randomClick(pick(linksOfA), a.id)),
    // The other side has data too, in the same hours, from the same visitors.
    ...Array.from({ length: 150 }, () => randomClick(linkOfB, b.id)),
  ];
  await record(clicks);
}, 120_000);
afterAll(() => t.close());

describe('analytics equal a brute-force count over the stored clicks', () => {
  it('stored every click, enriched', async () => {
    const rows = await stored(a.id);
    expect(rows.length).toBe(700);
    expect(rows.some((r) => r.device_type === 'bot')).toBe(true);
    expect(rows.some((r) => r.utm_source === 'spring sale')).toBe(true);
    expect(rows.every((r) => r.visitor.length === 22)).toBe(true);
  });

  for (const includeBots of [false, true]) {
    it(`a link's analytics, every groupBy (includeBots=${includeBots}, seed ${SEED})`, async () => {
      const all = await stored(a.id);
      for (const groupBy of [undefined, ...LINK_GROUP_BY]) {
        const link = pick(linksOfA);
        const q = randomQuery2(groupBy, includeBots);
        const res = await analytics(a.id, `/${link.id}/analytics`, queryString(q), a.auth);
        expect(res.statusCode, `${res.body} (seed ${SEED})`).toBe(200);
        const body = res.json();
        const expected = bruteForce(
          all.filter((r) => r.link_id === link.id),
          { ...q, from: body.from, to: body.to },
        );
        expect(body.linkId).toBe(link.id);
        expect(body.from, `seed ${SEED}`).toBe(q.from);
        expect(body.totals, `totals ${queryString(q)} (seed ${SEED})`).toEqual(expected.totals);
        expect(
          body.series.map(({ start, clicks, uniques }: { start: string; clicks: number; uniques: number }) => ({
            start,
            clicks,
            uniques,
          })),
          `series ${queryString(q)} (seed ${SEED})`,
        ).toEqual(expected.series);
        expect(body.breakdown, `breakdown ${queryString(q)} (seed ${SEED})`).toEqual(expected.breakdown);
      }
    });

    it(`a link's analytics narrowed by one or two filters, each dimension (includeBots=${includeBots}, seed ${SEED})`, async () => {
      const all = await stored(a.id);
      for (const dim of LINK_GROUP_BY) {
        const link = pick(linksOfA);
        const ofLink = all.filter((r) => r.link_id === link.id);
        // A value the link's clicks have (or, now and then, one they do not), and maybe a second dimension.
        const filters: Record<string, string> = { [dim]: rand() < 0.9 ? valueIn[dim](pick(ofLink)) : 'none-such' };
        const second = pick(LINK_GROUP_BY);
        if (rand() < 0.5 && second !== dim) filters[second] = valueIn[second](pick(ofLink));
        const q = randomQuery2(pick([undefined, ...LINK_GROUP_BY]), includeBots);
        const res = await analytics(a.id, `/${link.id}/analytics`, queryString({ ...q, ...filters }), a.auth);
        expect(res.statusCode, `${res.body} (seed ${SEED})`).toBe(200);
        const body = res.json();
        // Uniques among the narrowed clicks: the first of a visitor's day that matches.
        const matching = ofLink.filter((r) =>
          Object.entries(filters).every(([g, v]) => valueIn[g](r).slice(0, 500) === v),
        );
        const expected = bruteForce(matching, { ...q, from: body.from, to: body.to });
        const what = `${queryString({ ...q, ...filters })} (seed ${SEED})`;
        expect(body.totals, `totals ${what}`).toEqual(expected.totals);
        expect(body.breakdown, `breakdown ${what}`).toEqual(expected.breakdown);
      }
    });

    it(`the collection's analytics, every groupBy (includeBots=${includeBots}, seed ${SEED})`, async () => {
      const all = await stored(a.id);
      for (const groupBy of [undefined, ...COLLECTION_GROUP_BY]) {
        const q = randomQuery2(groupBy, includeBots);
        const res = await analytics(a.id, '/analytics', queryString(q), a.auth);
        expect(res.statusCode, `${res.body} (seed ${SEED})`).toBe(200);
        const body = res.json();
        // The rollup counts whole hours: the window answered is the asked one widened to them.
        const hour = 3_600_000;
        expect(Date.parse(body.from)).toBe(Math.floor(Date.parse(q.from) / hour) * hour);
        expect(Date.parse(body.to)).toBe(Math.ceil(Date.parse(q.to) / hour) * hour);
        const expected = bruteForce(all, { ...q, from: body.from, to: body.to });
        expect(body.linkId).toBeUndefined();
        expect(body.totals, `totals ${queryString(q)} (seed ${SEED})`).toEqual(expected.totals);
        expect(
          body.series.map(({ start, clicks, uniques }: { start: string; clicks: number; uniques: number }) => ({
            start,
            clicks,
            uniques,
          })),
          `series ${queryString(q)} (seed ${SEED})`,
        ).toEqual(expected.series);
        expect(body.breakdown, `breakdown ${queryString(q)} (seed ${SEED})`).toEqual(expected.breakdown);
      }
    });
  }

  it('uniques of a whole day are its distinct visitors; the breakdown and the series add up to the totals', async () => {
    const all = (await stored(a.id)).filter((r) => r.device_type !== 'bot');
    const day = '2026-03-02';
    const visitors = new Set(all.filter((r) => r.clicked_at.toISOString().startsWith(day)).map((r) => r.visitor));
    const res = await analytics(
      a.id,
      '/analytics',
      `from=${day}&to=${day}&interval=hour&groupBy=link&limit=100`,
      a.auth,
    );
    const body = res.json();
    expect(body.totals.uniques).toBe(visitors.size);
    const sum = (list: { clicks: number; uniques: number }[]) =>
      list.reduce((s, x) => ({ clicks: s.clicks + x.clicks, uniques: s.uniques + x.uniques }), {
        clicks: 0,
        uniques: 0,
      });
    expect(sum(body.series)).toEqual(body.totals);
    expect(sum([...body.breakdown.items, body.breakdown.other])).toEqual(body.totals);
    const link = linksOfA[0];
    const ofLink = new Set(
      all.filter((r) => r.link_id === link.id && r.clicked_at.toISOString().startsWith(day)).map((r) => r.visitor),
    );
    const one = (await analytics(a.id, `/${link.id}/analytics`, `from=${day}&to=${day}`, a.auth)).json();
    expect(one.totals.uniques).toBe(ofLink.size);
  });

  it('names each series bucket as the aggregates do', async () => {
    const res = await analytics(
      a.id,
      '/analytics',
      'from=2026-02-27T10:30Z&to=2026-03-02T01:00Z&interval=week',
      a.auth,
    );
    const body = res.json();
    expect(body.from).toBe('2026-02-27T10:00:00.000Z');
    expect(body.series.map((s: { bucket: string; start: string }) => [s.bucket, s.start])).toEqual([
      ['2026-W09', '2026-02-23T00:00:00.000Z'],
      ['2026-W10', '2026-03-02T00:00:00.000Z'],
    ]);
    const month = (await analytics(a.id, '/analytics', 'from=2026-02-27&to=2026-03-01&interval=month', a.auth)).json();
    expect(month.series.map((s: { bucket: string }) => s.bucket)).toEqual(['2026-02', '2026-03']);
    const hour = (
      await analytics(a.id, '/analytics', 'from=2026-03-01T10:00Z&to=2026-03-01T11:00Z&interval=hour', a.auth)
    ).json();
    expect(hour.series.map((s: { bucket: string }) => s.bucket)).toEqual(['2026-03-01T10:00:00Z']);
  });
});

describe('capture', () => {
  it('classifies, parses and hashes a real redirect’s click', async () => {
    const res = await t.inject({
      method: 'GET',
      url: `/l/${linksOfA[1].code}?utm_source=mail&utm_medium=email&utm_campaign=launch&utm_term=t&utm_content=c`,
      headers: {
        'user-agent': AGENTS[1],
        referer: 'https://Search.Example/q?x=1',
        'x-forwarded-for': '198.51.100.23',
        'x-vercel-ip-country': 'DE',
        'x-vercel-ip-country-region': 'BE',
        'x-vercel-ip-city': 'Berlin',
      },
    });
    expect(res.statusCode).toBe(302);
    await t.app.services.links.redirects.flush();
    const { rows } = await t.testDb.db.query<Row & { ip_address: string }>(
      `SELECT * FROM link_clicks WHERE collection_id = $1 AND link_id = $2 AND ip_address = '198.51.100.23'`,
      [a.id, linksOfA[1].id],
    );
    expect(rows).toHaveLength(1);
    const c = rows[0];
    expect([c.country, c.region, c.city, c.device_type, c.browser, c.os]).toEqual([
      'DE',
      'BE',
      'Berlin',
      'desktop',
      'Chrome',
      'Windows',
    ]);
    expect([c.utm_source, c.utm_medium, c.utm_campaign, c.utm_term, c.utm_content]).toEqual([
      'mail',
      'email',
      'launch',
      't',
      'c',
    ]);
    expect(c.trigger).toBe('link');
    // The visitor is no form of the address: a keyed hash under today's salt.
    expect(c.visitor).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(c.visitor).not.toContain('198');
  });

  it('stores a click whose UTM values hold what text cannot (a NUL), without it', async () => {
    const res = await t.inject({
      method: 'GET',
      url: `/l/${linksOfA[3].code}?utm_source=a%00b&utm_campaign=${'x'.repeat(300)}`,
      headers: { 'user-agent': 'nul-test' },
    });
    expect(res.statusCode).toBe(302);
    await t.app.services.links.redirects.flush();
    const { rows } = await t.testDb.db.query<{ utm_source: string; utm_campaign: string }>(
      `SELECT utm_source, utm_campaign FROM link_clicks WHERE link_id = $1 AND user_agent = 'nul-test'`,
      [linksOfA[3].id],
    );
    expect(rows.map((r) => [r.utm_source, r.utm_campaign.length])).toEqual([['ab', 200]]);
  });

  it('takes the region from the GeoIP database, else from a trusted proxy (of the same country only)', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'geoip-')), 'city.mmdb');
    writeMmdb(path, {
      '203.0.113.0/24': {
        country: { iso_code: 'DE', names: { en: 'Germany' } },
        subdivisions: [{ iso_code: 'BY', names: { en: 'Bavaria' } }],
        city: { names: { en: 'Munich' } },
      },
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
      const link = (
        await s.inject({
          method: 'POST',
          url: `/admin/collection/${c.id}/links`,
          headers: c.auth,
          payload: { url: 'https://geo.example/' },
        })
      ).json();
      for (const client of ['203.0.113.9', '198.51.100.7', '192.0.2.1']) {
        const res = await s.inject({
          method: 'GET',
          url: `/l/${link.code}`,
          headers: { 'x-forwarded-for': client, 'x-vercel-ip-country': 'FR', 'x-vercel-ip-country-region': 'IDF' },
        });
        expect(res.statusCode).toBe(302);
      }
      await s.app.services.links.redirects.flush();
      const { rows } = await s.testDb.db.query<{ ip_address: string; place: string }>(
        `SELECT ip_address, country || '/' || region || '/' || city AS place FROM link_clicks WHERE link_id = $1`,
        [link.id],
      );
      expect(Object.fromEntries(rows.map((r) => [r.ip_address, r.place]))).toEqual({
        '203.0.113.9': 'DE/BY/Munich',
        '198.51.100.7': 'JP//', // the database knows the country only: no region of another country
        '192.0.2.1': 'FR/IDF/', // unknown to the database: the trusted proxy's headers
      });
    } finally {
      await s.close();
    }
  });

  it('gives a visitor one hash a day, another the next day, and forgets past days’ salts', async () => {
    const link = linksOfA[2];
    const base = { ...randomClick(link, a.id), ip: '192.0.2.77', userAgent: AGENTS[2] };
    await record([
      { ...base, at: new Date('2026-04-01T01:00:00Z') },
      { ...base, at: new Date('2026-04-01T23:00:00Z') },
      { ...base, at: new Date('2026-04-02T01:00:00Z') },
    ]);
    const { rows } = await t.testDb.db.query<{ visitor: string }>(
      `SELECT visitor FROM link_clicks WHERE link_id = $1 AND ip_address = '192.0.2.77' ORDER BY clicked_at`,
      [link.id],
    );
    expect(rows[0].visitor).toBe(rows[1].visitor);
    expect(rows[2].visitor).not.toBe(rows[1].visitor);
    const saltsOf = async () =>
      (
        await t.testDb.db.query<{ day: string }>(`SELECT to_char(day, 'YYYY-MM-DD') AS day FROM link_visitor_salts`)
      ).rows.map((r) => r.day);
    expect(await saltsOf()).toContain('2026-04-01');
    const forgotten = await t.app.services.links.analytics.forgetPastVisitors(new Date('2026-04-02T12:00:00Z'));
    expect(forgotten.salts).toBeGreaterThan(0);
    const left = await saltsOf();
    expect(left).toContain('2026-04-01'); // yesterday's stays: clicks buffered over midnight
    expect(left).not.toContain('2026-03-31');
    expect(left.every((d) => d >= '2026-04-01')).toBe(true);
    t.app.services.links.clickRecorder.visitors.clear();
  });
});

describe('tenant boundary', () => {
  it('counts only the collection’s own clicks, and hides the other’s link', async () => {
    const window = 'from=2026-02-28&to=2026-03-06&includeBots=true';
    const ofA = (await analytics(a.id, '/analytics', window, a.auth)).json();
    const ofB = (await analytics(b.id, '/analytics', window, b.auth)).json();
    expect(ofA.totals.clicks).toBe(700);
    expect(ofB.totals.clicks).toBe(150);
    const byLink = (await analytics(a.id, '/analytics', `${window}&groupBy=link&limit=100`, a.auth)).json();
    expect(byLink.breakdown.items.map((i: { value: string }) => i.value)).not.toContain(linkOfB.id);
    // From the wrong side: the other collection's link through one's own path is unknown,
    // one's credential on the other's path refused.
    expect((await analytics(a.id, `/${linkOfB.id}/analytics`, window, a.auth)).statusCode).toBe(404);
    expect((await analytics(b.id, `/${linkOfB.id}/analytics`, window, a.auth)).statusCode).toBe(401);
    expect((await analytics(b.id, '/analytics', window, a.auth)).statusCode).toBe(401);
    expect((await analytics(a.id, `/${linkOfB.id}/clicks.csv`, '', a.auth)).statusCode).toBe(404);
    expect((await analytics(b.id, '/clicks.csv', '', a.auth)).statusCode).toBe(401);
    // A user token is no admin.
    expect((await analytics(a.id, '/analytics', window, a.userAuth)).statusCode).toBe(401);
  });
});

describe('CSV export', () => {
  const parse = (csv: string) => {
    const lines = csv.trimEnd().split('\n');
    return { header: lines[0].split(','), rows: lines.slice(1) };
  };

  it('streams a link’s clicks in time order, bots left out unless asked', async () => {
    const link = linksOfA[0];
    const all = (await stored(a.id)).filter((r) => r.link_id === link.id);
    const res = await analytics(a.id, `/${link.id}/clicks.csv`, '', a.auth);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const { header, rows } = parse(res.body);
    expect(header.slice(0, 4)).toEqual(['id', 'linkId', 'clickedAt', 'ipAddress']);
    const humans = all.filter((r) => r.device_type !== 'bot');
    expect(rows.map((l) => Number(l.split(',')[0]))).toEqual(humans.map((r) => r.id));
    const withBots = parse((await analytics(a.id, `/${link.id}/clicks.csv`, 'includeBots=true', a.auth)).body);
    expect(withBots.rows).toHaveLength(all.length);
    // A window, and a value with a comma and a quote written as CSV writes them.
    const windowed = parse(
      (await analytics(a.id, `/${link.id}/clicks.csv`, 'from=2026-03-02&to=2026-03-02&includeBots=true', a.auth)).body,
    );
    expect(windowed.rows).toHaveLength(all.filter((r) => r.clicked_at.toISOString().startsWith('2026-03-02')).length);
    if (all.some((r) => r.utm_source === 'a,b"c')) expect(withBots.rows.join('\n')).toContain('"a,b""c"');
  });

  it('streams the whole collection’s clicks, and none of another collection', async () => {
    const res = await analytics(a.id, '/clicks.csv', 'includeBots=true', a.auth);
    expect(res.statusCode).toBe(200);
    const ids = parse(res.body).rows.map((l) => l.split(',')[1]);
    const all = await stored(a.id);
    expect(ids.length).toBe(all.length);
    expect(new Set(ids)).toEqual(new Set(all.map((r) => r.link_id)));
    expect(ids).not.toContain(linkOfB.id);
  });
});

describe('refusals', () => {
  const cases: [string, string, RegExp][] = [
    ['/analytics', 'groupBy=colour', /groupBy/],
    ['/analytics', 'interval=minute', /interval/],
    ['/analytics', 'limit=0', /limit/],
    ['/analytics', 'limit=101', /limit/],
    ['/analytics', 'includeBots=maybe', /includeBots/],
    ['/analytics', 'from=yesterday', /from/],
    ['/analytics', 'from=2026-03-02&to=2026-03-01', /from must be before to/],
    ['/analytics', 'from=2023-01-01&to=2026-01-01', /at most 732/],
    ['/analytics', 'from=2026-01-01&to=2026-03-01&interval=hour', /1000 hour buckets/],
    ['/analytics', 'unknown=1', /unknown/],
    ['/analytics', `country=${'x'.repeat(501)}`, /country/],
    ['/clicks.csv', 'from=2026-03-02&to=2026-03-01', /from must be before to/],
  ];
  for (const [path, query, message] of cases) {
    it(`${path}?${query} is a 400 that says what is wrong`, async () => {
      const res = await analytics(a.id, path, query, a.auth);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.body).toMatch(message);
      const ofLink = await analytics(a.id, `/${linksOfA[0].id}${path}`, query, a.auth);
      expect(ofLink.statusCode, ofLink.body).toBe(400);
    });
  }

  it('the collection’s window cannot widen past the last hour a date-time names (found by the fuzz test)', async () => {
    const end = `to=${encodeURIComponent('9999-12-31T23:59:59.999Z')}`;
    const res = await analytics(a.id, '/analytics', end, a.auth);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ details: { field: 'to' } });
    expect(res.json().message).toMatch(/at most 9999-12-31T23:00:00.000Z/);
    // A link's analytics count exactly (no widening): the same `to` is answered as given.
    const ofLink = await analytics(a.id, `/${linksOfA[0].id}/analytics`, end, a.auth);
    expect(ofLink.statusCode, ofLink.body).toBe(200);
    expect(ofLink.json().to).toBe('9999-12-31T23:59:59.999Z');
  });

  it('a link’s analytics has no groupBy=link, the collection’s no groupBy=route, and an unknown link is 404', async () => {
    expect((await analytics(a.id, `/${linksOfA[0].id}/analytics`, 'groupBy=link', a.auth)).statusCode).toBe(400);
    const byRoute = await analytics(a.id, '/analytics', 'groupBy=route', a.auth);
    expect(byRoute.statusCode).toBe(400);
    expect(byRoute.body).toMatch(/groupBy/);
    expect((await analytics(a.id, '/lnk_missing/analytics', '', a.auth)).statusCode).toBe(404);
    expect((await analytics(a.id, '/lnk_missing/clicks.csv', '', a.auth)).statusCode).toBe(404);
  });
});
