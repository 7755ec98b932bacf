/**
 * The referer URL breakdown of a collection (a ranked dim: migration 0650,
 * `rankedTop` in src/modules/links/analytics.repository.ts) against a brute-force count over
 * the stored clicks. Clicks of many referer URLs, skewed as real traffic is (a few pages bring
 * most clicks, a long tail brings one or two each), go through the real recorder over a month's
 * end, so windows cross it. Then:
 * - the months kept by the click batches equal the clicks' own counts per month and value;
 * - `rankedTop` called with small and large `k` over random windows: whenever it answers, the
 *   answer is exact, and both outcomes occur (decided by the bound, and left to the grouping);
 * - over HTTP, random windows, limits and bots rule give the brute-force answer;
 * - the other collection has more clicks of the same pages, in the same hours, and counts in
 *   nothing of the first one's answers (nor its months);
 * - migration 0650 counts the months of the rollup rows stored before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../src/db/index.ts';
import { rankedTop } from '../src/modules/links/analytics.repository.ts';
import type { RawClick } from '../src/modules/links/clicks.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { createTestDbBefore } from './helpers/db.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

const SEED = Number(process.env.ANALYTICS_SEED ?? Date.now() % 1_000_000);
let state = SEED;
const rand = () => {
  state = (state + 0x6d2b79f5) | 0;
  let x = Math.imul(state ^ (state >>> 15), 1 | state);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};
const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Six days before March and five in it. */
const START = Date.parse('2026-02-23T00:00:00Z');
const SPAN = 11 * DAY;
const REFERER_DIM = 8;

const BOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const PERSON = 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0';

/** A referer: none now and then, a few pages often, a long tail of pages seen once or twice. */
function referer(): string {
  const r = rand();
  if (r < 0.1) return '';
  if (r < 0.5) return `https://news.example/top/${Math.floor(rand() * rand() * 12)}`;
  return `https://site${int(0, 30)}.example/p/${int(0, 400)}`;
}

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

interface Stored {
  clicked_at: Date;
  referer: string;
  device_type: string;
  visitor: string;
}

const stored = async (collectionId: string) =>
  (
    await t.testDb.db.query<Stored>(
      `SELECT clicked_at, referer, device_type, visitor FROM link_clicks WHERE collection_id = $1 ORDER BY clicked_at, id`,
      [collectionId],
    )
  ).rows;

/** The breakdown the service answers, computed from the clicks (uniques: a visitor's first of the UTC day). */
function bruteForce(rows: Stored[], q: { from: number; to: number; limit: number; includeBots: boolean }) {
  const seen = new Set<string>();
  const groups = new Map<string, { clicks: number; uniques: number }>();
  const all = { clicks: 0, uniques: 0 };
  for (const r of rows) {
    const key = `${r.clicked_at.toISOString().slice(0, 10)}|${r.visitor}`;
    const unique = r.visitor !== '' && !seen.has(key) ? 1 : 0;
    seen.add(key);
    const at = r.clicked_at.getTime();
    if (at < q.from || at >= q.to || (!q.includeBots && r.device_type === 'bot')) continue;
    const g = groups.get(r.referer) ?? { clicks: 0, uniques: 0 };
    g.clicks++;
    g.uniques += unique;
    groups.set(r.referer, g);
    all.clicks++;
    all.uniques += unique;
  }
  const items = [...groups.entries()]
    .map(([value, c]) => ({ value, ...c }))
    .sort((x, y) => y.clicks - x.clicks || (x.value < y.value ? -1 : x.value > y.value ? 1 : 0))
    .slice(0, q.limit);
  const other = {
    clicks: all.clicks - items.reduce((s, i) => s + i.clicks, 0),
    uniques: all.uniques - items.reduce((s, i) => s + i.uniques, 0),
  };
  return { items, other };
}

/** A random window of whole hours inside (and around) the data, often across March 1st. */
function randomWindow() {
  const from = START - DAY + int(0, (SPAN + DAY) / HOUR - 1) * HOUR;
  const to = Math.min(from + int(1, 14 * 24) * HOUR, START + SPAN + DAY);
  return { from, to, limit: int(1, 12), includeBots: rand() < 0.3 };
}

beforeAll(async () => {
  t = await createTestApp({ CLICK_FLUSH_MS: '60000', ROLE: 'api' });
  ({ a, b } = await twoCollections(t));
  const link = async (c: CollectionWithUser) =>
    (
      await t.inject({
        method: 'POST',
        url: `/admin/collection/${c.id}/links`,
        headers: c.auth,
        payload: { url: 'https://dest.example/' },
      })
    ).json() as { id: string; code: string };
  const la = await link(a);
  const lb = await link(b);
  const click = (c: CollectionWithUser, l: { id: string; code: string }, ref = referer()): RawClick => ({
    collectionId: c.id,
    linkId: l.id,
    code: l.code,
    destinationUrl: 'https://dest.example/',
    at: new Date(START + Math.floor(rand() * SPAN)),
    ip: `203.0.113.${int(1, 40)}`,
    userAgent: rand() < 0.1 ? BOT : PERSON,
    referer: ref,
    proxyCountry: '',
    proxyCity: '',
    query: '',
    trigger: 'link',
    route: 'destination',
  });
  const clicks = Array.from({ length: 1500 }, () => click(a, la));
  // The other side: more clicks of pages A has too, and of one A lacks, in the same hours.
  clicks.push(...Array.from({ length: 600 }, () => click(b, lb, rand() < 0.5 ? 'https://only-b.example/' : referer())));
  clicks.sort((x, y) => x.at.getTime() - y.at.getTime());
  const links = t.app.services.links;
  for (let i = 0; i < clicks.length; i += 50) {
    for (const c of clicks.slice(i, i + 50)) links.redirects.recordClick(c);
    await links.redirects.flush();
  }
}, 120_000);
afterAll(() => t.close());

describe('the referer URL breakdown (a ranked dim) equals a brute-force count', () => {
  it('keeps each month’s clicks per value as the clicks hold them, per collection', async () => {
    expect((await stored(a.id)).length).toBe(1500);
    expect((await stored(b.id)).length).toBe(600);
    for (const c of [a, b]) {
      const want = new Map<string, number>();
      for (const r of await stored(c.id)) {
        const key = `${r.clicked_at.toISOString().slice(0, 7)}-01|${r.referer}`;
        want.set(key, (want.get(key) ?? 0) + 1);
      }
      const { rows } = await t.testDb.db.query<{ month: string; value: string; clicks: number }>(
        `SELECT to_char(month, 'YYYY-MM-DD') AS month, value, clicks FROM link_click_value_months
         WHERE collection_id = $1 AND dim = ${REFERER_DIM}`,
        [c.id],
      );
      const got = new Map(rows.map((r) => [`${r.month}|${r.value}`, Number(r.clicks)]));
      expect(got, `months of ${c.id}`).toEqual(want);
    }
  });

  it(`rankedTop answers exactly whenever its bound decides, and leaves the rest to the grouping (seed ${SEED})`, async () => {
    const rows = await stored(a.id);
    let decided = 0;
    let undecided = 0;
    for (let i = 0; i < 60; i++) {
      const q = randomWindow();
      const want = bruteForce(rows, q);
      for (const k of [1, 3, 10, 40, 5000]) {
        const got = await rankedTop(
          t.testDb.db,
          a.id,
          {
            from: new Date(q.from),
            to: new Date(q.to),
            interval: 'day',
            includeBots: q.includeBots,
            limit: q.limit,
            dim: REFERER_DIM,
          },
          k,
        );
        const what = `k ${k}, ${JSON.stringify(q)} (seed ${SEED})`;
        if (got === undefined) {
          undecided++;
          // Every value of every month read: always decided.
          expect(k, what).toBeLessThan(5000);
          continue;
        }
        decided++;
        expect(
          got.filter((r) => !r.other).map(({ value, clicks, uniques }) => ({ value, clicks, uniques })),
          what,
        ).toEqual(want.items);
        const other = got.find((r) => r.other);
        expect({ clicks: other?.clicks, uniques: other?.uniques }, what).toEqual(want.other);
      }
    }
    expect(decided).toBeGreaterThan(60);
    expect(undecided).toBeGreaterThan(0);
  });

  it(`answers over HTTP what the clicks hold, and nothing of the other collection (seed ${SEED})`, async () => {
    const rows = await stored(a.id);
    const rowsB = await stored(b.id);
    for (let i = 0; i < 40; i++) {
      const q = randomWindow();
      for (const [c, clicks] of [
        [a, rows],
        [b, rowsB],
      ] as const) {
        const res = await t.inject({
          method: 'GET',
          url: `/admin/collection/${c.id}/links/analytics?groupBy=referer_url&from=${new Date(q.from).toISOString()}&to=${new Date(q.to).toISOString()}&limit=${q.limit}&includeBots=${q.includeBots}`,
          headers: c.auth,
        });
        expect(res.statusCode, res.body).toBe(200);
        const want = bruteForce(clicks, q);
        expect(res.json().breakdown, `${c.id} ${JSON.stringify(q)} (seed ${SEED})`).toEqual({
          groupBy: 'referer_url',
          ...want,
        });
      }
    }
    // A's answers hold none of B's pages.
    const whole = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/links/analytics?groupBy=referer_url&from=${new Date(START).toISOString()}&to=${new Date(START + SPAN).toISOString()}&limit=100`,
      headers: a.auth,
    });
    expect(JSON.stringify(whole.json().breakdown.items)).not.toContain('only-b.example');
  });
});

describe('migration 0650', () => {
  it('counts the months of the referer URLs the rollup held before it, per collection', async () => {
    const testDb = await createTestDbBefore('0650');
    try {
      const db = testDb.db;
      await db.query(`INSERT INTO collections (id, name) VALUES ('m1', 'm1'), ('m2', 'm2')`);
      // Daily and hourly rows of dim 8 (bots and people) over a month's end, and another dim's.
      await db.query(`
        INSERT INTO link_click_rollup (collection_id, dim, daily, hour, value, bot, clicks, uniques)
        SELECT 'm' || (1 + g % 2), d.dim, daily.d,
          CASE WHEN daily.d THEN date_trunc('day', t) ELSE date_trunc('hour', t) END,
          'https://r' || (g % 5) || '.example/', g % 3 = 0, 1 + g % 4, 0
        FROM generate_series(1, 40) AS g,
          LATERAL (SELECT timestamptz '2026-02-25T00:00:00Z' + g * interval '7 hours' AS t) x,
          (VALUES (true), (false)) AS daily (d), (VALUES (8), (3)) AS d (dim)`);
      await migrate(db);
      const { rows } = await db.query<{ collection_id: string; month: string; value: string; clicks: number }>(
        `SELECT collection_id, to_char(month, 'YYYY-MM') AS month, value, clicks FROM link_click_value_months
         ORDER BY 1, 2, 3`,
      );
      const want = new Map<string, number>();
      for (let g = 1; g <= 40; g++) {
        const month = new Date(Date.parse('2026-02-25T00:00:00Z') + g * 7 * HOUR).toISOString().slice(0, 7);
        const key = `m${1 + (g % 2)}|${month}|https://r${g % 5}.example/`;
        want.set(key, (want.get(key) ?? 0) + 1 + (g % 4));
      }
      expect(new Map(rows.map((r) => [`${r.collection_id}|${r.month}|${r.value}`, Number(r.clicks)]))).toEqual(want);
    } finally {
      await testDb.drop();
    }
  });
});
