/**
 * The journeys page's funnel at issue 29's depth, in Chromium (test/helpers/console-browser.ts):
 * a journey of three steps and events built so that every figure is known beforehand (see
 * `seed`), read in the browser: the bars' counts and conversions, a conversion window and an
 * exclusion changing them, a breakdown's groups (top 2 and the rest), the times to convert and
 * their histogram, the trend with the previous period beside it, the people of a step page by
 * page, a recipient's events, and the people exported as CSV. Screenshots go to
 * test-results/console/ (funnel*.png; docs/console.md shows copies).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleRun,
  HAVE_BROWSER,
  overflowing,
  rows,
  SHOTS,
  signIn,
  startConsole,
  text,
  until,
} from './helpers/console-browser.ts';

const C = 'console-funnels';
const MIN = 60_000;
const DAY = 86_400_000;
const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** When u1…u7 enter: two days ago at 10:00 UTC (always in the past, always that day). */
const B = today - 2 * DAY + 10 * 60 * MIN;
/** When u20 and u21 enter: in the previous period of the week shown (nine days ago). */
const P = today - 9 * DAY + 10 * 60 * MIN;

let run: ConsoleRun;
let page: Page;
let key = '';

/**
 * Journey "Checkout": s1 = view, s2 = cart, s3 = buy (outcome success). u1…u7 enter at B
 * (metadata.plan pro, free, pro, free, none, free, pro); minutes after B:
 *
 * | user | events                                         | steps | within 1 h | coupon excluded s1→s3 |
 * | u1   | view 10, cart 20, buy 40                       | 3     | 3          | 3                     |
 * | u2   | view 5, cart 65, buy 180                       | 3     | 2          | 3                     |
 * | u3   | view 30, coupon 35, cart 40, buy 50            | 3     | 3          | 1                     |
 * | u4   | view 10, buy 15, cart 20                       | 2     | 2          | 2                     |
 * | u5   | view 10; a day later view, cart, buy (+10 min) | 3     | 3          | 3                     |
 * | u6   | nothing                                        | 0     | 0          | 0                     |
 * | u7   | view 20                                        | 1     | 1          | 1                     |
 *
 * Funnel: s1 7 → 6, s2 6 → 5, s3 5 → 4. Times to complete: s1 300, 600 ×3, 1,200, 1,800 s;
 * s2 600 ×3, 3,600, 87,000 s; s3 600 ×2, 1,200, 6,900 s. In the previous period u20 converts
 * and u21 only views.
 */
async function seed() {
  const call = (method: string, path: string, body?: unknown) => run.call(method, path, body, key);
  for (const id of ['enter', 'view', 'cart', 'buy', 'coupon']) {
    await call('POST', `/admin/collection/${C}/interactions`, { id, appId: 'shop' });
  }
  const journey = await call('POST', `/admin/collection/${C}/journeys`, {
    name: 'Checkout',
    journeyType: 'event_triggered',
    data: {
      steps: [
        { id: 's1', config: { interactionId: 'view' } },
        { id: 's2', config: { interactionId: 'cart' } },
        { id: 's3', config: { interactionId: 'buy' } },
      ],
    },
  });
  const append = (userId: string, interactionId: string, at: number, extra: Record<string, unknown> = {}) =>
    call('POST', `/admin/collection/${C}/interactions/append`, {
      interactionId,
      userId,
      outcome: interactionId === 'enter' ? 'entered' : 'success',
      timestamp: new Date(at).toISOString(),
      ...extra,
    });
  const plans: Record<string, string | undefined> = {
    u1: 'pro',
    u2: 'free',
    u3: 'pro',
    u4: 'free',
    u5: undefined,
    u6: 'free',
    u7: 'pro',
  };
  for (const [u, plan] of Object.entries(plans)) {
    await append(u, 'enter', B, { journeyId: journey.id, ...(plan ? { metadata: { plan } } : {}) });
  }
  const events: [string, string, number][] = [
    ['u1', 'view', 10],
    ['u1', 'cart', 20],
    ['u1', 'buy', 40],
    ['u2', 'view', 5],
    ['u2', 'cart', 65],
    ['u2', 'buy', 180],
    ['u3', 'view', 30],
    ['u3', 'coupon', 35],
    ['u3', 'cart', 40],
    ['u3', 'buy', 50],
    ['u4', 'view', 10],
    ['u4', 'buy', 15],
    ['u4', 'cart', 20],
    ['u5', 'view', 10],
    ['u5', 'view', 1450],
    ['u5', 'cart', 1460],
    ['u5', 'buy', 1470],
    ['u7', 'view', 20],
  ];
  for (const [u, interactionId, minutes] of events) await append(u, interactionId, B + minutes * MIN);
  for (const u of ['u20', 'u21']) await append(u, 'enter', P, { journeyId: journey.id });
  await append('u20', 'view', P + 10 * MIN);
  await append('u20', 'cart', P + 20 * MIN);
  await append('u20', 'buy', P + 30 * MIN);
  await append('u21', 'view', P + 10 * MIN);
}

beforeAll(async () => {
  if (!HAVE_BROWSER) return;
  run = await startConsole('console-funnels');
  page = run.page;
  await run.call('POST', '/platform/collections', { id: C, name: C });
  key = (await run.call('POST', `/admin/collection/${C}/api-keys`, { name: 'funnel test' })).key as string;
  await seed();
}, 180_000);

afterAll(async () => {
  await run?.stop();
});

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const show = () => page.getByRole('button', { name: 'Show', exact: true }).click();
const onBars = () =>
  page
    .locator('ol.funnel-bars li')
    .evaluateAll((lis) =>
      lis.map((li) =>
        [li.querySelector('.on-bar'), li.querySelector('.drop')].map((e) =>
          (e?.textContent ?? '').replace(/\s+/g, ' ').trim(),
        ),
      ),
    );
const completedColumn = async () =>
  (await rows(page.getByRole('table', { name: 'Steps', exact: true }))).map((r) => r.slice(2, 6));
const people = () => page.locator('[data-people]').getAttribute('data-people');

describe.skipIf(!HAVE_BROWSER)('the journeys page’s funnel in Chromium', () => {
  it('shows the bars with their conversion, the times to convert, the histogram and the trend against the previous period', async () => {
    await page.goto(`${run.api}/console/journeys`);
    await signIn(page, C, key);
    await page.getByRole('heading', { name: 'Journeys', level: 1 }).waitFor();
    await page.getByLabel('From', { exact: true }).fill(day(today - 6 * DAY));
    await page.getByLabel('To (included)').fill(day(today));
    await show();
    await until('the week’s funnel', completedColumn, (r) => r[0]?.[0] === '7');
    expect(await onBars()).toEqual([
      ['6 · 85.7 % of all · 85.7 % of entered', '1 of 7 dropped off (14.3 %)'],
      ['5 · 71.4 % of all · 83.3 % from the step before', '1 of 6 dropped off (16.7 %)'],
      ['4 · 57.1 % of all · 80 % from the step before', '1 of 5 dropped off (20 %)'],
    ]);
    expect(await rows(page.getByRole('table', { name: 'Steps', exact: true }))).toEqual([
      ['s1', 'view · success', '7', '6', '85.7 %', '85.7 %', '14 min', '10 min', '30 min', 'People of s1'],
      ['s2', 'cart · success', '6', '5', '83.3 %', '71.4 %', '5.1 h', '10 min', '24.2 h', 'People of s2'],
      ['s3', 'buy · success', '5', '4', '80 %', '57.1 %', '39 min', '10 min', '1.9 h', 'People of s3'],
    ]);
    expect(await rows(page.getByRole('table', { name: 'Time to convert per step' }))).toEqual([
      ['s1', '6', '14 min', '10 min', '30 min'],
      ['s2', '5', '5.1 h', '10 min', '24.2 h'],
      ['s3', '4', '39 min', '10 min', '1.9 h'],
    ]);

    // The histogram: step 2's by default, then step 1's.
    const histogram = (stepId: string) =>
      page.getByRole('table', { name: `Time to complete ${stepId}, by bucket`, includeHidden: true });
    await page.locator('[data-histogram="s2"] [data-drawn="true"]').waitFor();
    expect((await rows(histogram('s2'))).map((r) => r.slice(0, 2))).toEqual([
      ['0–1 min', '0'],
      ['1 min–5 min', '0'],
      ['5 min–15 min', '3'],
      ['15 min–1 h', '0'],
      ['1 h–6 h', '1'],
      ['6 h–1 d', '0'],
      ['1 d–3 d', '1'],
      ['3 d–7 d', '0'],
      ['7 d–14 d', '0'],
      ['14 d–30 d', '0'],
      ['≥ 30 d', '0'],
    ]);
    await page.getByLabel('Histogram of step').selectOption('s1');
    await page.locator('[data-histogram="s1"] [data-drawn="true"]').waitFor();
    expect((await rows(histogram('s1'))).map((r) => r[1])).toEqual([
      '0',
      '0',
      '4',
      '2',
      '0',
      '0',
      '0',
      '0',
      '0',
      '0',
      '0',
    ]);

    // The trend: seven days, everyone entered two days ago (7 → 4); the week before, u20 and
    // u21 entered nine days ago (2 → 1), in the same position.
    const trend = page.locator('[data-trend-buckets="7"][data-previous-buckets="7"]');
    await trend.locator('[data-drawn="true"]').waitFor();
    const expected = Array.from({ length: 7 }, (_, i) => {
      const [now, before] = [day(today - (6 - i) * DAY), day(today - (13 - i) * DAY)];
      return i === 4
        ? [now, '7', '4', '57.1 %', before, '2', '1', '50 %']
        : [now, '0', '0', '0 %', before, '0', '0', '0 %'];
    });
    expect(await rows(page.getByRole('table', { name: 'Conversion by entry', includeHidden: true }))).toEqual(expected);
    expect(await trend.locator('ul.legend li').allInnerTexts()).toEqual(['This period', 'Previous period']);
    expect(await trend.locator('.chart').getAttribute('aria-label')).toContain(
      `${day(today - 2 * DAY)} 57.1 %, before 50 %`,
    );
    await shot('funnel');
  });

  it('lists the people of a step, entered, converted and dropped off, page by page; a recipient’s events; the CSV export', async () => {
    await page.getByRole('button', { name: 'People of s2' }).click();
    await page.getByRole('heading', { name: 'People of step s2' }).waitFor();
    await page.getByLabel('Per page').selectOption('5');
    await until('entered s2, page 1', people, (v) => v === 'u1 u2 u3 u4 u5');
    await page.getByRole('navigation', { name: 'Pages of people' }).getByRole('button', { name: 'Next' }).click();
    await until('entered s2, page 2', people, (v) => v === 'u7');
    expect(
      await page
        .getByRole('navigation', { name: 'Pages of people' })
        .getByRole('button', { name: 'Next' })
        .isDisabled(),
    ).toBe(true);
    await page.getByRole('tab', { name: 'Converted (5)' }).click();
    await until('converted s2', people, (v) => v === 'u1 u2 u3 u4 u5');
    await page.getByRole('tab', { name: 'Dropped off (1)' }).click();
    await until('dropped at s2', people, (v) => v === 'u7');
    await page.locator('select[name="peopleStep"]').selectOption('s3');
    await until('dropped at s3', people, (v) => v === 'u4');

    await page.getByRole('button', { name: 'Events of u4' }).click();
    const events = page.getByRole('table', { name: 'Events of u4' });
    await events.waitFor();
    expect((await rows(events)).map((r) => r.slice(1, 3))).toEqual([
      ['enter', 'entered'],
      ['view', 'success'],
      ['buy', 'success'],
      ['cart', 'success'],
    ]);
    await shot('funnel-people');

    // The export of the same people: the job followed to its file.
    await page.getByRole('button', { name: 'Export CSV' }).click();
    await page.locator('[data-export-status="completed"]').waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    const iso = (minutes: number) => new Date(B + minutes * MIN).toISOString();
    expect(readFileSync((await download.path()) as string, 'utf8')).toBe(
      `recipientId,stepsCompleted,enteredAt,s1.completedAt,s2.completedAt,s3.completedAt\nu4,2,${iso(0)},${iso(10)},${iso(20)},\n`,
    );
  });

  it('changes the counts with a conversion window and an exclusion to the constructed ones', async () => {
    await page.getByLabel('Within').fill('1');
    await page.getByLabel('Unit').selectOption('hour');
    await show();
    // u2's purchase is 175 min after its view; u5 converts from its second view.
    await until('the funnel within an hour', completedColumn, (r) => r[2]?.[1] === '3');
    expect(await completedColumn()).toEqual([
      ['7', '6', '85.7 %', '85.7 %'],
      ['6', '5', '83.3 %', '71.4 %'],
      ['5', '3', '60 %', '42.9 %'],
    ]);
    expect((await onBars())[2][0]).toBe('3 · 42.9 % of all · 60 % from the step before');
    await shot('funnel-window');

    await page.getByLabel('Within').fill('');
    await page.getByRole('button', { name: 'Add an exclusion' }).click();
    await page.getByRole('group', { name: 'Exclusion 1' }).getByLabel('Interaction').fill('coupon');
    await show();
    // u3 used a coupon after its view: it stops at s1.
    await until('the funnel without coupons', completedColumn, (r) => r[1]?.[1] === '4');
    expect(await completedColumn()).toEqual([
      ['7', '6', '85.7 %', '85.7 %'],
      ['6', '4', '66.7 %', '57.1 %'],
      ['4', '3', '75 %', '42.9 %'],
    ]);
    await page.getByRole('group', { name: 'Exclusion 1' }).getByRole('button', { name: 'Remove' }).click();
  });

  it('breaks the funnel down by a metadata key: the top two values and the rest, and the people of a group', async () => {
    await page.locator('select[name="breakdown"]').selectOption('metadata');
    await page.getByRole('textbox', { name: 'Metadata key' }).fill('plan');
    await page.getByLabel('Top', { exact: true }).fill('2');
    await show();
    const table = page.getByRole('table', { name: 'Funnel by breakdown value' });
    await table.waitFor();
    expect(await rows(table)).toEqual([
      ['free', '3', '2 (66.7 %)', '2 (66.7 %)', '1 (33.3 %)', '33.3 %', 'People of free', ''],
      ['pro', '3', '3 (100 %)', '2 (66.7 %)', '2 (66.7 %)', '66.7 %', 'People of pro', ''],
      ['other values', '1', '1 (100 %)', '1 (100 %)', '1 (100 %)', '100 %', 'People of other values', ''],
    ]);
    // The whole funnel is unchanged by a breakdown.
    expect((await completedColumn()).map((r) => r[1])).toEqual(['6', '5', '4']);
    await shot('funnel-breakdown');

    await table.getByRole('button', { name: 'People of pro' }).click();
    await page.getByRole('heading', { name: 'People of step s1 · pro' }).waitFor();
    await until('entered, pro', people, (v) => v === 'u1 u3 u7');
    // The tabs count the group's people at the step.
    expect(await page.getByRole('tab').allInnerTexts()).toEqual(['Entered (3)', 'Converted (3)', 'Dropped off (0)']);
    await table.getByRole('button', { name: 'People of other values' }).click();
    await until('entered, the other values', people, (v) => v === 'u5');
    expect(await text(page.getByRole('heading', { name: /^People of step s1/ }))).toBe(
      'People of step s1 · other values',
    );
  });

  it('fits a phone (390 px): nothing wider than the screen; no error and no CSP refusal in the whole session', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // The charts shrink when they hear of the new size (a ResizeObserver): asked until then.
    await until(
      'the page at 390 px',
      () => overflowing(page),
      (out) => out.length === 0,
      5_000,
    );
    await shot('390-funnel');
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(run.pageErrors).toEqual([]);
    expect(run.logged.filter((l) => /Content Security Policy|Refused to|^error/i.test(l))).toEqual([]);
  });
});
