/**
 * GET /admin/collection/{c}/links/{linkId}/clicks/stats: the series per hour or day (every
 * bucket of the window, labelled as aggregates label them) and the breakdowns by country,
 * device type and referer host with "other". Clicks are written at known times straight into
 * link_clicks, so buckets and edges are exact; one test goes through real redirects.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, superAuth, type TestApp } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let linkId: string;

const stats = (c: CollectionWithUser, id: string, query: string, headers: Record<string, string> = c.auth) =>
  t.inject({ method: 'GET', url: `/admin/collection/${c.id}/links/${id}/clicks/stats?${query}`, headers });

async function click(at: string, country: string, deviceType: string, referer: string) {
  await t.testDb.db.query(
    `INSERT INTO link_clicks (collection_id, link_id, clicked_at, country, device_type, referer)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [a.id, linkId, at, country, deviceType, referer],
  );
}

beforeAll(async () => {
  t = await createTestApp({ CLICK_FLUSH_MS: '5', ROLE: 'api' });
  ({ a, b } = await twoCollections(t));
  const res = await t.inject({
    method: 'POST',
    url: `/admin/collection/${a.id}/links`,
    headers: a.auth,
    payload: { url: 'https://stats.example/' },
  });
  linkId = res.json().id;
  await click('2026-02-28T23:59:59.999Z', 'GB', 'desktop', ''); // before the windows below
  await click('2026-03-01T10:05:00Z', 'DE', 'mobile', 'https://news.example/a');
  await click('2026-03-01T10:40:00Z', 'DE', 'desktop', 'https://NEWS.example:8443/b?c=d');
  await click('2026-03-01T12:00:00Z', 'FR', 'mobile', '');
  await click('2026-03-02T09:00:00Z', 'US', 'tablet', 'https://user@blog.example/x#y');
  await click('2026-03-03T00:00:00Z', 'US', 'desktop', 'android-app://com.example.reader/'); // after
});
afterAll(() => t.close());

describe('click stats', () => {
  it('counts per hour, every bucket of the window, empty ones as 0', async () => {
    const res = await stats(a, linkId, 'interval=hour&from=2026-03-01T10:00Z&to=2026-03-01T13:00Z&top=1');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      linkId,
      interval: 'hour',
      from: '2026-03-01T10:00:00.000Z',
      to: '2026-03-01T13:00:00.000Z',
      total: 3,
      series: [
        { bucket: '2026-03-01T10:00:00Z', start: '2026-03-01T10:00:00.000Z', count: 2 },
        { bucket: '2026-03-01T11:00:00Z', start: '2026-03-01T11:00:00.000Z', count: 0 },
        { bucket: '2026-03-01T12:00:00Z', start: '2026-03-01T12:00:00.000Z', count: 1 },
      ],
      // top=1: the first value, the rest summed.
      countries: { items: [{ value: 'DE', count: 2 }], other: 1 },
      deviceTypes: { items: [{ value: 'mobile', count: 2 }], other: 1 },
      referers: { items: [{ value: 'news.example', count: 2 }], other: 1 },
    });
  });

  it('counts per day; a date alone as `to` includes that day; referers by host, direct visits as ""', async () => {
    const res = await stats(a, linkId, 'interval=day&from=2026-03-01&to=2026-03-02');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.series).toEqual([
      { bucket: '2026-03-01', start: '2026-03-01T00:00:00.000Z', count: 3 },
      { bucket: '2026-03-02', start: '2026-03-02T00:00:00.000Z', count: 1 },
    ]);
    expect(body.to).toBe('2026-03-03T00:00:00.000Z');
    expect(body.total).toBe(4);
    // Most first, then by value.
    expect(body.countries).toEqual({
      items: [
        { value: 'DE', count: 2 },
        { value: 'FR', count: 1 },
        { value: 'US', count: 1 },
      ],
      other: 0,
    });
    expect(body.deviceTypes.items).toEqual([
      { value: 'mobile', count: 2 },
      { value: 'desktop', count: 1 },
      { value: 'tablet', count: 1 },
    ]);
    expect(body.referers.items).toEqual([
      { value: 'news.example', count: 2 },
      { value: '', count: 1 },
      { value: 'blog.example', count: 1 },
    ]);
  });

  it('takes a scheme other than http as a host too, and a window with no clicks answers zeros', async () => {
    const later = (await stats(a, linkId, 'interval=day&from=2026-03-03&to=2026-03-04')).json();
    expect(later.referers.items).toEqual([{ value: 'com.example.reader', count: 1 }]);
    const empty = (await stats(a, linkId, 'interval=day&from=2025-01-01&to=2025-01-02')).json();
    expect(empty).toMatchObject({
      total: 0,
      series: [{ count: 0 }, { count: 0 }],
      countries: { items: [], other: 0 },
      referers: { items: [], other: 0 },
    });
  });

  it('defaults to the last 48 hours per hour (30 days per day), ending now', async () => {
    const before = Date.now();
    const hourly = (await stats(a, linkId, 'interval=hour')).json();
    expect(Date.parse(hourly.to)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(hourly.to) - Date.parse(hourly.from)).toBe(48 * 3_600_000);
    expect([48, 49]).toContain(hourly.series.length); // the first bucket is partial unless on the hour
    const daily = (await stats(a, linkId, '')).json();
    expect(daily.interval).toBe('day');
    expect(Date.parse(daily.to) - Date.parse(daily.from)).toBe(30 * 86_400_000);
    expect(daily.series.at(-1).bucket).toBe(daily.to.slice(0, 10));
  });

  it('refuses a bad interval, a reversed window, a window of more than 1000 buckets and a bad time', async () => {
    for (const [query, says] of [
      ['interval=week', 'interval'],
      ['from=2026-03-02&to=2026-03-01', 'from must be before to'],
      ['interval=hour&from=2026-01-01&to=2026-02-12', '1000'],
      ['interval=day&from=2020-01-01&to=2023-01-01', '1000'],
      ['from=yesterday', 'from'],
      ['top=0', 'top'],
    ]) {
      const res = await stats(a, linkId, query);
      expect(res.statusCode, query).toBe(400);
      expect(JSON.stringify(res.json()), query).toContain(says);
    }
    // 1000 hours exactly is allowed.
    expect((await stats(a, linkId, 'interval=hour&from=2026-01-01T00:00Z&to=2026-02-11T16:00Z')).statusCode).toBe(200);
  });

  it('shows nothing of a link to another collection (401 on its path, 404 on its own)', async () => {
    const wrongPath = await stats(a, linkId, 'interval=day', b.auth);
    expect(wrongPath.statusCode).toBe(401);
    const ownPath = await stats(b, linkId, 'interval=day');
    expect(ownPath.statusCode).toBe(404);
    expect(ownPath.json().errorCode).toBe('NOT_FOUND');
    expect((await stats(a, linkId, 'interval=day', a.userAuth)).statusCode).toBe(401);
    expect((await stats(a, 'lnk_missing', 'interval=day')).statusCode).toBe(404);
    expect((await stats(a, linkId, 'interval=day&from=2026-03-01&to=2026-03-02', superAuth)).json().total).toBe(4);
  });

  it('counts real redirects by the device type parsed from their user agent', async () => {
    const link = (
      await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/links`,
        headers: a.auth,
        payload: { url: 'https://devices.example/' },
      })
    ).json();
    const iphone =
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
    const desktop =
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
    for (const [ua, referer] of [
      [iphone, 'https://social.example/p/1'],
      [iphone, 'https://social.example/p/2'],
      [iphone, ''],
      [desktop, ''],
      [desktop, 'https://search.example/?q=x'],
    ]) {
      const headers: Record<string, string> = { 'user-agent': ua };
      if (referer) headers.referer = referer;
      expect((await t.inject({ method: 'GET', url: `/l/${link.code}`, headers })).statusCode).toBe(302);
    }
    await t.app.services.links.redirects.flush();
    const body = (await stats(a, link.id, 'interval=hour')).json();
    expect(body.total).toBe(5);
    expect(body.deviceTypes.items).toEqual([
      { value: 'mobile', count: 3 },
      { value: 'desktop', count: 2 },
    ]);
    expect(body.referers.items).toEqual([
      { value: '', count: 2 },
      { value: 'social.example', count: 2 },
      { value: 'search.example', count: 1 },
    ]);
  });
});
