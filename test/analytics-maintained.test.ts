/**
 * Maintained analytics (migrations 0203, 0204, 0209) against the events they are kept from.
 * Each answer the service gives from its counters (`X-Analytics-Source: maintained`) is
 * compared with the same question asked so that the events are read: step recipients in a
 * period that holds every event, an appId filter every event matches (dedupeLatest counts),
 * and the funnel's own statement over the events (journeys.repository.ts) for funnel reports
 * with periods, which progress answers too (its rows of the period's entrants, and the events
 * of those who entered before the period and came back in it). Equal answers through
 * appends given out of order, concurrent appends for the same people, outcome changes, deletes
 * and restores, a change of the journey's steps, and the journey's deletion.
 * test/analytics-exact.test.ts checks both paths against a brute-force computation.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { funnelCounts } from '../src/modules/journeys/journeys.repository.ts';
import { firstDifference } from './helpers/analytics-oracle.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';

let t: TestApp;
let c: TestCollection;
let journeyId: string;
/** Straddlers met by the last compareAll (comparePeriods). */
let lastStraddlers = 0;
/** Rows whose chain reached the last step beyond a trends window, met by the last compareAll. */
let lastLate = 0;

const DAY = 86400_000;
const B = Date.parse('2026-03-01T00:00:00.000Z');
/** A window that holds every event: the same question, answered from the events. */
const ALL = { start: '2000-01-01T00:00:00.000Z', end: '2100-01-01T00:00:00.000Z' };
const STEPS = [
  { id: 's1', config: { interactionId: 'view' } },
  { id: 's2', config: { interactionId: 'cart' } },
  { id: 's3', config: { interactionId: 'buy', outcome: 'paid' } },
];
/** Breakdown properties the journey declares: progress rows keep their values (migration 0920). */
const PROPS = ['metadata.plan', 'metadata.tier'];

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const post = (path: string, payload: Record<string, unknown>) =>
  t.inject({ method: 'POST', url: `/admin/collection/${c.id}${path}`, headers: c.auth, payload });

async function append(e: Record<string, unknown>) {
  const res = await post('/interactions/append', { appId: 'shop', ...e });
  expect(res.statusCode, res.body).toBe(200);
}

/** Appends a mix of journey entries, step events in any order, other outcomes and noise. */
async function appendRandom(seed: number, users: number, count: number, concurrent = false) {
  const r = rng(seed);
  const events = Array.from({ length: count }, (_, i) => {
    const u = Math.floor(r() * users);
    const pick = r();
    const interactionId =
      pick < 0.2 ? 'enter' : pick < 0.45 ? 'view' : pick < 0.7 ? 'cart' : pick < 0.9 ? 'buy' : 'other';
    const outcome = interactionId === 'buy' ? (r() < 0.6 ? 'paid' : 'failed') : r() < 0.85 ? 'success' : 'fail';
    // Breakdown values: strings, a number, a JSON null, an absent key, no metadata at all.
    const plan = ['free', 'pro', 'team', 3, null, undefined][Math.floor(r() * 6)];
    const tier = ['a', 'b', undefined][Math.floor(r() * 3)];
    // A third of the times on a 6-hour grid: one person's events then tie, and the storage id
    // decides which of them a step's value comes from.
    const at = B + Math.floor(r() * 10 * DAY);
    return {
      interactionId,
      userId: `u${u}`,
      contactId: r() < 0.8 ? `c${u}` : `c${(u + 1) % users}`,
      outcome,
      eventId: `s${seed}-${i}`,
      timestamp: new Date(r() < 0.33 ? at - (at % (6 * 3_600_000)) : at).toISOString(),
      ...(interactionId === 'enter' || r() < 0.05 ? { journeyId } : {}),
      ...(r() < 0.9 && { metadata: { plan, tier } }),
    };
  });
  if (concurrent) await Promise.all(events.map(append));
  else for (const e of events) await append(e);
}

async function analysed(path: string, body: Record<string, unknown>) {
  const res = await post(path, body);
  expect(res.statusCode, res.body).toBe(200);
  return { source: res.headers['x-analytics-source'], body: res.json() };
}

/** Periods that cut through the events (entries before them, steps in them), and one holding them all. */
const PERIODS = [
  ALL,
  { start: new Date(B + 2.5 * DAY).toISOString() },
  { start: new Date(B + 4 * DAY).toISOString(), end: new Date(B + 7.5 * DAY).toISOString() },
  { end: new Date(B + 6 * DAY).toISOString() },
];

/**
 * A funnel report with a period, from progress, against the funnel's statement over the
 * events. Returns how many of the period's entrants entered the journey before it (the
 * "straddlers" whose steps are read from the events), so a test can see that case was met.
 */
async function comparePeriods(idField: 'userId' | 'contactId', sources: Set<unknown>): Promise<number> {
  let straddlers = 0;
  const strip = (b: { steps: Record<string, unknown>[] }) =>
    b.steps.map((s) => [
      s.enteredCount,
      s.completedCount,
      s.avgTimeToComplete === null ? null : Number(s.avgTimeToComplete).toFixed(6),
    ]);
  for (const p of PERIODS) {
    const kept = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, {
      idField,
      stepMappings: [],
      ...(p.start && { periodStart: p.start }),
      ...(p.end && { periodEnd: p.end }),
    });
    sources.add(kept.source);
    // The journey's steps as the service resolved them (they change in a test below).
    const steps = (kept.body.steps as { stepId: string; interactionId: string; outcome: string }[]).map(
      ({ stepId, interactionId, outcome }) => ({ stepId, interactionId, outcome }),
    );
    const read = await funnelCounts(t.testDb.db, c.id, { journeyId, idField, steps, ...p });
    const want = read.steps.map((s) => [
      s.entered,
      s.completed,
      s.avg_seconds === null ? null : Number(s.avg_seconds).toFixed(6),
    ]);
    expect(strip(kept.body), `${idField} ${JSON.stringify(p)}`).toEqual(want);
    if (p.start) {
      const { rows } = await t.testDb.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM journey_progress WHERE collection_id = $1 AND journey_id = $2 AND id_field = $3
           AND entered_at < $4 AND EXISTS (SELECT 1 FROM interaction_events x WHERE x.collection_id = $1
             AND x.journey_id = $2 AND x.deleted_at IS NULL AND x.occurred_at >= $4
             AND ${idField === 'userId' ? 'x.user_id' : 'x.contact_id'} = rid)`,
        [c.id, journeyId, idField, p.start],
      );
      straddlers += rows[0].n;
    }
  }
  return straddlers;
}

/**
 * Trends of the journey's ordered funnel from progress (rows by entry time, the rest walked)
 * against the same request walked from the events: with a step window too long to bind, which
 * progress does not answer. Windows that bind (some chains then reach the last step too late
 * for their first anchor, and are walked), a period the earlier entrants come back into, the
 * previous period (shifted), days and weeks. Returns how many rows were too late.
 */
async function compareTrends(idField: 'userId' | 'contactId'): Promise<number> {
  let late = 0;
  const cases = [
    { start: B, end: B + 10 * DAY, interval: 'day', window: undefined },
    { start: B + 2.5 * DAY, end: B + 7.5 * DAY, interval: 'week', window: { value: 1, unit: 'day' } },
    { start: B + 4 * DAY, end: B + 9 * DAY + 5 * 3_600_000, interval: 'day', window: { value: 2, unit: 'hour' } },
  ] as const;
  for (const k of cases) {
    const body = {
      idField,
      periodStart: new Date(k.start).toISOString(),
      periodEnd: new Date(k.end).toISOString(),
      interval: k.interval,
      compare: true,
      ...(k.window && { conversionWindow: k.window }),
    };
    const kept = await analysed(`/journeys.analytics/${journeyId}/trends`, body);
    const read = await analysed(`/journeys.analytics/${journeyId}/trends`, {
      ...body,
      stepWindows: [{ stepId: 's2', value: 366, unit: 'day' }],
    });
    expect(kept.source, JSON.stringify(body)).toBe('maintained');
    expect(read.source).toBe('events');
    expect(kept.body, JSON.stringify(body)).toEqual(read.body);
    if (k.window) {
      const ms = k.window.value * (k.window.unit === 'day' ? DAY : 3_600_000);
      const { rows } = await t.testDb.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM journey_progress WHERE collection_id = $1 AND journey_id = $2 AND id_field = $3
           AND cardinality(completed_at) >= 3 AND completed_at[3] > completed_at[1] + $4 * interval '1 millisecond'`,
        [c.id, journeyId, idField, ms],
      );
      late += rows[0].n;
    }
  }
  return late;
}

/**
 * The funnel report and people of the journey's ordered funnel with options, from progress
 * rows (only the recipients they cannot answer for walked), against the same requests walked
 * from the events (a step window too long to bind); breakdowns by the properties the journey
 * declares too, from the values its rows keep.
 */
async function compareOptions(idField: 'userId' | 'contactId') {
  const cases: Record<string, unknown>[] = [
    { ordering: 'ordered' },
    { conversionWindow: { value: 1, unit: 'day' }, periodStart: new Date(B + 2.5 * DAY).toISOString() },
    {
      conversionWindow: { value: 2, unit: 'hour' },
      periodStart: new Date(B + 4 * DAY).toISOString(),
      periodEnd: new Date(B + 9 * DAY).toISOString(),
    },
    // Breakdowns by declared properties, from the rows' kept values.
    { breakdown: { property: 'metadata.plan' } },
    { breakdown: { property: 'metadata.plan', attribution: 'last' }, conversionWindow: { value: 1, unit: 'day' } },
    {
      breakdown: { property: 'metadata.tier', attribution: 'last', limit: 1 },
      conversionWindow: { value: 2, unit: 'hour' },
      periodStart: new Date(B + 4 * DAY).toISOString(),
      periodEnd: new Date(B + 9 * DAY).toISOString(),
    },
    {
      breakdown: { property: 'metadata.plan', attribution: 'last', limit: 2 },
      periodStart: new Date(B + 2.5 * DAY).toISOString(),
      periodEnd: new Date(B + 6 * DAY).toISOString(),
    },
  ];
  const twin = { stepWindows: [{ stepId: 's2', value: 366, unit: 'day' }] };
  const pick = (o: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.map((k) => [k, o[k]]));
  for (const k of cases) {
    const body = { idField, stepMappings: [], ...k };
    const kept = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, body);
    const read = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, { ...body, ...twin });
    expect(kept.source, JSON.stringify(body)).toBe('maintained');
    expect(read.source).toBe('events');
    // Means to a relative 1e-9: the sums run in another order.
    const d = firstDifference(pick(kept.body, ['steps', 'breakdown']), pick(read.body, ['steps', 'breakdown']));
    expect(d, JSON.stringify(body)).toBeUndefined();
    if (k.breakdown) expect(kept.body.breakdown.length, JSON.stringify(body)).toBeGreaterThan(1);
    const values = k.breakdown ? [undefined, kept.body.breakdown[0].value] : [undefined];
    for (const [stepId, status, breakdownValue] of [
      ['s2', 'completed', values[0]],
      ['s3', 'dropped', values[0]],
      ['s1', 'entered', values[values.length - 1]],
    ]) {
      const q = { ...body, stepId, status, limit: 10_000, ...(breakdownValue !== undefined && { breakdownValue }) };
      const people = await analysed(`/journeys.analytics/${journeyId}/people`, q);
      const peopleRead = await analysed(`/journeys.analytics/${journeyId}/people`, { ...q, ...twin });
      expect(people.body, JSON.stringify(q)).toEqual(peopleRead.body);
    }
  }
  // A property the journey does not declare: the events answer.
  const undeclared = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, {
    idField,
    stepMappings: [],
    breakdown: { property: 'outcome' },
  });
  expect(undeclared.source).toBe('events');
}

/** Asks every maintained question and its events-reading twin; they must agree. */
async function compareAll(expectMaintained = true) {
  const sources = new Set<unknown>();
  let straddlers = 0;
  let late = 0;
  for (const idField of ['userId', 'contactId'] as const) {
    const kept = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, { idField, stepMappings: [] });
    // The same question with a period holding every event: from progress's rows, not its counters.
    const read = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, {
      idField,
      stepMappings: [],
      periodStart: ALL.start,
      periodEnd: ALL.end,
    });
    sources.add(kept.source);
    sources.add(read.source);
    const strip = (b: { steps: Record<string, unknown>[] }) =>
      b.steps.map(({ avgTimeToComplete, ...s }) => ({
        ...s,
        avg: avgTimeToComplete === null ? null : Number(avgTimeToComplete).toFixed(6),
      }));
    expect(strip(kept.body)).toEqual(strip({ steps: read.body.steps }));
    straddlers += await comparePeriods(idField, sources);
    late += await compareTrends(idField);
    await compareOptions(idField);

    const stats = await analysed(`/journeys.analytics/${journeyId}/stats`, { idField, finalStepId: 's3' });
    const statsRead = await analysed(`/journeys.analytics/${journeyId}/stats`, {
      idField,
      finalStepId: 's3',
      from: ALL.start,
      to: ALL.end,
    });
    sources.add(stats.source);
    const { lastUpdated: _a, ...s1 } = stats.body;
    const { lastUpdated: _b, ...s2 } = statsRead.body;
    expect(s1).toEqual(s2);

    for (const step of ['s1', 's2', 's3']) {
      for (const status of ['entered', 'completed', 'pending']) {
        for (const limit of [3, 1000]) {
          const kept = await analysed(`/journeys.analytics/${journeyId}/steps/${step}/recipients`, {
            idField,
            status,
            limit,
          });
          const read = await analysed(`/journeys.analytics/${journeyId}/steps/${step}/recipients`, {
            idField,
            status,
            limit,
            from: ALL.start,
            to: ALL.end,
          });
          sources.add(kept.source);
          expect(kept.body, `${idField} ${step} ${status} ${limit}`).toEqual(read.body);
        }
      }
    }

    for (const interactionId of [undefined, 'buy', 'missing']) {
      for (const [from, to] of [
        [undefined, undefined],
        [new Date(B + 3.5 * DAY).toISOString(), undefined],
        [new Date(B + 6 * DAY).toISOString(), ALL.end],
      ]) {
        const q = { dedupeLatest: true, idField, interactionId, from, to };
        const kept = await analysed('/interactions/counts-by-outcome', q);
        const read = await analysed('/interactions/counts-by-outcome', { ...q, appId: 'shop' });
        sources.add(kept.source);
        expect(read.source).toBe('events');
        expect(kept.body, JSON.stringify(q)).toEqual(read.body);
      }
    }
  }
  if (expectMaintained) expect([...sources]).toEqual(['maintained']);
  lastStraddlers = straddlers;
  lastLate = late;
}

const waitUntilMaintained = () =>
  waitFor(
    async () => {
      const { source } = await analysed(`/journeys.analytics/${journeyId}/stats`, {});
      return source === 'maintained' ? true : undefined;
    },
    15_000,
    'the journey progress rebuild',
  );

beforeAll(async () => {
  t = await createTestApp();
  c = await t.createCollection();
  for (const id of ['enter', 'view', 'cart', 'buy', 'other']) {
    const res = await post('/interactions', { id, appId: 'shop' });
    expect(res.statusCode).toBeLessThan(300);
  }
  const j = await post('/journeys', {
    name: 'Checkout',
    journeyType: 'event_triggered',
    data: { steps: STEPS, breakdownProperties: PROPS },
  });
  journeyId = j.json().id;
});

afterAll(async () => {
  await t?.close();
});

describe('maintained analytics', () => {
  it('answer as the events do once the rebuild has run, through appends given in any order', async () => {
    // Two chains that reach buy 3 hours after their first view, beyond the 2-hour trends
    // window: late-1 has no later view (it did not complete within the window), late-2 has one
    // 2 h 50 min after its first (a later attempt that fits: it did).
    const at = (min: number) => new Date(B + 5 * DAY + min * 60_000).toISOString();
    for (const [userId, steps] of [
      [
        'late-1',
        [
          ['view', 10],
          ['cart', 60],
          ['buy', 190],
        ],
      ],
      [
        'late-2',
        [
          ['view', 10],
          ['view', 180],
          ['cart', 185],
          ['buy', 190],
        ],
      ],
    ] as const) {
      await append({
        interactionId: 'enter',
        userId,
        contactId: userId,
        outcome: 'success',
        timestamp: at(0),
        journeyId,
      });
      for (const [interactionId, min] of steps) {
        const outcome = interactionId === 'buy' ? 'paid' : 'success';
        await append({ interactionId, userId, contactId: userId, outcome, timestamp: at(min) });
      }
    }
    await appendRandom(1, 25, 200);
    await waitUntilMaintained();
    await compareAll();
    await appendRandom(2, 30, 80);
    await compareAll();
    // Some of the periods' entrants entered the journey before them: their steps came from
    // their events, beside the others' rows.
    expect(lastStraddlers).toBeGreaterThan(0);
    expect(lastLate).toBeGreaterThan(0);
  });

  it('stay exact through concurrent appends for the same people', async () => {
    await appendRandom(3, 6, 120, true);
    await compareAll();
  });

  it('stay exact through concurrent deletes, restores, outcome changes and appends for the same people', async () => {
    // Seed 3's 120 events belong to 6 people: deleting a person's last live event while another
    // writer restores or appends one of theirs is the race the triggers' row locks must survive
    // (on PostgreSQL, where the writes run at once).
    const r = rng(7);
    for (let wave = 0; wave < 3; wave++) {
      const ops = Array.from({ length: 60 }, (_, i) => {
        const pick = r();
        if (pick < 0.2) {
          const u = Math.floor(r() * 6);
          return () =>
            append({
              interactionId: r() < 0.5 ? 'view' : 'enter',
              userId: `u${u}`,
              contactId: `c${u}`,
              outcome: 'success',
              eventId: `w${wave}-${i}`,
              timestamp: new Date(B + Math.floor(r() * 10 * DAY)).toISOString(),
              ...(r() < 0.5 ? { journeyId } : {}),
            });
        }
        const payload = pick < 0.75 ? { deleted: r() < 0.6 } : { outcome: r() < 0.5 ? 'success' : 'fail' };
        const eventId = `s3-${Math.floor(r() * 120)}`;
        return async () => {
          const res = await t.inject({
            method: 'PATCH',
            url: `/admin/collection/${c.id}/interactions/events/${eventId}`,
            headers: c.auth,
            payload,
          });
          expect(res.statusCode, res.body).toBe(200);
        };
      });
      await Promise.all(ops.map((op) => op()));
    }
    await compareAll();
  });

  it.skipIf(!onPostgres)(
    'keep an identity’s latest row when another writer deletes it while this one waits for its lock (PostgreSQL)',
    async () => {
      // The window this covers: another transaction has locked the identity's latest row and
      // is about to delete it (its identity has no live event left) when a restore of one of
      // its events comes in. The restore must wait for it and then insert the row afresh; a
      // lock taken by `INSERT ... DO NOTHING` and `SELECT ... FOR UPDATE` passed over the row
      // and then skipped it once deleted, leaving a counted identity without its row.
      const other = await t.createCollection();
      const on = (path: string, method: 'POST' | 'PATCH', payload: Record<string, unknown>) =>
        t.inject({ method, url: `/admin/collection/${other.id}${path}`, headers: other.auth, payload });
      expect((await on('/interactions', 'POST', { id: 'race', appId: 'shop' })).statusCode).toBeLessThan(300);
      for (const eventId of ['r-live', 'r-dead']) {
        const res = await on('/interactions/append', 'POST', {
          appId: 'shop',
          interactionId: 'race',
          userId: 'race-u',
          outcome: 'success',
          eventId,
          timestamp: eventId === 'r-dead' ? '2026-03-02T00:00:00.000Z' : '2026-03-01T00:00:00.000Z',
        });
        expect(res.statusCode, res.body).toBe(200);
      }
      expect((await on('/interactions/events/r-dead', 'PATCH', { deleted: true })).statusCode).toBe(200);

      const key = [other.id, 'race', 'userId', 'race-u'];
      const where = 'collection_id = $1 AND interaction_id = $2 AND id_field = $3 AND rid = $4';
      const holder = new pg.Client({ connectionString: t.testDb.url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        const locked = await holder.query(`SELECT 1 FROM interaction_latest WHERE ${where} FOR UPDATE`, key);
        expect(locked.rowCount).toBe(1);
        const restore = on('/interactions/events/r-dead', 'PATCH', { deleted: false });
        // The restore's trigger is waiting for the row lock.
        await waitFor(
          async () => {
            const { rows } = await holder.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
               WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))`,
            );
            return rows[0].n > 0 ? true : undefined;
          },
          5000,
          'the restore to wait for the row lock',
        );
        await holder.query(`DELETE FROM interaction_latest WHERE ${where}`, key);
        await holder.query('COMMIT');
        const res = await restore;
        expect(res.statusCode, res.body).toBe(200);
        const { rows } = await holder.query<{ occurred_at: Date }>(
          `SELECT occurred_at FROM interaction_latest WHERE ${where}`,
          key,
        );
        expect(rows.map((r) => r.occurred_at.toISOString())).toEqual(['2026-03-02T00:00:00.000Z']);
      } finally {
        await holder.end();
      }
    },
  );

  it('follow outcome changes, deletes and restores of events', async () => {
    for (const [i, body] of [
      [3, { outcome: 'paid' }],
      [10, { deleted: true }],
      [40, { outcome: 'failed' }],
      [41, { deleted: true }],
      [77, { journeyId: null }],
    ] as const) {
      for (const seed of [1, 2]) {
        const res = await t.inject({
          method: 'PATCH',
          url: `/admin/collection/${c.id}/interactions/events/s${seed}-${i}`,
          headers: c.auth,
          payload: body,
        });
        expect([200, 404]).toContain(res.statusCode);
      }
    }
    await compareAll();
    const restored = await t.inject({
      method: 'PATCH',
      url: `/admin/collection/${c.id}/interactions/events/s1-10`,
      headers: c.auth,
      payload: { deleted: false },
    });
    expect(restored.statusCode).toBe(200);
    await compareAll();
  });

  it('keep breakdown values of events at one time from the first stored, as the events’ walk takes them', async () => {
    // One person, every event at one of two times, each pair in the order stored (storage ids):
    // first touch is the first stored entry's plan, last touch the first stored of the latest
    // step's events at its time, whichever plans the later ones carry.
    const T = new Date(B + 3 * DAY).toISOString();
    const T2 = new Date(B + 3 * DAY + 3_600_000).toISOString();
    const events = [
      { interactionId: 'enter', plan: 'entry-first', timestamp: T, journeyId },
      { interactionId: 'enter', plan: 'entry-second', timestamp: T, journeyId },
      { interactionId: 'view', plan: 'view-first', timestamp: T },
      { interactionId: 'view', plan: 'view-second', timestamp: T },
      { interactionId: 'cart', plan: 'cart-first', timestamp: T2 },
      { interactionId: 'cart', plan: 'cart-second', timestamp: T2 },
    ];
    for (const [i, e] of events.entries()) {
      await append({
        interactionId: e.interactionId,
        userId: 'tie-u',
        contactId: 'tie-c',
        outcome: 'success',
        eventId: `tie-${i}`,
        timestamp: e.timestamp,
        metadata: { plan: e.plan },
        ...(e.journeyId && { journeyId: e.journeyId }),
      });
    }
    for (const attribution of ['first', 'last'] as const) {
      const q = { stepMappings: [], breakdown: { property: 'metadata.plan', attribution, limit: 50 } };
      const kept = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, q);
      expect(kept.source).toBe('maintained');
      const values = kept.body.breakdown.map((g: { value: string | null }) => g.value);
      expect(values).toContain(attribution === 'first' ? 'entry-first' : 'cart-first');
      expect(values).not.toContain(attribution === 'first' ? 'entry-second' : 'cart-second');
      const people = await analysed(`/journeys.analytics/${journeyId}/people`, {
        ...q,
        stepId: 's1',
        status: 'entered',
        breakdownValue: attribution === 'first' ? 'entry-first' : 'cart-first',
      });
      expect(people.body.items).toContain('tie-u');
    }
    await compareAll();
  });

  it('refuse breakdown properties progress cannot keep, naming the field, and change nothing', async () => {
    const before = await t.inject({
      method: 'GET',
      url: `/admin/collection/${c.id}/journeys/${journeyId}`,
      headers: c.auth,
    });
    const bad: unknown[] = [
      'metadata.plan',
      ['country'],
      ['metadata.'],
      ['appId', 'appId'],
      ['appId', 'outcome', 'source', 'interactionId', 'metadata.a', 'metadata.b'],
      [3],
    ];
    for (const breakdownProperties of bad) {
      const data = { steps: STEPS, breakdownProperties };
      const created = await post('/journeys', { name: 'Bad', journeyType: 'event_triggered', data });
      expect(created.statusCode, JSON.stringify(breakdownProperties)).toBe(400);
      expect(created.json().details?.field ?? created.json().field).toBe('data.breakdownProperties');
      const patched = await t.inject({
        method: 'PATCH',
        url: `/admin/collection/${c.id}/journeys/${journeyId}`,
        headers: c.auth,
        payload: { data },
      });
      expect(patched.statusCode, JSON.stringify(breakdownProperties)).toBe(400);
    }
    const after = await t.inject({
      method: 'GET',
      url: `/admin/collection/${c.id}/journeys/${journeyId}`,
      headers: c.auth,
    });
    expect(after.json()).toEqual(before.json());
    const list = await t.inject({
      method: 'GET',
      url: `/admin/collection/${c.id}/journeys?limit=100`,
      headers: c.auth,
    });
    expect(list.json().items.filter((j: { name: string }) => j.name === 'Bad')).toEqual([]);
  });

  it('read times with microseconds from progress rows as the events give them', async () => {
    // The API keeps milliseconds; a bulk load or a direct write may store microseconds, and the
    // rows' times travel in binary (journeys.periods.repository.ts keptChains): the same
    // durations, medians and period cuts as the events' times converted in the statement.
    const r = rng(7);
    const values: unknown[] = [];
    const rows: string[] = [];
    const at = (ms: number) =>
      new Date(ms).toISOString().replace('Z', `${String(Math.floor(r() * 1000)).padStart(3, '0')}Z`);
    for (let u = 0; u < 30; u++) {
      let ms = B + Math.floor(r() * 9 * DAY);
      const steps: [string, string, boolean][] = [
        ['enter', 'success', true],
        ['view', 'success', false],
        ['cart', 'success', false],
        ['buy', 'paid', false],
      ];
      for (const [k, [interactionId, outcome, enters]] of steps.entries()) {
        if (k > 0 && r() < 0.25) break;
        const n = values.length;
        rows.push(
          `($${n + 1}, $${n + 2}, $${n + 3}, 'shop', $${n + 4}, $${n + 5}, $${n + 6}, 'admin', $${n + 7}, $${n + 8})`,
        );
        values.push(
          c.id,
          `us-${u}-${k}`,
          interactionId,
          `uus${u}`,
          `cus${u}`,
          outcome,
          enters ? journeyId : null,
          at(ms),
        );
        ms += Math.floor(r() * 3 * 3_600_000);
      }
    }
    await t.testDb.db.query(
      `INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, user_id, contact_id, outcome,
         source, journey_id, occurred_at) VALUES ${rows.join(', ')}`,
      values,
    );
    const { rows: sub } = await t.testDb.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM journey_progress WHERE collection_id = $1 AND rid LIKE '_us%'
         AND extract(microseconds FROM entered_at)::int % 1000 <> 0`,
      [c.id],
    );
    // Or the test could not fail: rows whose times have microseconds.
    expect(sub[0].n).toBeGreaterThan(10);
    await compareAll();
  });

  it('answer the same after the counters’ slots are folded into one row each', async () => {
    const striped = async () => {
      const { rows } = await t.testDb.db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM interaction_counts_hourly WHERE collection_id = $1 AND slot <> 0)
              + (SELECT count(*) FROM interaction_latest_counts WHERE collection_id = $1 AND slot <> 0) AS n`,
        [c.id],
      );
      return Number(rows[0].n);
    };
    const ask = () =>
      Promise.all([
        analysed('/interactions/counts-by-outcome', {}),
        analysed('/interactions/counts-by-outcome', { dedupeLatest: true }),
        analysed('/interactions/counts-by-outcome', { dedupeLatest: true, idField: 'contactId', interactionId: 'buy' }),
      ]);
    // Writers spread each counter over slots by backend (on PGlite its one backend's slot).
    expect(await striped()).toBeGreaterThan(0);
    const before = await ask();
    expect(await t.app.services.interactions.compactCounters()).toBeGreaterThan(0);
    expect(await striped()).toBe(0);
    const after = await ask();
    expect(after.map((a) => a.body)).toEqual(before.map((b) => b.body));
    expect(after.map((a) => a.source)).toEqual(['maintained', 'maintained', 'maintained']);
    await compareAll();
    // Writes after it spread again, and are counted with the folded rows.
    await appendRandom(9, 6, 30, true);
    await compareAll();
  });

  it('are rebuilt when the steps change, reading the events until then', async () => {
    const res = await t.inject({
      method: 'PATCH',
      url: `/admin/collection/${c.id}/journeys/${journeyId}`,
      headers: c.auth,
      payload: {
        data: {
          steps: [
            STEPS[0],
            { id: 's2', config: { interactionId: 'buy', outcome: 'paid' } },
            { id: 's3', config: { interactionId: 'cart' } },
          ],
          breakdownProperties: PROPS,
        },
      },
    });
    expect(res.statusCode).toBe(200);
    await waitUntilMaintained();
    const report = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, { stepMappings: [] });
    expect(report.body.steps.map((s: { interactionId: string }) => s.interactionId)).toEqual(['view', 'buy', 'cart']);
    // s3 is now cart/success; compareAll asks for s1..s3 and finalStepId s3.
    await compareAll();
    const rows = await t.testDb.db.query<{ versions: number }>(
      'SELECT count(DISTINCT version)::int AS versions FROM journey_progress WHERE collection_id = $1 AND journey_id = $2',
      [c.id, journeyId],
    );
    expect(rows.rows[0].versions).toBe(1);
  });

  it.skipIf(!onPostgres)(
    'are rebuilt only after the event writers running at the change have ended (PostgreSQL)',
    async () => {
      // A writer whose trigger ran before the steps changed kept its recipient in the old
      // version only: the rebuild must wait for it to commit before it reads the entrants.
      const holder = new pg.Client({ connectionString: t.testDb.url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(
          `INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, user_id, contact_id,
             outcome, source, journey_id, occurred_at)
           VALUES ($1, 'late-entry', 'enter', 'shop', 'late-u', 'late-c', 'success', 'admin', $2, $3)`,
          [c.id, journeyId, new Date(B + DAY).toISOString()],
        );
        const res = await t.inject({
          method: 'PATCH',
          url: `/admin/collection/${c.id}/journeys/${journeyId}`,
          headers: c.auth,
          // s3 from cart/success to cart/fail (the test after this one counts on s2 being buy).
          payload: {
            data: {
              steps: [
                STEPS[0],
                { id: 's2', config: { interactionId: 'buy', outcome: 'paid' } },
                { id: 's3', config: { interactionId: 'cart', outcome: 'fail' } },
              ],
              breakdownProperties: PROPS,
            },
          },
        });
        expect(res.statusCode).toBe(200);
        await new Promise((r) => setTimeout(r, 800));
        const meanwhile = await analysed(`/journeys.analytics/${journeyId}/stats`, {});
        expect(meanwhile.source).toBe('events');
        await holder.query('COMMIT');
      } finally {
        await holder.end();
      }
      await waitUntilMaintained();
      const recipients = await analysed(`/journeys.analytics/${journeyId}/steps/s1/recipients`, {
        status: 'entered',
        limit: 10_000,
      });
      expect(recipients.source).toBe('maintained');
      expect(recipients.body).toContain('late-u');
      await compareAll();
    },
  );

  it('read the events for a step the request maps differently, and stop when a step loses its mapping', async () => {
    const remapped = await analysed(`/journeys.analytics/${journeyId}/funnel-report`, {
      stepMappings: [{ stepId: 's2', interactionId: 'cart' }],
    });
    expect(remapped.source).toBe('events');
    const res = await t.inject({
      method: 'PATCH',
      url: `/admin/collection/${c.id}/journeys/${journeyId}`,
      headers: c.auth,
      payload: { data: { steps: [STEPS[0], { id: 's2' }] } },
    });
    expect(res.statusCode).toBe(200);
    const entered = await analysed(`/journeys.analytics/${journeyId}/steps/s1/recipients`, { status: 'entered' });
    expect(entered.source).toBe('events');
    await waitFor(
      async () => {
        const { rows } = await t.testDb.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM journey_progress WHERE collection_id = $1 AND journey_id = $2',
          [c.id, journeyId],
        );
        return rows[0].n === 0 ? true : undefined;
      },
      15_000,
      'the unkept journey’s rows to go',
    );
  });

  it('lose a deleted journey’s rows and counters', async () => {
    const j = await post('/journeys', { name: 'Again', journeyType: 'event_triggered', data: { steps: STEPS } });
    const id = j.json().id;
    await append({ interactionId: 'enter', userId: 'z1', outcome: 'success', journeyId: id });
    await append({ interactionId: 'view', userId: 'z1', outcome: 'success' });
    const count = async () => {
      const { rows } = await t.testDb.db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM journey_progress WHERE collection_id = $1 AND journey_id = $2)
              + (SELECT count(*) FROM journey_progress_counts WHERE collection_id = $1 AND journey_id = $2) AS n`,
        [c.id, id],
      );
      return Number(rows[0].n);
    };
    await waitFor(async () => ((await count()) > 0 ? true : undefined), 15_000, 'progress rows');
    const del = await t.inject({ method: 'DELETE', url: `/admin/collection/${c.id}/journeys/${id}`, headers: c.auth });
    expect(del.statusCode).toBe(200);
    await waitFor(async () => ((await count()) === 0 ? true : undefined), 15_000, 'the deleted journey’s rows to go');
  });

  it('adopt journeys stored before progress was kept', async () => {
    await t.testDb.db.query(
      `INSERT INTO journeys (collection_id, id, name, journey_type, data) VALUES ($1, 'jrn_old', 'Old', 'event_triggered', $2::jsonb),
         ($1, 'jrn_loose', 'Loose', 'event_triggered', '{"steps": [{"id": "a"}]}'::jsonb)`,
      [c.id, JSON.stringify({ steps: STEPS })],
    );
    await append({ interactionId: 'enter', userId: 'o1', outcome: 'success', journeyId: 'jrn_old' });
    const services = (t.app as unknown as { services: { journeys: { adoptJourneys(): Promise<number> } } }).services;
    expect(await services.journeys.adoptJourneys()).toBe(2);
    // Adopted once: the journey that cannot be kept has a state without steps.
    expect(await services.journeys.adoptJourneys()).toBe(0);
    await waitFor(
      async () => {
        const res = await analysed('/journeys.analytics/jrn_old/stats', {});
        return res.source === 'maintained' ? res.body : undefined;
      },
      15_000,
      'the adopted journey’s rebuild',
    ).then((stats) => expect(stats.totalEntered).toBe(1));
  });
});

describe('counter compaction in a worker process', () => {
  it('runs every INTERACTIONS_COMPACT_EVERY_MS and leaves one row per counter of past hours', async () => {
    const w = await createTestApp({ INTERACTIONS_COMPACT_EVERY_MS: '1000' });
    try {
      const col = await w.createCollection();
      const to = (path: string, payload: Record<string, unknown>) =>
        w.inject({ method: 'POST', url: `/admin/collection/${col.id}${path}`, headers: col.auth, payload });
      expect((await to('/interactions', { id: 'tick', appId: 'shop' })).statusCode).toBeLessThan(300);
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          to('/interactions/append', {
            appId: 'shop',
            interactionId: 'tick',
            userId: `u${i % 4}`,
            outcome: i % 3 ? 'success' : 'fail',
            timestamp: new Date(B + (i % 3) * 3600_000).toISOString(),
          }).then((res) => expect(res.statusCode, res.body).toBe(200)),
        ),
      );
      const spread = async () => {
        const { rows } = await w.testDb.db.query<{ n: number }>(
          `SELECT (SELECT count(*) FROM interaction_counts_hourly WHERE collection_id = $1 AND slot <> 0)
                + (SELECT count(*) FROM interaction_latest_counts WHERE collection_id = $1 AND slot <> 0) AS n`,
          [col.id],
        );
        return Number(rows[0].n);
      };
      await waitFor(async () => ((await spread()) === 0 ? true : undefined), 10_000, 'the compaction timer');
      const counts = await to('/interactions/counts-by-outcome', { interactionId: 'tick' });
      expect(counts.json()).toEqual([
        { outcome: 'success', count: 8 },
        { outcome: 'fail', count: 4 },
      ]);
      const latest = await to('/interactions/counts-by-outcome', { interactionId: 'tick', dedupeLatest: true });
      const fromEvents = await to('/interactions/counts-by-outcome', {
        interactionId: 'tick',
        dedupeLatest: true,
        appId: 'shop',
      });
      expect(latest.headers['x-analytics-source']).toBe('maintained');
      expect(latest.json()).toEqual(fromEvents.json());
    } finally {
      await w.close();
    }
  });
});
