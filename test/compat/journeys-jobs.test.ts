/**
 * Journeys, journey analytics, jobs and locations called as a client written for the original
 * calls them: its SDK's paths (with `BASE_PATH=/api/v1`, trailing slashes where it sends them),
 * its request bodies and query strings, the admin key as `X-API-Key`. Each answer is checked
 * against the original's types: every required field present, optional fields absent when
 * unset (never `null`), `null` only where the original types a field `… | null`.
 *
 * Step recipients (the original documents the call as "for completed/pending, `interactionId`
 * is required; outcome defaults to 'success'") are checked on a journey whose steps carry no
 * interaction mapping, with known events and the exact recipients expected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, SUPER_KEY, type TestApp } from '../helpers/app.ts';
import { type CollectionWithUser, twoCollections } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/jobs.ts';

const BASE = '/api/v1';
let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

const adminKey = (c: CollectionWithUser) => ({ 'x-api-key': c.key });

async function call(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  c: CollectionWithUser,
  payload?: object,
) {
  return t.inject({ method, url: `${BASE}${path}`, headers: adminKey(c), payload: payload as Record<string, unknown> });
}

/**
 * An object of the original's type: `required` keys present, `nullable` ones (typed
 * `… | null` there) the only ones that may be null, `absent` ones (optional, unset here) not sent.
 */
function expectShape(
  value: Record<string, unknown>,
  shape: { required: string[]; nullable?: string[]; absent?: string[] },
) {
  for (const k of shape.required) expect(Object.hasOwn(value, k), `${k} is required`).toBe(true);
  for (const [k, v] of Object.entries(value)) {
    if (v === null) expect(shape.nullable ?? [], `${k} is null but not nullable`).toContain(k);
  }
  for (const k of shape.absent ?? []) expect(Object.hasOwn(value, k), `${k} should be absent`).toBe(false);
}

const JOURNEY_REQUIRED = ['id', 'collectionId', 'name', 'active', 'journeyType', 'createdAt', 'updatedAt'];

beforeAll(async () => {
  t = await createTestApp({ BASE_PATH: BASE });
  ({ a, b } = await twoCollections(t));
});
afterAll(() => t.close());

describe('journeys CRUD as the SDK sends it', () => {
  let id: string;

  it('create (POST …/journeys/) answers a JourneyRecord; appId and the presentation fields are absent when unset', async () => {
    const res = await call('POST', `/admin/collection/${a.id}/journeys/`, a, {
      name: 'Welcome',
      journeyType: 'event_triggered',
    });
    expect(res.statusCode, res.body).toBe(200);
    const j = res.json();
    expectShape(j, {
      required: JOURNEY_REQUIRED,
      absent: ['appId', 'display', 'title', 'description', 'icon', 'color', 'steps', 'triggers', 'metadata'],
    });
    expect(j).toMatchObject({ collectionId: a.id, name: 'Welcome', active: true, journeyType: 'event_triggered' });
    id = j.id;
  });

  it('create with every field of CreateJourneyBody, data as the SDK types it', async () => {
    const data = {
      display: { title: 'Onboarding', icon: 'rocket' },
      steps: [
        { id: 'welcome', type: 'email', config: { templateId: 'tpl_welcome' } },
        { id: 'activated', type: 'goal' },
      ],
      triggers: [{ type: 'interaction', config: { interactionId: 'signup' } }],
      entryRules: [],
      exitRules: [],
      metadata: { owner: 'growth' },
    };
    const res = await call('POST', `/admin/collection/${a.id}/journeys/`, a, {
      appId: 'crm',
      name: 'Onboarding',
      active: false,
      journeyType: 'scheduled',
      data,
    });
    expect(res.statusCode, res.body).toBe(200);
    const j = res.json();
    expectShape(j, { required: [...JOURNEY_REQUIRED, 'appId', 'data'] });
    expect(j).toMatchObject({ appId: 'crm', active: false, journeyType: 'scheduled', data });
  });

  it('list (GET …/journeys/?query) answers {items, limit, offset}, booleans as the SDK writes them', async () => {
    const res = await call('GET', `/admin/collection/${a.id}/journeys/?active=true&journeyType=event_triggered`, a);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json();
    expectShape(page, { required: ['items', 'limit', 'offset'] });
    expect(page.items.map((j: { id: string }) => j.id)).toEqual([id]);
    for (const j of page.items) expectShape(j, { required: JOURNEY_REQUIRED, absent: ['appId'] });
    const byApp = await call('GET', `/admin/collection/${a.id}/journeys/?appId=crm&active=false&limit=10&offset=0`, a);
    expect(byApp.json()).toMatchObject({ limit: 10, offset: 0, items: [{ name: 'Onboarding' }] });
  });

  it('get, update (UpdateJourneyBody) and remove', async () => {
    const got = await call('GET', `/admin/collection/${a.id}/journeys/${id}`, a);
    expect(got.statusCode, got.body).toBe(200);
    expectShape(got.json(), { required: JOURNEY_REQUIRED, absent: ['appId'] });
    const updated = await call('PATCH', `/admin/collection/${a.id}/journeys/${id}`, a, {
      appId: 'crm',
      name: 'Welcome v2',
      active: false,
      journeyType: 'scheduled',
      data: { steps: [{ id: 's1', type: 'email' }] },
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json()).toMatchObject({ appId: 'crm', name: 'Welcome v2', active: false, journeyType: 'scheduled' });
    expect(updated.json().steps).toEqual([{ id: 's1', type: 'email' }]);
    // Another collection's admin key does not reach it.
    expect((await call('GET', `/admin/collection/${b.id}/journeys/${id}`, b)).statusCode).toBe(404);
    const removed = await call('DELETE', `/admin/collection/${a.id}/journeys/${id}`, a);
    expect(removed.statusCode, removed.body).toBe(200);
    expect((await call('GET', `/admin/collection/${a.id}/journeys/${id}`, a)).statusCode).toBe(404);
  });
});

describe('journey analytics as the SDK sends it', () => {
  let journeyId: string;
  const analytics = (path: string, body: object, c = a, id = () => journeyId) =>
    call('POST', `/admin/collection/${c.id}/journeys.analytics/${id()}${path}`, c, body);

  beforeAll(async () => {
    for (const c of [a, b]) {
      for (const interaction of ['journey-entry', 'step2']) {
        const res = await call('POST', `/admin/collection/${c.id}/interactions`, c, { id: interaction, appId: 'crm' });
        expect(res.statusCode, res.body).toBe(200);
      }
    }
    // Steps as the original's JourneyRecord types them: actions, no interaction mapping.
    const created = await call('POST', `/admin/collection/${a.id}/journeys/`, a, {
      name: 'Activation',
      journeyType: 'event_triggered',
      data: {
        steps: [
          { id: 's1', type: 'email', config: { templateId: 'tpl_1' } },
          { id: 's2', type: 'wait', config: { hours: 24 } },
        ],
      },
    });
    journeyId = created.json().id;
    const events: [CollectionWithUser, Record<string, unknown>][] = [
      // alice, bob and carol enter; alice completes step2 (success), bob's step2 failed, carol has none.
      [a, { interactionId: 'journey-entry', userId: 'alice', journeyId }],
      [a, { interactionId: 'journey-entry', userId: 'bob', journeyId }],
      [a, { interactionId: 'journey-entry', userId: 'carol', journeyId }],
      [a, { interactionId: 'step2', userId: 'alice', outcome: 'success' }],
      [a, { interactionId: 'step2', userId: 'bob', outcome: 'failed' }],
      // dave has a step2 success but never entered the journey.
      [a, { interactionId: 'step2', userId: 'dave', outcome: 'success' }],
      // The other collection: erin enters (the same journey id) and completes there.
      [b, { interactionId: 'journey-entry', userId: 'erin', journeyId }],
      [b, { interactionId: 'step2', userId: 'erin', outcome: 'success' }],
    ];
    for (const [c, payload] of events) {
      const res = await call('POST', `/admin/collection/${c.id}/interactions/append`, c, payload);
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it("recipients {status: 'completed', interactionId: 'step2'}: entered and has a success step2 event", async () => {
    const res = await analytics('/steps/s2/recipients', { status: 'completed', interactionId: 'step2' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual(['alice']);
  });

  it('recipients pending, entered, and with an outcome', async () => {
    const ids = async (body: object) => {
      const res = await analytics('/steps/s2/recipients', body);
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };
    expect(await ids({ status: 'pending', interactionId: 'step2' })).toEqual(['bob', 'carol']);
    expect(await ids({ status: 'entered' })).toEqual(['alice', 'bob', 'carol']);
    expect(await ids({ status: 'completed', interactionId: 'step2', outcome: 'failed' })).toEqual(['bob']);
    // The SDK's default body is {}: status completed, which needs an interaction for this step.
    const none = await analytics('/steps/s2/recipients', {});
    expect(none.statusCode).toBe(400);
    expect(none.json().message).toContain('interactionId');
  });

  it("another collection's key is refused, and its events do not count", async () => {
    const foreign = await analytics('/steps/s2/recipients', { status: 'completed', interactionId: 'step2' }, b);
    expect(foreign.statusCode).toBe(404);
    const res = await t.inject({
      method: 'POST',
      url: `${BASE}/admin/collection/${a.id}/journeys.analytics/${journeyId}/steps/s2/recipients`,
      headers: adminKey(b),
      payload: { status: 'completed', interactionId: 'step2' },
    });
    expect(res.statusCode).toBe(401);
  });

  it('stats: optional completed/currentlyActive only with finalStepId; exitedViaGoal absent', async () => {
    const mappings = [
      { stepId: 's1', interactionId: 'journey-entry', outcome: 'success' },
      { stepId: 's2', interactionId: 'step2' },
    ];
    const res = await analytics('/stats', { stepMappings: mappings });
    expect(res.statusCode, res.body).toBe(200);
    expectShape(res.json(), {
      required: ['journeyId', 'totalEntered', 'lastUpdated', 'stepStats'],
      absent: ['completed', 'currentlyActive', 'exitedViaGoal'],
    });
    for (const s of res.json().stepStats) expectShape(s, { required: ['stepId', 'entered', 'completed', 'pending'] });
    const final = await analytics('/stats', { stepMappings: mappings, finalStepId: 's2' });
    expectShape(final.json(), { required: ['completed', 'currentlyActive'], absent: ['exitedViaGoal'] });
  });

  it('funnel report: periodStart/periodEnd null when not given (the original types them string | null)', async () => {
    const res = await analytics('/funnel-report', {
      stepMappings: [
        { stepId: 's1', interactionId: 'journey-entry', outcome: 'success' },
        { stepId: 's2', interactionId: 'step2' },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const report = res.json();
    expectShape(report, {
      required: ['journeyId', 'periodStart', 'periodEnd', 'steps'],
      nullable: ['periodStart', 'periodEnd'],
    });
    expect(report).toMatchObject({ periodStart: null, periodEnd: null });
    for (const s of report.steps) {
      expectShape(s, {
        required: ['stepId', 'enteredCount', 'completedCount', 'conversionRate', 'avgTimeToComplete'],
        nullable: ['avgTimeToComplete'],
      });
    }
  });

  it('funnel report takes a stepMappings item without interactionId (optional in the original)', async () => {
    const journey = await call('POST', `/admin/collection/${a.id}/journeys/`, a, {
      name: 'Mapped',
      journeyType: 'event_triggered',
      data: { steps: [{ id: 'm1', type: 'goal', config: { interactionId: 'step2' } }] },
    });
    const res = await analytics(
      '/funnel-report',
      { stepMappings: [{ stepId: 'm1', outcome: 'failed' }] },
      a,
      () => journey.json().id,
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().steps).toMatchObject([{ stepId: 'm1', interactionId: 'step2', outcome: 'failed' }]);
  });
});

describe('jobs as the SDK sends it', () => {
  const later = () => new Date(Date.now() + 3600_000).toISOString();

  it('enqueue without key: {id, task, runAt}, key absent (not null); with key: key present', async () => {
    const res = await call('POST', `/admin/collection/${a.id}/async/jobs`, a, {
      task: 'cases.bulkStatus',
      payload: { appId: 'support', status: 'closed' },
      runAt: later(),
    });
    expect(res.statusCode, res.body).toBe(202);
    expectShape(res.json(), { required: ['id', 'task', 'runAt'], absent: ['key'] });
    expect(typeof res.json().id).toBe('number');
    const keyed = await call('POST', `/admin/collection/${a.id}/async/jobs`, a, {
      task: 'cases.bulkStatus',
      payload: { appId: 'support', status: 'closed' },
      runAt: later(),
      priority: 1,
      key: 'nightly-close',
      queueName: 'support',
    });
    expect(keyed.statusCode, keyed.body).toBe(202);
    expect(keyed.json()).toMatchObject({ task: 'cases.bulkStatus', key: 'nightly-close' });
  });

  const JOB_REQUIRED = [
    'id',
    'task',
    'payload',
    'priority',
    'runAt',
    'createdAt',
    'attempts',
    'lastError',
    'lockedAt',
    'key',
    'queueName',
    'status',
  ];
  // The original's Job types these `string | null`; our additions progress, result and
  // finishedAt are null until set, the same way.
  const JOB_NULLABLE = ['lastError', 'lockedAt', 'key', 'queueName', 'progress', 'result', 'finishedAt'];

  it('a queued job read both ways (getAsyncJobStatus, getJob) and listed (listJobs)', async () => {
    const { id } = (
      await call('POST', `/admin/collection/${a.id}/async/jobs`, a, {
        task: 'cases.bulkStatus',
        payload: { appId: 'support', status: 'open' },
        runAt: later(),
      })
    ).json();
    for (const path of [`/admin/collection/${a.id}/async/jobs/${id}`, `/admin/collection/${a.id}/jobs/${id}`]) {
      const res = await call('GET', path, a);
      expect(res.statusCode, res.body).toBe(200);
      expectShape(res.json(), { required: JOB_REQUIRED, nullable: JOB_NULLABLE });
      expect(res.json()).toMatchObject({
        id,
        status: 'queued',
        key: null,
        queueName: null,
        lastError: null,
        lockedAt: null,
      });
    }
    const list = await call(
      'GET',
      `/admin/collection/${a.id}/jobs?state=queued&task=cases.bulkStatus&limit=50&offset=0`,
      a,
    );
    expect(list.statusCode, list.body).toBe(200);
    expectShape(list.json(), { required: ['items', 'limit', 'offset'] });
    expect(list.json().items.map((j: { id: number }) => j.id)).toContain(id);
    for (const j of list.json().items) expectShape(j, { required: JOB_REQUIRED, nullable: JOB_NULLABLE });
    expect((await call('GET', `/admin/collection/${b.id}/jobs/${id}`, b)).statusCode).toBe(404);
  });

  it('a finished job keeps the same fields; its status is completed (an addition to the original’s three)', async () => {
    const { id } = (
      await call('POST', `/admin/collection/${a.id}/async/jobs`, a, {
        task: 'cases.bulkStatus',
        payload: { appId: 'support', status: 'closed' },
      })
    ).json();
    const job = await waitFor(async () => {
      const j = (await call('GET', `/admin/collection/${a.id}/async/jobs/${id}`, a)).json();
      return j.status === 'completed' ? j : undefined;
    });
    expectShape(job, { required: JOB_REQUIRED, nullable: JOB_NULLABLE });
    expect(job).toMatchObject({ lastError: null, lockedAt: null, attempts: 1 });
  });
});

describe('locations as the SDK sends it', () => {
  const LOCATION_REQUIRED = ['locationId', 'collectionId', 'scope', 'name', 'createdAt', 'updatedAt'];
  const OPTIONAL = [
    'category',
    'description',
    'countryName',
    'countryCode',
    'websiteUrl',
    'logoUrl',
    'phone',
    'email',
    'geofence',
    'metadata',
  ];
  let globalId: string;
  let ownId: string;

  beforeAll(async () => {
    const global = await t.inject({
      method: 'POST',
      url: `${BASE}/platform/location`,
      headers: { 'x-api-key': SUPER_KEY },
      payload: { name: 'Central Station' },
    });
    expect(global.statusCode, global.body).toBe(200);
    globalId = global.json().locationId;
  });

  it('create with only a name: the optional fields are absent, not null', async () => {
    const res = await call('POST', `/admin/collection/${a.id}/location`, a, { name: 'Shop' });
    expect(res.statusCode, res.body).toBe(200);
    expectShape(res.json(), { required: LOCATION_REQUIRED, absent: OPTIONAL });
    expect(res.json()).toMatchObject({ collectionId: a.id, scope: 'collection' });
    ownId = res.json().locationId;
  });

  it('a global location has collectionId null (the original types it string | null)', async () => {
    const res = await t.inject({ method: 'GET', url: `${BASE}/public/location/${globalId}` });
    expect(res.statusCode, res.body).toBe(200);
    expectShape(res.json(), { required: LOCATION_REQUIRED, nullable: ['collectionId'], absent: OPTIONAL });
    expect(res.json()).toMatchObject({ collectionId: null, scope: 'global' });
  });

  it('a full payload round-trips; search (the SDK always sends limit and sort) and public reads', async () => {
    const payload = {
      name: 'Warehouse',
      category: 'storage',
      description: 'North side',
      countryName: 'Norway',
      countryCode: 'NO',
      websiteUrl: 'https://example.com',
      logoUrl: 'https://example.com/logo.png',
      phone: '+47 1234',
      email: 'ops@example.com',
      geofence: { type: 'bbox', minLat: 1, minLon: 2, maxLat: 3, maxLon: 4 },
      metadata: { dock: 7 },
    };
    const created = await call('POST', `/admin/collection/${a.id}/location`, a, payload);
    expect(created.statusCode, created.body).toBe(200);
    expect(created.json()).toMatchObject(payload);
    const search = await call('GET', `/admin/collection/${a.id}/location/search?limit=20&sort=name`, a);
    expect(search.statusCode, search.body).toBe(200);
    expectShape(search.json(), { required: ['items', 'count'] });
    expect(search.json().items.map((l: { name: string }) => l.name)).toEqual(['Central Station', 'Shop', 'Warehouse']);
    for (const l of search.json().items) expectShape(l, { required: LOCATION_REQUIRED, nullable: ['collectionId'] });
    const own = await t.inject({ method: 'GET', url: `${BASE}/public/collection/${a.id}/location/${ownId}` });
    expect(own.statusCode, own.body).toBe(200);
    expectShape(own.json(), { required: LOCATION_REQUIRED, absent: OPTIONAL });
    // Another collection sees the global one but not a's own.
    expect(
      (await t.inject({ method: 'GET', url: `${BASE}/public/collection/${b.id}/location/${ownId}` })).statusCode,
    ).toBe(404);
  });
});
