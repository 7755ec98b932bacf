/**
 * Tenant isolation of journey analytics (funnel report, stats, step recipients, the journeys
 * list), with data in BOTH collections: the same journey ids (given through the database,
 * test/helpers/shared-ids.ts), interaction ids, step ids and user ids, with different, known
 * answers, each checked exactly on every path: maintained progress (no window: its counters;
 * the funnel with a window that holds every event: its rows), the events (step recipients in
 * that window; the funnel with a step remapped), and the steps taken on their own when an earlier step
 * has no mapping. A query that also read the other collection's events, progress rows or
 * counters would change both answers (both collections keep J's progress at the same version,
 * so only the collection tells their rows apart). J gets its steps once the entries and views
 * are stored, so its progress is first built by the rebuild task from the events; the
 * purchases come afterwards, kept by the triggers. A third shared journey, K, is kept at
 * version 1 in A (2 entrants, kept before B's K exists) and 3 in B (3 entrants): a read of the
 * other collection's progress state would send one of them to the events, and B's rebuilds,
 * which remove the rows of versions before theirs, must leave A's version 1 alone.
 *
 * Journey J (steps s1 = view/success, s2 = buy/paid), entries at B0 + i hours:
 *   A: u0..u3 enter; u0..u2 view 10 min after; u0 buys 10 min after that.
 *   B: u0..u5 enter; u0..u4 view; u0..u3 buy (so A's u3 would complete s1 with B's view).
 * Journey L (w = a wait without a mapping, g = buy/paid), entries at B0 + 5 h:
 *   A: u0, u1 enter (u0 bought, u1 did not, in A); B: u0..u3 enter (all bought, in B).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { BOTH_SIDES, type CollectionWithUser, type Side, twoCollections } from './helpers/fixtures.ts';
import { waitFor } from './helpers/jobs.ts';
import { giveId } from './helpers/shared-ids.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let J: string;
let L: string;
let K: string;

const both = BOTH_SIDES;
const side = (s: Side) => (s === 'a' ? a : b);

const B0 = Date.parse('2026-01-10T00:00:00.000Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();
const ALL = { start: '2000-01-01T00:00:00.000Z', end: '2100-01-01T00:00:00.000Z' };
const STEPS = [
  { id: 's1', config: { interactionId: 'view' } },
  { id: 's2', config: { interactionId: 'buy', outcome: 'paid' } },
];
const LOOSE_STEPS = [
  { id: 'w', type: 'wait' },
  { id: 'g', config: { interactionId: 'buy', outcome: 'paid' } },
];
/** How many users enter J, view, buy; and enter L. */
const PLAN: Record<Side, { enter: number; view: number; buy: number; loose: number }> = {
  a: { enter: 4, view: 3, buy: 1, loose: 2 },
  b: { enter: 6, view: 5, buy: 4, loose: 4 },
};
/** Entrants of K. */
const KEPT: Record<Side, number> = { a: 2, b: 3 };
const users = (n: number) => Array.from({ length: n }, (_, i) => `u${i}`);

async function call(s: Side, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) {
  const c = side(s);
  const res = await t.inject({
    method,
    url: `/admin/collection/${c.id}${path}`,
    headers: c.auth,
    payload: payload as Record<string, unknown>,
  });
  expect(res.statusCode, `${s} ${method} ${path}: ${res.body}`).toBe(200);
  return { body: res.json(), source: res.headers['x-analytics-source'] };
}

/** A journey of B with A's id: created without steps (no progress to build), renamed, then given its steps. */
async function shareJourney(id: string, name: string, steps: unknown[][] = []) {
  const created = (await call('b', 'POST', '/journeys', { name, journeyType: 'event_triggered' })).body.id as string;
  await t.testDb.db.query('DELETE FROM journey_progress_state WHERE collection_id = $1 AND journey_id = $2', [
    b.id,
    created,
  ]);
  await giveId(t, b.id, { table: 'journeys', column: 'id' }, created, id);
  for (const s of steps) await call('b', 'PATCH', `/journeys/${id}`, { data: { steps: s } });
}

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t));
  for (const s of both) {
    for (const id of ['enter', 'view', 'buy']) await call(s, 'POST', '/interactions', { id, appId: 'shop' });
  }
  const create = async (name: string, steps: unknown[]) =>
    (await call('a', 'POST', '/journeys', { name, journeyType: 'event_triggered', data: { steps } })).body.id as string;
  J = await create('Checkout A', []);
  L = await create('Loose A', LOOSE_STEPS);
  K = await create('Kept A', STEPS);
  for (const u of users(KEPT.a)) {
    await call('a', 'POST', '/interactions/append', {
      appId: 'shop',
      interactionId: 'enter',
      userId: u,
      outcome: 'entered',
      timestamp: iso(B0),
      journeyId: K,
    });
  }
  await waitFor(
    async () =>
      (await call('a', 'POST', `/journeys.analytics/${K}/stats`, {})).source === 'maintained' ? true : undefined,
    30_000,
    "A's progress of K",
  );
  await shareJourney(J, 'Checkout B');
  await shareJourney(L, 'Loose B', [LOOSE_STEPS]);
  await shareJourney(K, 'Kept B', [STEPS.slice(0, 1), STEPS.slice(1), STEPS]);
  await call('b', 'POST', '/journeys', { name: 'Other B', journeyType: 'scheduled' });

  for (const s of both) {
    const p = PLAN[s];
    const append = (userId: string, interactionId: string, outcome: string, at: number, journeyId?: string) =>
      call(s, 'POST', '/interactions/append', {
        appId: 'shop',
        interactionId,
        userId,
        outcome,
        timestamp: iso(at),
        ...(journeyId ? { journeyId } : {}),
      });
    for (const [i, u] of users(p.enter).entries()) {
      const entry = B0 + i * 3600_000;
      await append(u, 'enter', 'entered', entry, J);
      if (i < p.view) await append(u, 'view', 'success', entry + 10 * MIN);
    }
    for (const u of users(p.loose)) await append(u, 'enter', 'entered', B0 + 5 * 3600_000, L);
  }
  for (const u of users(KEPT.b)) {
    await call('b', 'POST', '/interactions/append', {
      appId: 'shop',
      interactionId: 'enter',
      userId: u,
      outcome: 'entered',
      timestamp: iso(B0),
      journeyId: K,
    });
  }
  // J's steps, so that the rebuild builds its progress from the events stored so far: at
  // version 2 in both collections (A's first had no steps; B's, one step).
  await call('a', 'PATCH', `/journeys/${J}`, { data: { steps: STEPS } });
  for (const steps of [STEPS.slice(0, 1), STEPS]) await call('b', 'PATCH', `/journeys/${J}`, { data: { steps } });
  for (const s of both) {
    await waitFor(
      async () =>
        (await call(s, 'POST', `/journeys.analytics/${J}/stats`, {})).source === 'maintained' ? true : undefined,
      30_000,
      `${s}'s journey progress`,
    );
  }
  // The purchases, kept by the triggers.
  for (const s of both) {
    for (const [i, u] of users(PLAN[s].buy).entries()) {
      await call(s, 'POST', '/interactions/append', {
        appId: 'shop',
        interactionId: 'buy',
        userId: u,
        outcome: 'paid',
        timestamp: iso(B0 + i * 3600_000 + 20 * MIN),
      });
    }
  }
});
afterAll(async () => {
  await t?.close();
});

/** Asks with no window (maintained progress) and with one that holds everything (the events). */
const paths = [
  { name: 'maintained', window: (_k: 'period' | 'range') => ({}) },
  {
    name: 'events',
    window: (k: 'period' | 'range') =>
      k === 'period' ? { periodStart: ALL.start, periodEnd: ALL.end } : { from: ALL.start, to: ALL.end },
  },
] as const;

/**
 * The funnel report and stats are asked three ways: progress's counters (no window), its rows
 * (a period that holds everything), and the events (the same period with s2 remapped to
 * buy/success, which no purchase matches: s2 then completes nobody, on either side).
 */
const funnelPaths = [
  { name: 'counters', source: 'maintained', remap: false, window: paths[0].window },
  { name: 'rows', source: 'maintained', remap: false, window: paths[1].window },
  { name: 'events', source: 'events', remap: true, window: paths[1].window },
] as const;

describe('journey analytics', () => {
  it('funnel report and stats count only their collection’s entrants and steps', async () => {
    const want = {
      a: { total: 4, s1: [4, 3], s2: [3, 1] },
      b: { total: 6, s1: [6, 5], s2: [5, 4] },
    };
    for (const path of funnelPaths) {
      const stepMappings = path.remap ? [{ stepId: 's2', interactionId: 'buy' }] : [];
      for (const s of both) {
        const w = { ...want[s], s2: path.remap ? [want[s].s2[0], 0] : want[s].s2 };
        const funnel = await call(s, 'POST', `/journeys.analytics/${J}/funnel-report`, {
          stepMappings,
          ...path.window('period'),
        });
        expect(funnel.source, `${s} ${path.name}`).toBe(path.source);
        expect(
          funnel.body.steps.map((x: { enteredCount: number; completedCount: number }) => [
            x.enteredCount,
            x.completedCount,
          ]),
          `${s} ${path.name}`,
        ).toEqual([w.s1, w.s2]);
        const stats = await call(s, 'POST', `/journeys.analytics/${J}/stats`, {
          finalStepId: 's2',
          stepMappings,
          ...path.window('range'),
        });
        expect(stats.source, `${s} ${path.name}`).toBe(path.source);
        expect(stats.body, `${s} ${path.name}`).toMatchObject({
          journeyId: J,
          totalEntered: w.total,
          completed: w.s2[1],
          currentlyActive: w.total - w.s2[1],
          stepStats: [
            { stepId: 's1', entered: w.s1[0], completed: w.s1[1], pending: w.s1[0] - w.s1[1] },
            { stepId: 's2', entered: w.s2[0], completed: w.s2[1], pending: w.s2[0] - w.s2[1] },
          ],
        });
      }
    }
  });

  it('trends, and the funnel report and people under options, count only their collection’s recipients', async () => {
    const want = { a: { entered: 4, completed: 1 }, b: { entered: 6, completed: 4 } };
    // Progress's rows (ordered, a window), and the events (a step window: walked).
    for (const [source, extra] of [
      ['maintained', {}],
      ['events', { stepWindows: [{ stepId: 's2', value: 366, unit: 'day' }] }],
    ] as const) {
      for (const s of both) {
        const trends = await call(s, 'POST', `/journeys.analytics/${J}/trends`, {
          stepMappings: [],
          conversionWindow: { value: 1, unit: 'day' },
          periodStart: iso(B0),
          periodEnd: iso(B0 + 86_400_000),
          interval: 'day',
          ...extra,
        });
        expect(trends.source, `${s} ${source}`).toBe(source);
        expect(trends.body.buckets, `${s} ${source}`).toEqual([
          { start: iso(B0), ...want[s], conversionRate: want[s].completed / want[s].entered },
        ]);
        // The funnel report under the same options, and its people.
        const report = await call(s, 'POST', `/journeys.analytics/${J}/funnel-report`, {
          stepMappings: [],
          conversionWindow: { value: 1, unit: 'day' },
          ...extra,
        });
        expect(report.source, `${s} ${source}`).toBe(source);
        const plan = PLAN[s];
        expect(
          report.body.steps.map((x: { enteredCount: number; completedCount: number }) => [
            x.enteredCount,
            x.completedCount,
          ]),
        ).toEqual([
          [plan.enter, plan.view],
          [plan.view, plan.buy],
        ]);
        const people = await call(s, 'POST', `/journeys.analytics/${J}/people`, {
          stepMappings: [],
          conversionWindow: { value: 1, unit: 'day' },
          stepId: 's2',
          status: 'completed',
          ...extra,
        });
        expect(people.body.items, `${s} ${source}`).toEqual(users(plan.buy));
      }
    }
  });

  it('step recipients through the ordered steps', async () => {
    const p = (s: Side) => PLAN[s];
    const want = (s: Side) => ({
      s1: { entered: users(p(s).enter), completed: users(p(s).view), pending: users(p(s).enter).slice(p(s).view) },
      s2: { entered: users(p(s).view), completed: users(p(s).buy), pending: users(p(s).view).slice(p(s).buy) },
    });
    for (const path of paths) {
      for (const s of both) {
        for (const step of ['s1', 's2'] as const) {
          for (const status of ['entered', 'completed', 'pending'] as const) {
            const got = await call(s, 'POST', `/journeys.analytics/${J}/steps/${step}/recipients`, {
              status,
              ...path.window('range'),
            });
            const what = `${s} ${path.name} ${step} ${status}`;
            expect(got.source, what).toBe(path.name);
            expect(got.body, what).toEqual(want(s)[step][status]);
          }
        }
      }
    }
  });

  it('a step taken on its own (an earlier step has no mapping)', async () => {
    const want = {
      a: { entered: ['u0', 'u1'], completed: ['u0'], pending: ['u1'] },
      b: { entered: ['u0', 'u1', 'u2', 'u3'], completed: ['u0', 'u1', 'u2', 'u3'], pending: [] },
    };
    for (const s of both) {
      for (const window of [{}, { from: ALL.start, to: ALL.end }]) {
        for (const status of ['entered', 'completed', 'pending'] as const) {
          const got = await call(s, 'POST', `/journeys.analytics/${L}/steps/g/recipients`, { status, ...window });
          expect(got.body, `${s} ${status} ${JSON.stringify(window)}`).toEqual(want[s][status]);
        }
        const first = await call(s, 'POST', `/journeys.analytics/${L}/steps/w/recipients`, {
          status: 'entered',
          ...window,
        });
        expect(first.body, `${s} w entered`).toEqual(want[s].entered);
      }
    }
  });

  it('a journey’s progress state is its collection’s (K: version 1 in A, 3 in B)', async () => {
    for (const s of both) {
      const kept = await waitFor(
        async () => {
          const stats = await call(s, 'POST', `/journeys.analytics/${K}/stats`, {});
          return stats.source === 'maintained' ? stats.body : undefined;
        },
        30_000,
        `${s}'s progress of K`,
      );
      expect(kept, s).toMatchObject({ journeyId: K, totalEntered: KEPT[s] });
    }
  });

  it('the journeys and one journey are their collection’s', async () => {
    const names = { a: ['Checkout A', 'Kept A', 'Loose A'], b: ['Checkout B', 'Kept B', 'Loose B', 'Other B'] };
    for (const s of both) {
      const list = await call(s, 'GET', '/journeys?limit=100');
      expect(list.body.items.map((j: { name: string }) => j.name).sort(), s).toEqual(names[s]);
      expect((await call(s, 'GET', `/journeys/${J}`)).body, s).toMatchObject({
        id: J,
        collectionId: side(s).id,
        name: names[s][0],
      });
    }
  });
});
