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
/** Steps without a mapping before a mapped one: loose1, loose2 (no config), loose3 = buy/paid. */
let looseJourneyId: string;
/** k1 = view/success, k2 without a mapping. */
let halfJourneyId: string;

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
  const createJourney = async (name: string, steps: unknown[]) => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/journeys`,
      headers: a.auth,
      payload: { name, journeyType: 'event_triggered', data: { steps } },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().id as string;
  };
  looseJourneyId = await createJourney('Loose', [
    { id: 'loose1', type: 'wait' },
    { id: 'loose2', type: 'email', config: { templateId: 't1' } },
    { id: 'loose3', type: 'goal', config: { interactionId: 'buy', outcome: 'paid' } },
  ]);
  halfJourneyId = await createJourney('Half', [{ id: 'k1', config: { interactionId: 'view' } }, { id: 'k2' }]);

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
  // Loose: u0..u6 enter at B + 5 days, after their purchases; u8 enters after the period.
  for (let i = 0; i <= 6; i++) add(a, `u${i}`, 'enter', 'entered', B + 5 * 86400_000, { journeyId: looseJourneyId });
  add(a, 'u8', 'enter', 'entered', P_END + 60_000, { journeyId: looseJourneyId });
  // Half: u0 and u5 view after entering (k1 done), u6 never views, u8 viewed before entering.
  for (const u of [0, 5, 6, 8]) add(a, `u${u}`, 'enter', 'entered', entry(u), { journeyId: halfJourneyId });
  add(b, 'x1', 'enter', 'entered', B + 5 * 86400_000, { journeyId: looseJourneyId });
  add(b, 'x1', 'buy', 'paid', B + 6 * 86400_000);
  add(b, 'x1', 'buy', 'success', B + 6 * 86400_000);
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

  it('takes a mapping without interactionId (optional, as the original types it) as the step’s own interaction', async () => {
    const own = await analytics('/funnel-report', { ...period, stepMappings: [] });
    // Naming the step alone changes nothing.
    const named = await analytics('/funnel-report', { ...period, stepMappings: [{ stepId: 's1' }, { stepId: 's2' }] });
    expect(named.statusCode, named.body).toBe(200);
    expect(named.json()).toEqual(own.json());
    // An outcome alone keeps the step's interaction (buy) with that outcome: u4 buys with success.
    const outcomeOnly = await analytics('/funnel-report', {
      ...period,
      stepMappings: [{ stepId: 's2', outcome: 'success' }],
    });
    expect(outcomeOnly.json().steps[1]).toMatchObject({
      stepId: 's2',
      interactionId: 'buy',
      outcome: 'success',
      enteredCount: 6,
      completedCount: 1,
    });
    // An interaction named without outcome brings the default, success, not the step's own (paid).
    const interactionOnly = await analytics('/funnel-report', {
      ...period,
      stepMappings: [{ stepId: 's2', interactionId: 'buy' }],
    });
    expect(interactionOnly.json().steps[1]).toMatchObject({
      interactionId: 'buy',
      outcome: 'success',
      completedCount: 1,
    });
  });

  it('refuses bad input (400), unknown journeys (404) and foreign callers (401)', async () => {
    for (const body of [
      {},
      { stepMappings: [{ stepId: 'nope', interactionId: 'view' }] },
      { stepMappings: [{ stepId: 's1', interactionId: '' }] },
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
    // A journey without steps has no interaction to fall back on: a mapping must name one.
    const noInteraction = await analytics('/funnel-report', { stepMappings: [{ stepId: 'x' }] }, a, bareJourneyId);
    expect(noInteraction.statusCode).toBe(400);
    expect(noInteraction.json().message).toContain('"x"');
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

  it('takes a step on its own when a step before it has no mapping (the original’s request alone)', async () => {
    const loose = async (step: string, body: Record<string, unknown>, c = a) => {
      const res = await analytics(
        `/steps/${step}/recipients`,
        { from: iso(B), to: iso(P_END), ...body },
        c,
        looseJourneyId,
      );
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };
    // Entered: everyone who entered the journey in the window (u8 entered after it; x1 is b's).
    const entered = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5', 'u6'];
    expect(await loose('loose2', { status: 'entered' })).toEqual(entered);
    // The original's request: interactionId, outcome defaulting to success; only u4 bought with success.
    expect(await loose('loose2', { status: 'completed', interactionId: 'buy' })).toEqual(['u4']);
    expect(await loose('loose2', { status: 'pending', interactionId: 'buy' })).toEqual([
      'u0',
      'u1',
      'u2',
      'u3',
      'u5',
      'u6',
    ]);
    // With outcome paid: a purchase in the window counts though it came before the entry (u0–u2,
    // u6, who never viewed); u3's purchase is after the window.
    expect(await loose('loose2', { interactionId: 'buy', outcome: 'paid' })).toEqual(['u0', 'u1', 'u2', 'u6']);
    expect(await loose('loose2', { status: 'pending', interactionId: 'buy', outcome: 'paid' })).toEqual([
      'u3',
      'u4',
      'u5',
    ]);
    expect(await loose('loose2', { interactionId: 'buy', outcome: 'paid', idField: 'contactId', limit: 2 })).toEqual([
      'c-u0',
      'c-u1',
    ]);
    // loose3 has its own mapping (buy/paid) but loose1 and loose2 before it have none.
    expect(await loose('loose3', {})).toEqual(['u0', 'u1', 'u2', 'u6']);
    expect(await loose('loose3', { status: 'pending' })).toEqual(['u3', 'u4', 'u5']);
    // Without a window u3's later purchase counts, and u8 (no purchase) has entered.
    const unbounded = await analytics(
      '/steps/loose2/recipients',
      { interactionId: 'buy', outcome: 'paid' },
      a,
      looseJourneyId,
    );
    expect(unbounded.json()).toEqual(['u0', 'u1', 'u2', 'u3', 'u6']);
    // The first step has no step before it: it is the ordered funnel's first step, completed only
    // by an event at or after the entry, and every purchase in the window came before it.
    expect(await loose('loose1', { interactionId: 'buy', outcome: 'paid' })).toEqual([]);
    expect(await loose('loose1', { status: 'entered' })).toEqual(entered);
    // Completed and pending of a step without a mapping need interactionId.
    for (const body of [{}, { status: 'pending' }, { outcome: 'paid' }]) {
      const res = await analytics(`/steps/loose2/recipients`, body, a, looseJourneyId);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().message).toContain('interactionId');
    }
    // Another collection: its own events never count here, and a's journey is 404 there.
    expect((await analytics('/steps/loose2/recipients', { interactionId: 'buy' }, b, looseJourneyId)).statusCode).toBe(
      404,
    );
    for (const headers of [{}, b.auth]) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/journeys.analytics/${looseJourneyId}/steps/loose2/recipients`,
        headers,
        payload: { status: 'completed', interactionId: 'buy' },
      });
      expect(res.statusCode).toBe(401);
    }
  });

  it('keeps the ordered funnel when the steps before have mappings', async () => {
    // Checkout's s1 is mapped: u6's purchase without a view does not count for s2.
    expect(await recipients('s2', { status: 'completed', interactionId: 'buy', outcome: 'paid' })).toEqual([
      'u0',
      'u1',
      'u2',
    ]);
    // An interaction named without outcome brings success, not the step's own paid: u4.
    expect(await recipients('s2', { interactionId: 'buy' })).toEqual(['u4']);
    const half = async (body: Record<string, unknown>) => {
      const res = await analytics('/steps/k2/recipients', { from: iso(B), to: iso(P_END), ...body }, a, halfJourneyId);
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };
    // k2 has no mapping; entering it = completing k1 (view after entering): u0 and u5, not u6
    // (never viewed) or u8 (viewed before entering).
    expect(await half({ status: 'entered' })).toEqual(['u0', 'u5']);
    expect(await half({ interactionId: 'buy', outcome: 'paid' })).toEqual(['u0']);
    expect(await half({ status: 'pending', interactionId: 'buy', outcome: 'paid' })).toEqual(['u5']);
    expect((await analytics('/steps/k2/recipients', {}, a, halfJourneyId)).statusCode).toBe(400);
  });

  it('answers for a journey without steps, taking the request’s step as its only one', async () => {
    // Nobody's events carry the bare journey's id: nobody entered it.
    const res = await analytics('/steps/any/recipients', { interactionId: 'view' }, a, bareJourneyId);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual([]);
    expect((await analytics('/steps/any/recipients', {}, a, bareJourneyId)).statusCode).toBe(400);
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
