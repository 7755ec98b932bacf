/**
 * Issue 29's funnel options on a worked example (docs/journeys.md, "Funnel options"), the
 * routes' refusals, and the tenant boundary with data on both sides. The random comparison
 * with a brute-force computation is test/funnels-property.test.ts.
 *
 * Journey Checkout in collection A: u1…u5 enter at B (an `open` event carrying the journey id,
 * metadata.plan pro/free/pro/free/none); steps s1 = view, s2 = cart, s3 = buy (all success);
 * minutes after B:
 *   u1: view 10, cart 20, buy 40
 *   u2: view 5, cart 65, buy 180
 *   u3: view 30, coupon 35, cart 40, buy 50
 *   u4: view 10, buy 15, cart 20            (buys before the cart)
 *   u5: view 10, then a day later view +10, cart +20, buy +30
 * Collection B has the same interaction and user ids, with every user through all steps at
 * once and two more users: a query that read B's events would change A's numbers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { enqueue, waitFor, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: TestCollection;
let b: TestCollection;
let J: string;
let JB: string;

const B = Date.parse('2026-06-01T00:00:00.000Z');
const MIN = 60_000;
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const STEPS = [
  { stepId: 's1', interactionId: 'view' },
  { stepId: 's2', interactionId: 'cart' },
  { stepId: 's3', interactionId: 'buy' },
];

async function append(c: TestCollection, payload: Record<string, unknown>) {
  const res = await t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/interactions/append`,
    headers: c.auth,
    payload,
  });
  expect(res.statusCode, res.body).toBe(200);
}

async function journey(c: TestCollection): Promise<string> {
  const res = await t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/journeys`,
    headers: c.auth,
    payload: {
      name: 'Checkout',
      journeyType: 'event_triggered',
      data: { steps: STEPS.map((s) => ({ id: s.stepId, config: { interactionId: s.interactionId } })) },
    },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().id;
}

beforeAll(async () => {
  t = await createTestApp();
  a = await t.createCollection();
  b = await t.createCollection();
  for (const c of [a, b]) {
    for (const id of ['open', 'view', 'cart', 'buy', 'coupon']) {
      await t.inject({
        method: 'POST',
        url: `/admin/collection/${c.id}/interactions`,
        headers: c.auth,
        payload: { id, appId: 'shop' },
      });
    }
  }
  J = await journey(a);
  JB = await journey(b);
  const plans = ['pro', 'free', 'pro', 'free', undefined];
  const at: Record<string, [string, number][]> = {
    u1: [
      ['view', 10],
      ['cart', 20],
      ['buy', 40],
    ],
    u2: [
      ['view', 5],
      ['cart', 65],
      ['buy', 180],
    ],
    u3: [
      ['view', 30],
      ['coupon', 35],
      ['cart', 40],
      ['buy', 50],
    ],
    u4: [
      ['view', 10],
      ['buy', 15],
      ['cart', 20],
    ],
    u5: [
      ['view', 10],
      ['view', 1450],
      ['cart', 1460],
      ['buy', 1470],
    ],
  };
  for (const [i, u] of ['u1', 'u2', 'u3', 'u4', 'u5'].entries()) {
    await append(a, {
      interactionId: 'open',
      userId: u,
      outcome: 'success',
      journeyId: J,
      timestamp: iso(B),
      ...(plans[i] && { metadata: { plan: plans[i] } }),
    });
    for (const [interactionId, m] of at[u]) {
      await append(a, { interactionId, userId: u, outcome: 'success', timestamp: iso(B + m * MIN) });
    }
  }
  for (const u of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7']) {
    await append(b, {
      interactionId: 'open',
      userId: u,
      outcome: 'success',
      journeyId: JB,
      timestamp: iso(B),
      metadata: { plan: 'b' },
    });
    for (const [k, interactionId] of ['view', 'cart', 'buy'].entries()) {
      await append(b, { interactionId, userId: u, outcome: 'success', timestamp: iso(B + (k + 1) * 1000) });
    }
  }
});
afterAll(() => t.close());

const report = (c: TestCollection, journeyId: string, body: Record<string, unknown>) =>
  t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/journeys.analytics/${journeyId}/funnel-report`,
    headers: c.auth,
    payload: { stepMappings: [], ...body },
  });
const post = (c: TestCollection, path: string, body: Record<string, unknown>) =>
  t.inject({ method: 'POST', url: `/admin/collection/${c.id}${path}`, headers: c.auth, payload: body });
const counts = (steps: { enteredCount: number; completedCount: number }[]) =>
  steps.map((s) => [s.enteredCount, s.completedCount]);

describe('funnel options on the worked example', () => {
  it('without options the answer is as before: no option fields', async () => {
    const res = await report(a, J, {});
    expect(res.statusCode).toBe(200);
    expect(counts(res.json().steps)).toEqual([
      [5, 5],
      [5, 5],
      [5, 4],
    ]);
    expect(res.json().ordering).toBeUndefined();
    expect(res.json().steps[0].medianTimeToComplete).toBeUndefined();
  });

  it('a one-hour conversion window: the best attempt, inclusive bounds, median and p90', async () => {
    // The journey's steps are kept: once its progress is built, the rows answer (u5's chain is
    // beyond the hour from its first view, and is walked from its events); the events before.
    await waitFor(
      async () => ((await report(a, J, {})).headers['x-analytics-source'] === 'maintained' ? true : undefined),
      15_000,
      "J's journey progress",
    );
    const res = await report(a, J, { conversionWindow: { value: 1, unit: 'hour' } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(res.headers['x-analytics-source']).toBe('maintained');
    expect(body.ordering).toBe('ordered');
    // u2's cart at exactly 60 min counts; its buy (175 min) does not. u5 converts on its second view.
    expect(counts(body.steps)).toEqual([
      [5, 5],
      [5, 5],
      [5, 3],
    ]);
    const s1 = body.steps[0];
    // From entry to the anchor: 600, 300, 1800, 600 and u5's 1 day 10 min (87,000) seconds.
    expect(s1.avgTimeToComplete).toBe(18060);
    expect(s1.medianTimeToComplete).toBe(600);
    expect(s1.p90TimeToComplete).toBe(87000);
    expect(s1.timeToCompleteHistogram.find((h: { from: number }) => h.from === 300).count).toBe(3);
    expect(s1.timeToCompleteHistogram.find((h: { from: number }) => h.from === 86400).count).toBe(1);
  });

  it('strict ordering: u4’s buy between view and cart breaks its sequence', async () => {
    const res = await report(a, J, { ordering: 'strict' });
    expect(counts(res.json().steps)).toEqual([
      [5, 5],
      [5, 4],
      [4, 4],
    ]);
  });

  it('unordered: u4’s steps in any order count', async () => {
    const res = await report(a, J, { ordering: 'unordered' });
    expect(counts(res.json().steps)).toEqual([
      [5, 5],
      [5, 5],
      [5, 5],
    ]);
  });

  it('an exclusion: u3’s coupon between view and buy removes it after the view', async () => {
    const res = await report(a, J, { exclusions: [{ interactionId: 'coupon', fromStepId: 's1', toStepId: 's3' }] });
    expect(counts(res.json().steps)).toEqual([
      [5, 5],
      [5, 4],
      [4, 3],
    ]);
    const people = await post(a, `/journeys.analytics/${J}/people`, {
      exclusions: [{ interactionId: 'coupon', fromStepId: 's1', toStepId: 's3' }],
      stepId: 's2',
      status: 'dropped',
    });
    expect(people.json()).toEqual({ items: ['u3'], nextCursor: null });
  });

  it('a breakdown by metadata.plan, top 2 and the other group', async () => {
    const res = await report(a, J, { breakdown: { property: 'metadata.plan', limit: 2 } });
    const groups = res.json().breakdown;
    expect(groups.map((g: { value: string | null; other?: boolean }) => [g.value, g.other ?? false])).toEqual([
      ['free', false],
      ['pro', false],
      [null, true],
    ]);
    expect(counts(groups[0].steps)).toEqual([
      [2, 2],
      [2, 2],
      [2, 1],
    ]);
    expect(counts(groups[1].steps)).toEqual([
      [2, 2],
      [2, 2],
      [2, 2],
    ]);
    expect(counts(groups[2].steps)).toEqual([
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
  });

  it('an ad-hoc funnel: step 1 entered and completed at its event', async () => {
    const res = await post(a, '/funnels/query', {
      steps: STEPS.map(({ interactionId }) => ({ interactionId })),
      conversionWindow: { value: 1, unit: 'hour' },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.steps.map((s: { stepId: string }) => s.stepId)).toEqual(['step1', 'step2', 'step3']);
    expect(body.steps[0].outcome).toBeUndefined();
    expect(counts(body.steps)).toEqual([
      [5, 5],
      [5, 5],
      [5, 3],
    ]);
    expect(body.steps[0].medianTimeToComplete).toBe(0);
    expect(res.headers['x-analytics-source']).toBe('events');
  });

  it('trends by day with the previous period, and people paged', async () => {
    const res = await post(a, `/journeys.analytics/${J}/trends`, {
      periodStart: iso(B),
      periodEnd: iso(B + 2 * DAY),
      interval: 'day',
      compare: true,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().buckets.map((x: { entered: number; completed: number }) => [x.entered, x.completed])).toEqual([
      [5, 4],
      [0, 0],
    ]);
    expect(res.json().previous.buckets.map((x: { start: string }) => x.start)).toEqual([
      iso(B - 2 * DAY),
      iso(B - DAY),
    ]);
    const page1 = await post(a, `/journeys.analytics/${J}/people`, { stepId: 's3', status: 'completed', limit: 3 });
    expect(page1.json()).toEqual({ items: ['u1', 'u2', 'u3'], nextCursor: 'u3' });
    const page2 = await post(a, `/journeys.analytics/${J}/people`, {
      stepId: 's3',
      status: 'completed',
      limit: 3,
      cursor: 'u3',
    });
    expect(page2.json()).toEqual({ items: ['u5'], nextCursor: null });
  });
});

describe('refusals name the field', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'an exclusion naming an unknown step',
      { exclusions: [{ interactionId: 'coupon', fromStepId: 's1', toStepId: 'zz' }] },
      'exclusions[0].toStepId',
    ],
    [
      'an exclusion backwards',
      { exclusions: [{ interactionId: 'coupon', fromStepId: 's3', toStepId: 's1' }] },
      'exclusions[0]',
    ],
    ['a window over 366 days', { conversionWindow: { value: 60, unit: 'week' } }, 'conversionWindow'],
    [
      'step windows when unordered',
      { ordering: 'unordered', stepWindows: [{ stepId: 's2', value: 1, unit: 'hour' }] },
      'stepWindows[0]',
    ],
    [
      'exclusions when unordered',
      { ordering: 'unordered', exclusions: [{ interactionId: 'coupon', fromStepId: 's1', toStepId: 's2' }] },
      'exclusions[0]',
    ],
    [
      'a step window named twice',
      {
        stepWindows: [
          { stepId: 's2', value: 1, unit: 'hour' },
          { stepId: 's2', value: 2, unit: 'hour' },
        ],
      },
      'stepWindows[1]',
    ],
  ];
  it.each(cases)('%s', async (_, body, field) => {
    const res = await report(a, J, body);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details?.field).toBe(field);
  });

  it('schema refusals: an unknown unit, a property, too many steps or exclusions', async () => {
    for (const body of [
      { conversionWindow: { value: 1, unit: 'month' } },
      { breakdown: { property: 'userId' } },
      { breakdown: { property: 'constructor' } },
      { breakdown: { property: 'appId', limit: 51 } },
      { exclusions: Array.from({ length: 11 }, () => ({ interactionId: 'x', fromStepId: 's1', toStepId: 's2' })) },
    ]) {
      const res = await report(a, J, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    const many = await post(a, '/funnels/query', {
      steps: Array.from({ length: 21 }, () => ({ interactionId: 'view' })),
    });
    expect(many.statusCode).toBe(400);
  });

  it('ad-hoc: a window on step 1, a step id twice; trends: a long period, no period', async () => {
    const first = await post(a, '/funnels/query', {
      steps: [{ interactionId: 'view' }, { interactionId: 'buy' }],
      stepWindows: [{ stepId: 'step1', value: 1, unit: 'hour' }],
    });
    expect(first.statusCode).toBe(400);
    expect(first.json().details.field).toBe('stepWindows[0]');
    const twice = await post(a, '/funnels/query', {
      steps: [
        { interactionId: 'view', stepId: 'x' },
        { interactionId: 'buy', stepId: 'x' },
      ],
    });
    expect(twice.statusCode).toBe(400);
    const long = await post(a, `/journeys.analytics/${J}/trends`, {
      periodStart: iso(B),
      periodEnd: iso(B + 400 * DAY),
    });
    expect(long.statusCode).toBe(400);
    expect(long.json().details.field).toBe('periodEnd');
    const none = await post(a, `/journeys.analytics/${J}/trends`, {});
    expect(none.statusCode).toBe(400);
    const people = await post(a, `/journeys.analytics/${J}/people`, { stepId: 'nope' });
    expect(people.statusCode).toBe(400);
    expect(people.json().details.field).toBe('stepId');
    const group = await post(a, `/journeys.analytics/${J}/people`, { stepId: 's1', breakdownValue: 'pro' });
    expect(group.statusCode).toBe(400);
  });

  it('a breakdown by country is for a funnel from a link only', async () => {
    const res = await report(a, J, { breakdown: { property: 'country' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().details.field).toBe('breakdown.property');
  });
});

describe('a funnel from a link’s clicks, with options', () => {
  // Link lnk_w in A: clicks c1 (FR, click id ck1), c2 (DE, ck2), c3 (FR, no click id) at B + 1 day.
  // u9 views with ck1 a minute later, then carts and buys without it (its identity carries on);
  // u8 views with ck2 and stops.
  const D = B + DAY;
  beforeAll(async () => {
    await t.testDb.db.query(
      `INSERT INTO links (collection_id, id, code, destination_url, created_by) VALUES ($1, 'lnk_w', $2, 'https://example.com/', 'test')`,
      [a.id, `${a.id}-w`],
    );
    await t.testDb.db.query(
      `INSERT INTO link_clicks (collection_id, link_id, clicked_at, click_id, country)
       VALUES ($1, 'lnk_w', $2, 'ck1', 'FR'), ($1, 'lnk_w', $2, 'ck2', 'DE'), ($1, 'lnk_w', $2, NULL, 'FR')`,
      [a.id, iso(D)],
    );
    await append(a, {
      interactionId: 'view',
      userId: 'u9',
      outcome: 'success',
      clickId: 'ck1',
      timestamp: iso(D + MIN),
    });
    await append(a, { interactionId: 'cart', userId: 'u9', outcome: 'success', timestamp: iso(D + 2 * MIN) });
    await append(a, { interactionId: 'buy', userId: 'u9', outcome: 'success', timestamp: iso(D + 3 * MIN) });
    await append(a, {
      interactionId: 'view',
      userId: 'u8',
      outcome: 'success',
      clickId: 'ck2',
      timestamp: iso(D + 5 * MIN),
    });
  });
  const steps = [{ interactionId: 'link:lnk_w' }, ...STEPS.map(({ interactionId }) => ({ interactionId }))];

  it('a click without a click id completes step 1 only; country splits the clicks', async () => {
    const res = await post(a, '/funnels/query', {
      steps,
      periodStart: iso(D),
      conversionWindow: { value: 1, unit: 'hour' },
      breakdown: { property: 'country' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(counts(res.json().steps)).toEqual([
      [3, 3],
      [2, 2],
      [2, 1],
      [1, 1],
    ]);
    const groups = res.json().breakdown;
    expect(groups.map((g: { value: string }) => g.value)).toEqual(['FR', 'DE']);
    expect(counts(groups[0].steps)).toEqual([
      [2, 2],
      [1, 1],
      [1, 1],
      [1, 1],
    ]);
    expect(counts(groups[1].steps)).toEqual([
      [1, 1],
      [1, 1],
      [1, 0],
      [0, 0],
    ]);
    // The journey's funnel report from the link (link → cart → buy), in strict order: u9's view
    // is no step of it, so its cart is the next step event.
    const journeyRes = await report(a, J, {
      stepMappings: [{ stepId: 's1', interactionId: 'link:lnk_w' }],
      periodStart: iso(D),
      ordering: 'strict',
    });
    expect(journeyRes.statusCode, journeyRes.body).toBe(200);
    expect(counts(journeyRes.json().steps)).toEqual([
      [3, 3],
      [2, 1],
      [1, 1],
    ]);
  });

  it('people are not answered for clicks (400)', async () => {
    const res = await post(a, '/funnels/people', { steps, stepId: 'step2' });
    expect(res.statusCode).toBe(400);
  });
});

describe('the tenant boundary', () => {
  it('each collection sees its own events only, whichever side asks', async () => {
    const fromA = await post(a, '/funnels/query', {
      steps: STEPS.map(({ interactionId }) => ({ interactionId })),
      ordering: 'strict',
    });
    // u1…u5, and u8 and u9 of the link's test (view only; view, cart, buy).
    expect(counts(fromA.json().steps)).toEqual([
      [7, 7],
      [7, 5],
      [5, 5],
    ]);
    const fromB = await post(b, '/funnels/query', {
      steps: STEPS.map(({ interactionId }) => ({ interactionId })),
      ordering: 'strict',
    });
    expect(counts(fromB.json().steps)).toEqual([
      [7, 7],
      [7, 7],
      [7, 7],
    ]);
    const bj = await report(b, JB, { breakdown: { property: 'metadata.plan' } });
    expect(bj.json().breakdown.map((g: { value: string }) => g.value)).toEqual(['b']);
  });

  it('another collection’s journey is 404 on every route; another collection’s key is refused', async () => {
    const bodies: Record<string, Record<string, unknown>> = {
      'funnel-report': { stepMappings: [], ordering: 'strict' },
      trends: { periodStart: iso(B), periodEnd: iso(B + DAY) },
      people: { stepId: 's1' },
    };
    for (const [path, body] of Object.entries(bodies)) {
      const res = await post(a, `/journeys.analytics/${JB}/${path}`, body);
      expect(res.statusCode, `${path}: ${res.body}`).toBe(404);
    }
    for (const path of ['/funnels/query', '/funnels/trends', '/funnels/people']) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${b.id}${path}`,
        headers: a.auth,
        payload: { steps: [{ interactionId: 'view' }], periodStart: iso(B), periodEnd: iso(B + DAY), stepId: 'step1' },
      });
      expect([401, 403], `${path}: ${res.body}`).toContain(res.statusCode);
      const anon = await t.inject({ method: 'POST', url: `/admin/collection/${a.id}${path}`, payload: { steps: [] } });
      expect(anon.statusCode).toBe(401);
    }
  });
});

describe('people export (journeys.peopleExport)', () => {
  it('writes the selected people as CSV with progress; another collection cannot download it', async () => {
    const job = await enqueue(t, a, {
      task: 'journeys.peopleExport',
      payload: {
        journeyId: J,
        conversionWindow: { value: 1, unit: 'hour' },
        breakdown: { property: 'metadata.plan' },
        periodEnd: iso(B + 2 * DAY),
      },
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed']);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.progress?.done).toBe(5);
    const file = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/funnels/exports/${job.id}/download`,
      headers: a.auth,
    });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toContain('text/csv');
    const lines = file.body.trim().split('\n');
    expect(lines[0]).toBe(
      'recipientId,breakdownValue,stepsCompleted,enteredAt,s1.completedAt,s2.completedAt,s3.completedAt',
    );
    // With the 1-hour window: u2 stops at the cart; u5 converts on its second view.
    expect(lines.slice(1)).toEqual([
      `u1,pro,3,${iso(B)},${iso(B + 10 * MIN)},${iso(B + 20 * MIN)},${iso(B + 40 * MIN)}`,
      `u2,free,2,${iso(B)},${iso(B + 5 * MIN)},${iso(B + 65 * MIN)},`,
      `u3,pro,3,${iso(B)},${iso(B + 30 * MIN)},${iso(B + 40 * MIN)},${iso(B + 50 * MIN)}`,
      `u4,free,2,${iso(B)},${iso(B + 10 * MIN)},${iso(B + 20 * MIN)},`,
      `u5,,3,${iso(B)},${iso(B + 1450 * MIN)},${iso(B + 1460 * MIN)},${iso(B + 1470 * MIN)}`,
    ]);
    const other = await t.inject({
      method: 'GET',
      url: `/admin/collection/${b.id}/funnels/exports/${job.id}/download`,
      headers: b.auth,
    });
    expect(other.statusCode).toBe(404);
  });

  it('an ad-hoc export of one step’s dropped people; a payload with both journeyId and steps is refused', async () => {
    const job = await enqueue(t, a, {
      task: 'journeys.peopleExport',
      payload: {
        steps: STEPS.map(({ interactionId }) => ({ interactionId })),
        stepId: 'step3',
        status: 'dropped',
        periodEnd: iso(B + DAY),
      },
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed']);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const file = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/funnels/exports/${job.id}/download`,
      headers: a.auth,
    });
    expect(
      file.body
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(',')[0]),
    ).toEqual(['u4']);
    const refused = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/async/jobs`,
      headers: a.auth,
      payload: { task: 'journeys.peopleExport', payload: { journeyId: J, steps: [{ interactionId: 'view' }] } },
    });
    expect(refused.statusCode).toBe(400);
  });
});
