/**
 * Funnel, stats and recipients checked against numbers worked out by hand (see the table in
 * docs/journeys.md). Period P = [B, B + 10 days). Entry E_i = B + (i + 1) h for u0..u9.
 *   s1 (view/success): u0..u5 complete at E_i + 60·(i+1) s          → 6 of 10, avg 210 s
 *   s2 (buy/paid):     u0..u2 complete at s1_i + 600·(i+1) s         → 3 of 6,  avg 1200 s
 * Not counted: u6 buys without step 1; u7 views after P; u8 views before entering; u9's view
 * is deleted; u3 buys after P; u4 buys with outcome success (mapping says paid); u5's earlier
 * fail does not complete s1; u10 entered before P; the other collection's events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let journeyId: string;
let bareJourneyId: string;

const B = Date.parse('2026-01-10T00:00:00.000Z');
const P_END = B + 10 * 86400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const entry = (i: number) => B + (i + 1) * 3600_000;
const s1At = (i: number) => entry(i) + 60_000 * (i + 1);
const s2At = (i: number) => s1At(i) + 600_000 * (i + 1);

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t));
  for (const c of [a, b]) {
    for (const id of ['enter', 'view', 'buy']) {
      await t.inject({
        method: 'POST',
        url: `/admin/collection/${c.id}/interactions`,
        headers: c.auth,
        payload: { id, appId: 'shop' },
      });
    }
  }
  const j = await t.inject({
    method: 'POST',
    url: `/admin/collection/${a.id}/journeys`,
    headers: a.auth,
    payload: {
      name: 'Checkout',
      journeyType: 'event_triggered',
      data: {
        steps: [
          { id: 's1', config: { interactionId: 'view' } },
          { id: 's2', config: { interactionId: 'buy', outcome: 'paid' } },
        ],
      },
    },
  });
  journeyId = j.json().id;
  const bare = await t.inject({
    method: 'POST',
    url: `/admin/collection/${a.id}/journeys`,
    headers: a.auth,
    payload: { name: 'Bare', journeyType: 'scheduled' },
  });
  bareJourneyId = bare.json().id;

  const ev: Record<string, unknown>[] = [];
  const add = (
    c: TestCollection,
    userId: string,
    interactionId: string,
    outcome: string,
    at: number,
    extra: Record<string, unknown> = {},
  ) =>
    ev.push({ c, payload: { interactionId, userId, contactId: `c-${userId}`, outcome, timestamp: iso(at), ...extra } });
  for (let i = 0; i < 10; i++) add(a, `u${i}`, 'enter', 'entered', entry(i), { journeyId });
  for (let i = 0; i < 6; i++) add(a, `u${i}`, 'view', 'success', s1At(i));
  for (let i = 0; i < 3; i++) add(a, `u${i}`, 'buy', 'paid', s2At(i));
  add(a, 'u2', 'buy', 'paid', s1At(2) + 5_000_000); // a later repeat: the first completion counts
  add(a, 'u3', 'buy', 'paid', P_END + 3600_000); // after the period
  add(a, 'u4', 'buy', 'success', s1At(4) + 10_000); // wrong outcome for s2's mapping
  add(a, 'u5', 'view', 'fail', entry(5) + 30_000); // a fail before the success
  add(a, 'u6', 'buy', 'paid', entry(6) + 100_000); // step 2 without step 1
  add(a, 'u7', 'view', 'success', P_END + 3600_000); // after the period
  add(a, 'u8', 'view', 'success', entry(8) - 60_000); // before entering
  add(a, 'u9', 'view', 'success', entry(9) + 50_000, { eventId: 'deleted-view' }); // deleted below
  add(a, 'u10', 'enter', 'entered', B - 86400_000, { journeyId }); // entered before the period
  add(a, 'u10', 'view', 'success', B + 7200_000);
  add(b, 'u0', 'enter', 'entered', entry(0), { journeyId });
  add(b, 'x1', 'enter', 'entered', entry(0), { journeyId });
  add(b, 'x1', 'view', 'success', entry(0) + 1000);
  for (const e of ev as { c: TestCollection; payload: Record<string, unknown> }[]) {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${e.c.id}/interactions/append`,
      headers: e.c.auth,
      payload: e.payload,
    });
    expect(res.statusCode, res.body).toBe(200);
  }
  const del = await t.inject({
    method: 'PATCH',
    url: `/admin/collection/${a.id}/interactions/events/deleted-view`,
    headers: a.auth,
    payload: { deleted: true },
  });
  expect(del.statusCode).toBe(200);
});
afterAll(() => t.close());

const analytics = (path: string, payload: unknown, c = a, id = journeyId) =>
  t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/journeys.analytics/${id}${path}`,
    headers: c.auth,
    payload: payload as Record<string, unknown>,
  });
const period = { periodStart: iso(B), periodEnd: iso(P_END) };

describe('funnel report', () => {
  it('matches the hand-computed funnel in the period', async () => {
    const res = await analytics('/funnel-report', { ...period, stepMappings: [] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      journeyId,
      periodStart: iso(B),
      periodEnd: iso(P_END),
      idField: 'userId',
      steps: [
        {
          stepId: 's1',
          interactionId: 'view',
          outcome: 'success',
          enteredCount: 10,
          completedCount: 6,
          conversionRate: 0.6,
          avgTimeToComplete: 210,
        },
        {
          stepId: 's2',
          interactionId: 'buy',
          outcome: 'paid',
          enteredCount: 6,
          completedCount: 3,
          conversionRate: 0.5,
          avgTimeToComplete: 1200,
        },
      ],
    });
  });

  it('gives the same numbers by contactId, and more without a period', async () => {
    const byContact = await analytics('/funnel-report', { ...period, stepMappings: [], idField: 'contactId' });
    expect(
      byContact
        .json()
        .steps.map((s: { enteredCount: number; completedCount: number }) => [s.enteredCount, s.completedCount]),
    ).toEqual([
      [10, 6],
      [6, 3],
    ]);
    // Unbounded: u10 enters (before B) and completes s1; u7's late view completes s1; u3's late buy completes s2.
    const all = await analytics('/funnel-report', { stepMappings: [] });
    expect(all.json()).toMatchObject({ periodStart: null, periodEnd: null });
    expect(
      all.json().steps.map((s: { enteredCount: number; completedCount: number }) => [s.enteredCount, s.completedCount]),
    ).toEqual([
      [11, 8],
      [8, 4],
    ]);
  });

  it('takes request stepMappings over the journey’s, and the mappings’ order for a journey without steps', async () => {
    const failView = await analytics('/funnel-report', {
      ...period,
      stepMappings: [{ stepId: 's1', interactionId: 'view', outcome: 'fail' }],
    });
    expect(failView.json().steps).toMatchObject([
      { stepId: 's1', outcome: 'fail', enteredCount: 10, completedCount: 1, avgTimeToComplete: 30 },
      { stepId: 's2', outcome: 'paid', enteredCount: 1, completedCount: 0, conversionRate: 0, avgTimeToComplete: null },
    ]);
    // The bare journey has no steps: its events carry another journey id, so nobody enters it.
    const bare = await analytics(
      '/funnel-report',
      { stepMappings: [{ stepId: 'x', interactionId: 'view' }] },
      a,
      bareJourneyId,
    );
    expect(bare.json().steps).toEqual([
      {
        stepId: 'x',
        interactionId: 'view',
        outcome: 'success',
        enteredCount: 0,
        completedCount: 0,
        conversionRate: 0,
        avgTimeToComplete: null,
      },
    ]);
  });

  it('refuses bad input (400), unknown journeys (404) and foreign callers (401)', async () => {
    for (const body of [
      {},
      { stepMappings: [{ stepId: 'nope', interactionId: 'view' }] },
      { stepMappings: [{ stepId: 's1' }] },
      {
        stepMappings: [
          { stepId: 's1', interactionId: 'view' },
          { stepId: 's1', interactionId: 'buy' },
        ],
      },
      { stepMappings: [], periodStart: 'monday' },
      { stepMappings: [], periodStart: iso(P_END), periodEnd: iso(B) },
      { stepMappings: [], idField: 'email' },
    ]) {
      expect((await analytics('/funnel-report', body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await analytics('/funnel-report', { stepMappings: [] }, a, bareJourneyId)).statusCode).toBe(400);
    expect((await analytics('/funnel-report', { stepMappings: [] }, a, 'jrn_missing')).statusCode).toBe(404);
    expect((await analytics('/funnel-report', { stepMappings: [] }, b)).statusCode).toBe(404);
    for (const headers of [{}, b.auth, a.userAuth]) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/journeys.analytics/${journeyId}/funnel-report`,
        headers,
        payload: { stepMappings: [] },
      });
      expect(res.statusCode).toBe(401);
    }
  });
});

describe('stats', () => {
  it('counts entered, completed and pending per step, with finalStepId', async () => {
    const res = await analytics('/stats', { from: iso(B), to: iso(P_END), finalStepId: 's2' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Date.parse(body.lastUpdated)).not.toBeNaN();
    expect({ ...body, lastUpdated: undefined }).toEqual({
      journeyId,
      totalEntered: 10,
      completed: 3,
      currentlyActive: 7,
      lastUpdated: undefined,
      stepStats: [
        { stepId: 's1', entered: 10, completed: 6, pending: 4 },
        { stepId: 's2', entered: 6, completed: 3, pending: 3 },
      ],
    });
    const noFinal = await analytics('/stats', { from: iso(B), to: iso(P_END) });
    expect(noFinal.json().completed).toBeUndefined();
    expect(noFinal.json().currentlyActive).toBeUndefined();
  });

  it('applies outcome (default success) to steps whose mapping names none', async () => {
    const res = await analytics('/stats', { from: iso(B), to: iso(P_END), outcome: 'fail' });
    expect(res.json().stepStats).toEqual([
      { stepId: 's1', entered: 10, completed: 1, pending: 9 },
      { stepId: 's2', entered: 1, completed: 0, pending: 1 },
    ]);
  });

  it('refuses bad input (400), unknown journeys (404) and foreign callers (401)', async () => {
    for (const body of [
      { finalStepId: 'nope' },
      { from: 'x' },
      { extra: 1 },
      { stepMappings: [{ stepId: 'zz', interactionId: 'view' }] },
    ]) {
      expect((await analytics('/stats', body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await analytics('/stats', {}, b)).statusCode).toBe(404);
    for (const headers of [{}, b.auth]) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/journeys.analytics/${journeyId}/stats`,
        headers,
        payload: {},
      });
      expect(res.statusCode).toBe(401);
    }
  });
});

describe('step recipients', () => {
  const recipients = async (step: string, body: Record<string, unknown>) => {
    const res = await analytics(`/steps/${step}/recipients`, { from: iso(B), to: iso(P_END), ...body });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  it('lists entered, completed and pending ids of a step', async () => {
    expect(await recipients('s1', { status: 'entered' })).toEqual([
      'u0',
      'u1',
      'u2',
      'u3',
      'u4',
      'u5',
      'u6',
      'u7',
      'u8',
      'u9',
    ]);
    expect(await recipients('s1', { status: 'completed' })).toEqual(['u0', 'u1', 'u2', 'u3', 'u4', 'u5']);
    expect(await recipients('s1', { status: 'pending' })).toEqual(['u6', 'u7', 'u8', 'u9']);
    expect(await recipients('s2', {})).toEqual(['u0', 'u1', 'u2']);
    expect(await recipients('s2', { status: 'pending' })).toEqual(['u3', 'u4', 'u5']);
    expect(await recipients('s2', { status: 'pending', limit: 2 })).toEqual(['u3', 'u4']);
    expect(await recipients('s2', { idField: 'contactId' })).toEqual(['c-u0', 'c-u1', 'c-u2']);
  });

  it('lets the request remap the step (interactionId / outcome)', async () => {
    expect(await recipients('s2', { outcome: 'success' })).toEqual(['u4']);
    expect(await recipients('s1', { interactionId: 'buy', outcome: 'paid' })).toEqual(['u0', 'u1', 'u2', 'u6']);
  });

  it('refuses bad input (400), unknown steps and journeys (404), foreign callers (401)', async () => {
    for (const body of [{ status: 'done' }, { limit: 0 }, { limit: 10_001 }, { idField: 'x' }]) {
      expect((await analytics('/steps/s1/recipients', body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    expect((await analytics('/steps/nope/recipients', {})).statusCode).toBe(404);
    expect((await analytics('/steps/s1/recipients', {}, b)).statusCode).toBe(404);
    for (const headers of [{}, b.auth]) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/journeys.analytics/${journeyId}/steps/s1/recipients`,
        headers,
        payload: {},
      });
      expect(res.statusCode).toBe(401);
    }
  });
});
