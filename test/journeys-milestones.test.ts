/**
 * journey.step.completed and journey.completed (src/modules/journeys/journeys.milestones.ts)
 * at a real receiver, compared with a brute-force computation (test/helpers/analytics-oracle.ts)
 * of the events the test generated: dozens of recipients with random partial progress, events
 * given out of order and twice, outcomes that complete nothing. Exactly one event per
 * recipient and step, and one journey.completed per finisher; nothing for a rolled-back event;
 * nothing again after progress is rebuilt, or when a step taken back by a delete is completed
 * again; nothing for another collection's journeys; filters by journey.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../clients/typescript/src/webhooks.ts';
import { EventModel, funnel, type IdField, type NewRow, Rng, resolveSteps } from './helpers/analytics-oracle.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { sleep, waitFor } from './helpers/jobs.ts';
import { type Received, type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;
let journeyA: string;
let journeyB: string;
const secrets = new Map<string, string>();

const DAY = 86400_000;
const B = Date.parse('2026-03-01T00:00:00.000Z');
const STEPS = [
  { id: 's1', name: 'Look around', config: { interactionId: 'view' } },
  { id: 's2', title: 'Fill the cart', config: { interactionId: 'cart' } },
  { id: 's3', config: { interactionId: 'buy', outcome: 'paid' } },
];
const steps = resolveSteps({ steps: STEPS }, []);
const models = new Map<string, EventModel>();

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    JOBS_CONCURRENCY: '4',
    JOBS_POLL_INTERVAL_MS: '200',
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
  for (const c of [a, b]) {
    for (const id of ['enter', 'view', 'cart', 'buy', 'other']) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${c.id}/interactions`,
        headers: c.auth,
        payload: { id, appId: 'shop' },
      });
      expect(res.statusCode, res.body).toBeLessThan(300);
    }
  }
  journeyA = await createJourney(a, 'shop');
  journeyB = await createJourney(b, 'shop');
  await register(a, '/a', ['journey.*']);
  await register(b, '/b', ['journey.*']);
  await register(a, '/a-done', ['journey.completed'], { filters: { journeyIds: [journeyA] } });
  await register(a, '/a-other-app', ['journey.*'], { filters: { appIds: ['another-app'] } });
  models.set(a.id, new EventModel());
  models.set(b.id, new EventModel());
  // Progress of a new journey is ready once its (empty) rebuild has run.
  await progressReady(a, journeyA);
  await progressReady(b, journeyB);
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

async function createJourney(c: TestCollection, appId: string): Promise<string> {
  const res = await t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/journeys`,
    headers: c.auth,
    payload: { name: 'Checkout', journeyType: 'event_triggered', appId, data: { steps: STEPS } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().id;
}

async function register(c: TestCollection, path: string, events: string[], extra: Record<string, unknown> = {}) {
  const res = await t.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: c.auth,
    payload: { url: `${rx.url}${path}`, events, active: true, ...extra },
  });
  expect(res.statusCode, res.body).toBe(200);
  secrets.set(path, res.json().secret);
}

async function progressReady(c: TestCollection, journeyId: string) {
  await waitFor(async () => {
    const { rows } = await t.testDb.db.query<{ ready: boolean }>(
      'SELECT ready FROM journey_progress_state WHERE collection_id = $1 AND journey_id = $2',
      [c.id, journeyId],
    );
    return rows[0]?.ready ? true : undefined;
  });
}

let nextEvent = 0;
/** Appends through the API, and to the model. */
async function append(c: TestCollection, e: Omit<NewRow, 'eventId' | 'appId'> & { eventId?: string }) {
  const eventId = e.eventId ?? `ev${nextEvent++}`;
  const res = await t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/interactions/append`,
    headers: c.auth,
    payload: {
      appId: 'shop',
      eventId,
      interactionId: e.interactionId,
      timestamp: new Date(e.at).toISOString(),
      ...(e.userId && { userId: e.userId }),
      ...(e.contactId && { contactId: e.contactId }),
      ...(e.outcome !== null && { outcome: e.outcome }),
      ...(e.journeyId !== null && { journeyId: e.journeyId }),
    },
  });
  expect(res.statusCode, res.body).toBe(200);
  (models.get(c.id) as EventModel).append({ ...e, eventId, appId: 'shop' });
}

/**
 * Random journeys of `people` recipients: most enter, each step's event comes with some
 * chance (before or after the step could be entered), twice now and then, sometimes with an
 * outcome that completes nothing; all shuffled, so events arrive out of order.
 */
function generate(r: Rng, c: TestCollection, journeyId: string, people: number, prefix: string) {
  const events: Omit<NewRow, 'eventId' | 'appId'>[] = [];
  for (let u = 0; u < people; u++) {
    const userId = r.chance(0.9) ? `${prefix}u${u}` : undefined;
    const contactId = r.chance(0.6) ? `${prefix}c${r.chance(0.8) ? u : (u + 1) % people}` : undefined;
    if (!userId && !contactId) continue;
    const who = { userId, contactId };
    const entered = B + r.int(3 * DAY);
    if (r.chance(0.85)) events.push({ ...who, interactionId: 'enter', at: entered, outcome: 'success', journeyId });
    for (const [k, s] of steps.entries()) {
      if (!r.chance(0.85 - k * 0.1)) continue;
      const n = r.chance(0.2) ? 2 : 1;
      for (let i = 0; i < n; i++) {
        const outcome = r.chance(0.15) ? 'fail' : s.outcome;
        // Mostly a step after the one before (a day apart, give or take), now and then any time.
        const at = r.chance(0.8) ? entered + Math.floor((k + 0.2 + r.next()) * DAY) : B + r.int(10 * DAY);
        events.push({ ...who, interactionId: s.interactionId, at, outcome, journeyId: null });
      }
    }
    if (r.chance(0.2))
      events.push({ ...who, interactionId: 'other', at: B + r.int(10 * DAY), outcome: 'success', journeyId: null });
  }
  return r.shuffle(events).map((e) => () => append(c, e));
}

/** Runs appends a few at a time (concurrent writers for the same people now and then). */
async function run(tasks: (() => Promise<void>)[], width = 4) {
  for (let i = 0; i < tasks.length; i += width) await Promise.all(tasks.slice(i, i + width).map((f) => f()));
}

/** Milestones noted are published, and every delivery of them made. */
async function settled() {
  await waitFor(
    async () => {
      const { rows } = await t.testDb.db.query<{ pending: number; deliveries: number }>(`
        SELECT (SELECT count(*)::int FROM journey_milestones WHERE published_at IS NULL) AS pending,
          (SELECT count(*)::int FROM jobs WHERE task = 'webhooks.deliver' AND status NOT IN ('completed', 'failed', 'cancelled')) AS deliveries`);
      return rows[0].pending === 0 && rows[0].deliveries === 0 ? true : undefined;
    },
    60_000,
    'milestones published and delivered',
  );
  // Nothing more arrives.
  for (let seen = -1; seen !== rx.received.length; ) {
    seen = rx.received.length;
    await sleep(150);
  }
}

const keyOf = (type: string, idField: string, rid: string, stepId = '') => `${type}|${idField}|${rid}|${stepId}`;

/** What the brute force says progress has reached now, with the completion times. */
function expected(c: TestCollection, journeyId: string): Map<string, number> {
  const out = new Map<string, number>();
  const rows = (models.get(c.id) as EventModel).rows;
  for (const idField of ['userId', 'contactId'] as IdField[]) {
    const f = funnel(rows, journeyId, steps, idField, {});
    f.steps.forEach((s, k) => {
      for (const [rid, at] of s.completed) {
        out.set(keyOf('journey.step.completed', idField, rid, steps[k].stepId), at);
        if (k === steps.length - 1) out.set(keyOf('journey.completed', idField, rid), at);
      }
    });
  }
  return out;
}

/** What the receiver got at `path`, counted per milestone. */
function received(path: string): Map<string, { n: number; last: Received }> {
  const out = new Map<string, { n: number; last: Received }>();
  for (const r of rx.on(path)) {
    const d = r.body.data as Record<string, string>;
    const rid = d.id_field === 'userId' ? d.user_id : d.contact_id;
    const key = keyOf(r.body.type, d.id_field, rid, d.step_id);
    out.set(key, { n: (out.get(key)?.n ?? 0) + 1, last: r });
  }
  return out;
}

/** Every milestone reached so far (`union`, over the test's phases), each received once. */
function compare(path: string, union: Map<string, number>) {
  const got = received(path);
  const dupes = [...got].filter(([, v]) => v.n > 1).map(([k]) => k);
  expect(dupes).toEqual([]);
  expect([...got.keys()].sort()).toEqual([...union.keys()].sort());
  for (const [key, { last }] of got) {
    // Progress only moves earlier as events arrive: what was announced is at or after the final time.
    expect(Date.parse(last.body.data.completed_at as string), key).toBeGreaterThanOrEqual(union.get(key) as number);
  }
}

const unionA = new Map<string, number>();
const unionB = new Map<string, number>();
const addTo = (union: Map<string, number>, now: Map<string, number>) => {
  for (const [k, at] of now) union.set(k, Math.min(at, union.get(k) ?? at));
};

describe('journey milestones', () => {
  it('one journey.step.completed per recipient and step, one journey.completed per finisher, as brute force says', async () => {
    const r = new Rng(2411);
    const tasks = [...generate(r, a, journeyA, 40, 'a'), ...generate(r, b, journeyB, 12, 'b')];
    await run(r.shuffle(tasks));
    await settled();
    addTo(unionA, expected(a, journeyA));
    addTo(unionB, expected(b, journeyB));
    expect(unionA.size).toBeGreaterThan(40);
    expect([...unionA.keys()].filter((k) => k.startsWith('journey.completed')).length).toBeGreaterThan(5);
    compare('/a', unionA);
    compare('/b', unionB);

    // The payload, signed; a's events name a's journey only.
    const sample = rx.on('/a').find((x) => x.body.type === 'journey.step.completed' && x.body.data.step_id === 's1');
    expect(sample).toBeDefined();
    const s = sample as Received;
    expect(s.body.data).toMatchObject({
      journey_id: journeyA,
      journey_name: 'Checkout',
      step_number: 1,
      step_name: 'Look around',
      steps_total: 3,
    });
    const rid = s.body.data.id_field === 'userId' ? s.body.data.user_id : s.body.data.contact_id;
    const event = (models.get(a.id) as EventModel).rows.find((e) => e.eventId === s.body.data.interaction_event_id);
    expect(event?.interactionId).toBe('view');
    expect(s.body.data.id_field === 'userId' ? event?.userId : event?.contactId).toBe(rid);
    const verified = await verifyWebhook({
      rawBody: s.raw,
      headers: s.headers as Record<string, string>,
      secret: secrets.get('/a') as string,
    });
    expect(verified.type).toBe('journey.step.completed');
    expect(rx.on('/a').every((x) => x.body.data.journey_id === journeyA)).toBe(true);
    expect(rx.on('/b').every((x) => x.body.data.journey_id === journeyB)).toBe(true);
    expect(rx.on('/a').find((x) => x.body.data.step_id === 's2')?.body.data.step_name).toBe('Fill the cart');
    expect(rx.on('/a').find((x) => x.body.data.step_id === 's3')?.body.data.step_name).toBeNull();

    // Filters: only a's journey.completed; nothing for an app the journey is not of.
    const done = [...unionA.keys()].filter((k) => k.startsWith('journey.completed|'));
    expect(rx.on('/a-done').map((x) => x.body.type)).toEqual(done.map(() => 'journey.completed'));
    expect(rx.on('/a-other-app')).toHaveLength(0);
  });

  it('nothing for events whose transaction rolled back', async () => {
    const before = rx.received.length;
    const rid = 'rollback-u';
    await expect(
      t.testDb.db.transaction(async (tx) => {
        for (const [i, e] of [
          { interactionId: 'enter', journeyId: journeyA, outcome: 'success' },
          { interactionId: 'view', journeyId: null, outcome: 'success' },
          { interactionId: 'cart', journeyId: null, outcome: 'success' },
        ].entries()) {
          await tx.query(
            `INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, occurred_at, user_id, outcome, journey_id)
             VALUES ($1, $2, $3, 'shop', $4, $5, $6, $7)`,
            [a.id, `rb${i}`, e.interactionId, new Date(B + i * 1000), rid, e.outcome, e.journeyId],
          );
        }
        const { rows } = await tx.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM journey_milestones WHERE collection_id = $1 AND rid = $2',
          [a.id, rid],
        );
        // Noted in the transaction (the triggers saw the recipient move) ...
        expect(rows[0].n).toBe(2);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    await sleep(300);
    await settled();
    // ... and gone with it: nothing published.
    expect(rx.received.length).toBe(before);
    const { rows } = await t.testDb.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM journey_milestones WHERE collection_id = $1 AND rid = $2',
      [a.id, rid],
    );
    expect(rows[0].n).toBe(0);
  });

  it('nothing again when progress is rebuilt', async () => {
    const before = rx.received.length;
    // A rebuild as a change of the steps queues it: a new version, every entrant written again.
    await t.testDb.db.transaction(async (tx) => {
      await tx.query(
        'UPDATE journey_progress_state SET version = version + 1, ready = false WHERE collection_id = $1 AND journey_id = $2',
        [a.id, journeyA],
      );
      await t.app.services.jobs.engine.enqueue(tx, a.id, {
        task: 'journeys.progress',
        payload: { journeyId: journeyA },
        queueName: `journeys.progress:${journeyA}`,
      });
    });
    await progressReady(a, journeyA);
    await settled();
    expect(rx.received.length).toBe(before);
    // The rebuilt progress still answers: the funnel from the counters is the brute force's.
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/journeys.analytics/${journeyA}/funnel-report`,
      headers: a.auth,
      payload: { idField: 'userId', stepMappings: [] },
    });
    expect(res.headers['x-analytics-source']).toBe('maintained');
    const f = funnel((models.get(a.id) as EventModel).rows, journeyA, steps, 'userId', {});
    expect(res.json().steps.map((s: { completedCount: number }) => s.completedCount)).toEqual(
      f.steps.map((s) => s.completed.size),
    );
  });

  it('nothing for a journey without maintained progress (a step without mapping)', async () => {
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/journeys`,
      headers: a.auth,
      payload: {
        name: 'Unmapped',
        journeyType: 'event_triggered',
        appId: 'shop',
        data: { steps: [{ id: 'x1', config: { interactionId: 'view' } }, { id: 'x2' }] },
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const unmapped = res.json().id as string;
    const before = rx.received.length;
    await append(a, { userId: 'um1', interactionId: 'enter', outcome: 'success', journeyId: unmapped, at: B });
    await append(a, { userId: 'um1', interactionId: 'view', outcome: 'success', journeyId: null, at: B + 1000 });
    await settled();
    // um1 is no recipient of journeyA (never entered it): nothing at all.
    expect(rx.received.slice(before)).toEqual([]);
  });

  it('a step taken back by a delete and completed again is not announced twice; new progress is', async () => {
    const model = models.get(a.id) as EventModel;
    // Delete the events that completed s1 for a few recipients, then complete it (and more) again.
    const f = funnel(model.rows, journeyA, steps, 'userId', {});
    const takenBack = [...f.steps[0].completed.keys()].slice(0, 5);
    for (const rid of takenBack) {
      const rows = model.rows.filter((e) => e.userId === rid && e.interactionId === 'view' && !e.deleted);
      for (const e of rows) {
        const res = await t.inject({
          method: 'PATCH',
          url: `/admin/collection/${a.id}/interactions/events/${e.eventId}`,
          headers: a.auth,
          payload: { deleted: true },
        });
        expect(res.statusCode, res.body).toBe(200);
        model.setDeleted(e.eventId, true);
      }
    }
    await settled();
    addTo(unionA, expected(a, journeyA));
    compare('/a', unionA);
    const r = new Rng(77);
    const again = takenBack.flatMap((rid) =>
      steps.map(
        (s, k) => () =>
          append(a, {
            userId: rid,
            interactionId: s.interactionId,
            outcome: s.outcome,
            journeyId: null,
            at: B + 11 * DAY + k * 1000 + r.int(500),
          }),
      ),
    );
    await run([...again, ...generate(r, a, journeyA, 15, 'late')]);
    await settled();
    addTo(unionA, expected(a, journeyA));
    compare('/a', unionA);
    for (const rid of takenBack) expect(received('/a').get(keyOf('journey.completed', 'userId', rid))?.n).toBe(1);
    compare('/b', unionB);
  });
});
