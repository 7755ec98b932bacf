/** The app-object job tasks through the jobs API, and the case reports (aggregate, summary, related). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { enqueue, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: TestCollection;
let b: TestCollection;
let alice: { authorization: string };

const cases = (c: TestCollection) => `/admin/collection/${c.id}/app/desk/cases`;
const records = (c: TestCollection) => `/admin/collection/${c.id}/app/desk/records`;

beforeAll(async () => {
  t = await createTestApp({ JOBS_POLL_INTERVAL_MS: '200' });
  a = await t.createCollection();
  b = await t.createCollection();
  alice = bearer(await t.userToken(a.id, 'alice', 'contact-alice'));
});
afterAll(() => t.close());

const post = (url: string, payload: unknown, headers = a.auth) =>
  t.inject({ method: 'POST', url, headers, payload: payload as object });

describe('records.import', () => {
  it('imports records, reporting bad items and saving the rest', async () => {
    const items = [
      ...Array.from({ length: 250 }, (_, i) => ({ ref: `imp-${i}`, recordType: 'import', data: { i } })),
      { ref: 'imp-bad-date', startsAt: 'whenever' },
      { recordType: 'no-ref' },
    ];
    const job = await enqueue(t, a, { task: 'records.import', payload: { appId: 'desk', items } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.result).toMatchObject({ total: 252, saved: 250, failed: 2, created: 250, updated: 0 });
    expect(done.result.errors.map((e: { index: number }) => e.index)).toEqual([250, 251]);
    expect(done.result.errors[0].message).toContain('startsAt');
    const list = await t.inject({ method: 'GET', url: `${records(a)}?recordType=import&limit=1`, headers: a.auth });
    expect(list.json().pagination.total).toBe(250);
    const other = await t.inject({ method: 'GET', url: `${records(b)}?recordType=import`, headers: b.auth });
    expect(other.json().pagination.total).toBe(0);
  });

  it('imports items with nulls as an upsert takes them: the default on a create, cleared on an update', async () => {
    const existing = await post(`${records(a)}/upsert`, {
      ref: 'imp-null-1',
      recordType: 'import-null',
      productId: 'p1',
      status: 'draft',
      startsAt: '2020-01-01',
    });
    expect(existing.statusCode, existing.body).toBe(200);
    const items = [
      { ref: 'imp-null-1', productId: null, status: null },
      { ref: 'imp-null-2', recordType: 'import-null', productId: null, startsAt: null, data: null },
    ];
    const job = await enqueue(t, a, { task: 'records.import', payload: { appId: 'desk', items } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.result, JSON.stringify(done)).toMatchObject({ saved: 2, failed: 0, created: 1, updated: 1 });
    const list = await t.inject({
      method: 'GET',
      url: `${records(a)}?recordType=import-null&sort=ref:asc`,
      headers: a.auth,
    });
    expect(list.json().data).toMatchObject([
      {
        ref: 'imp-null-1',
        productId: null,
        status: 'active',
        startsAt: '2020-01-01T00:00:00.000Z',
        scopeType: 'collection',
      },
      { ref: 'imp-null-2', productId: null, status: 'active', startsAt: null, data: {}, scopeType: 'collection' },
    ]);
  });

  it('refuses a bad payload with 400 and enqueues nothing', async () => {
    for (const payload of [
      {},
      { appId: 'desk' },
      { appId: 'desk', items: [] },
      { appId: 'bad app', items: [{ ref: 'x' }] },
      { appId: 'desk', items: 'x' },
    ]) {
      const res = await post(`/admin/collection/${a.id}/async/jobs`, { task: 'records.import', payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    const user = await post(
      `/admin/collection/${a.id}/async/jobs`,
      { task: 'records.import', payload: { appId: 'desk', items: [{ ref: 'x' }] } },
      alice,
    );
    expect(user.statusCode).toBe(401);
  });
});

describe('cases.bulkStatus', () => {
  it('changes the status of matching cases and records each change in its history', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await post(cases(a), { category: i < 10 ? 'bulk' : 'other', status: i === 0 ? 'closed' : 'open' });
      expect(res.statusCode, res.body).toBe(200);
      ids.push(res.json().id);
    }
    const job = await enqueue(t, a, {
      task: 'cases.bulkStatus',
      payload: { appId: 'desk', status: 'closed', filter: { category: 'bulk' } },
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.result, JSON.stringify(done)).toEqual({ status: 'closed', matched: 10, changed: 9, unchanged: 1 });
    const closed = await t.inject({ method: 'GET', url: `${cases(a)}?category=bulk&status=closed`, headers: a.auth });
    expect(closed.json().pagination.total).toBe(10);
    const others = await t.inject({ method: 'GET', url: `${cases(a)}?category=other&status=open`, headers: a.auth });
    expect(others.json().pagination.total).toBe(2);
    const history = await t.inject({ method: 'GET', url: `${cases(a)}/${ids[1]}/history`, headers: a.auth });
    const last = history.json().data.at(-1);
    expect(last).toMatchObject({
      action: 'status',
      actorId: `job:${job.id}`,
      actorRole: 'admin',
      changes: { status: { from: 'open', to: 'closed' } },
    });
    expect(last.changedFields).toEqual(['status', 'closedAt']);
    const untouched = await t.inject({ method: 'GET', url: `${cases(a)}/${ids[0]}/history`, headers: a.auth });
    expect(untouched.json().data.map((e: { action: string }) => e.action)).toEqual(['create']);
  });

  it('takes the list filters, priority bounds included', async () => {
    // An app of its own: the case reports below count the cases of `desk`.
    const ranked = `/admin/collection/${a.id}/app/ranked/cases`;
    for (let priority = 0; priority < 5; priority++) {
      expect((await post(ranked, { priority })).statusCode).toBe(200);
    }
    const job = await enqueue(t, a, {
      task: 'cases.bulkStatus',
      payload: { appId: 'ranked', status: 'closed', filter: { priority: 'gte:1,lt:4' } },
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.result, JSON.stringify(done)).toEqual({ status: 'closed', matched: 3, changed: 3, unchanged: 0 });
    const open = await t.inject({ method: 'GET', url: `${ranked}?status=open&sort=priority:asc`, headers: a.auth });
    expect(open.json().data.map((c: { priority: number }) => c.priority)).toEqual([0, 4]);
  });

  it('refuses a bad payload with 400', async () => {
    for (const payload of [
      { appId: 'desk' },
      { appId: 'desk', status: '' },
      { appId: 'desk', status: 'x', filter: { password: 'x' } },
      { appId: 'desk', status: 'x', filter: { createdAt: 'soon' } },
      { appId: 'desk', status: 'x', filter: { priority: 'gte:high' } },
    ]) {
      const res = await post(`/admin/collection/${a.id}/async/jobs`, { task: 'cases.bulkStatus', payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
  });
});

describe('case reports', () => {
  it('aggregate: counts, close-time metrics, groups and time series', async () => {
    const res = await post(`${cases(a)}/aggregate`, {
      filters: { category: 'bulk' },
      groupBy: ['status'],
      metrics: ['count', 'avg_close_time', 'p50_close_time', 'p95_close_time'],
      timeSeriesField: 'created_at',
      timeSeriesInterval: 'month',
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.count).toBe(10);
    expect(body.groups).toEqual([expect.objectContaining({ status: 'closed', count: 10 })]);
    expect(typeof body.avg_close_time_seconds).toBe('number');
    expect(body.avg_close_time_seconds).toBeGreaterThanOrEqual(0);
    expect(body.timeSeries).toHaveLength(1);
    expect(body.timeSeries[0].bucket).toBe(new Date().toISOString().slice(0, 7));
    expect(body.timeSeries[0].start).toBe(`${body.timeSeries[0].bucket}-01T00:00:00.000Z`);
    const closedOnly = await post(`${cases(a)}/aggregate`, { closed_at: '__notnull__' });
    expect(closedOnly.json().count).toBe(10);
    for (const payload of [
      { groupBy: ['nope'] },
      { metrics: ['reply_count'] },
      { status: 5 },
      { created_at: { after: 'x' } },
    ]) {
      expect((await post(`${cases(a)}/aggregate`, payload)).statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect((await post(`${cases(a)}/aggregate`, {}, b.auth)).statusCode).toBe(401);
  });

  it('collection summary (admin only): total, byStatus, byPriority, trend', async () => {
    const res = await post(`${cases(a)}/summary`, {});
    expect(res.statusCode, res.body).toBe(200);
    const s = res.json();
    expect(s.total).toBe(12);
    expect(s.byStatus).toEqual({ closed: 10, open: 2 });
    expect(s.byPriority).toEqual({ none: 12 });
    // One week: this one (exact labels at year edges: test/compat/app-objects.test.ts).
    expect(s.trend).toHaveLength(1);
    expect(s.trend[0]).toEqual({ week: expect.stringMatching(/^\d{4}-W\d{2}$/), start: expect.any(String), count: 12 });
    const monday = new Date(s.trend[0].start);
    expect(monday.getUTCDay()).toBe(1);
    expect(s.trend[0].start).toMatch(/T00:00:00.000Z$/);
    expect(Date.now() - monday.getTime()).toBeLessThan(7 * 86_400_000);
    const noBody = await t.inject({ method: 'POST', url: `${cases(a)}/summary`, headers: a.auth });
    expect(noBody.json()).toEqual(s);
    const aggNoBody = await t.inject({ method: 'POST', url: `${cases(a)}/aggregate`, headers: a.auth });
    expect(aggNoBody.json().count).toBe(12);
    const past = await post(`${cases(a)}/summary`, {
      period: { from: '2000-01-01T00:00:00Z', to: '2000-02-01T00:00:00Z' },
    });
    expect(past.json()).toEqual({ total: 0, byStatus: {}, byPriority: {}, trend: [] });
    expect((await post(`${cases(a)}/summary`, { period: { from: 'x' } })).statusCode).toBe(400);
    expect(
      (await post(`${cases(a)}/summary`, { period: { from: '2001-01-01T00:00:00Z', to: '2000-01-01T00:00:00Z' } }))
        .statusCode,
    ).toBe(400);
    expect((await post(`/public/collection/${a.id}/app/desk/cases/summary`, {}, alice)).statusCode).toBe(401);
    expect((await post(`${cases(a)}/summary`, {}, b.auth)).statusCode).toBe(401);
    expect((await t.inject({ method: 'POST', url: `${cases(a)}/summary`, payload: {} })).statusCode).toBe(401);
  });

  it('case summary and related objects', async () => {
    const c = (await post(cases(a), { contactId: 'contact-alice' })).json();
    await post(`/admin/collection/${a.id}/app/desk/threads`, {
      parentType: 'case',
      parentId: c.id,
      visibility: 'public',
    });
    await post(records(a), { parentType: 'case', parentId: c.id, visibility: 'admin' });
    await post(records(a), { parentType: 'case', parentId: 'case_other' });
    await t.inject({ method: 'PATCH', url: `${cases(a)}/${c.id}`, headers: a.auth, payload: { status: 'resolved' } });
    const s = await t.inject({ method: 'GET', url: `${cases(a)}/${c.id}/summary`, headers: a.auth });
    expect(s.statusCode, s.body).toBe(200);
    expect(s.json()).toMatchObject({ threads: 1, records: 1, case: { id: c.id, status: 'resolved' } });
    expect(s.json().timeToCloseSeconds).toBeGreaterThanOrEqual(0);
    expect(s.json().ageSeconds).toBe(s.json().timeToCloseSeconds);
    const asAlice = await t.inject({
      method: 'GET',
      url: `/public/collection/${a.id}/app/desk/cases/${c.id}/summary`,
      headers: alice,
    });
    expect(asAlice.json()).toMatchObject({ threads: 1, records: 0 });
    const rel = await t.inject({ method: 'GET', url: `${cases(a)}/${c.id}/related`, headers: a.auth });
    expect(rel.json().threads).toHaveLength(1);
    expect(rel.json().records).toHaveLength(1);
    expect((await t.inject({ method: 'GET', url: `${cases(a)}/${c.id}/related`, headers: b.auth })).statusCode).toBe(
      401,
    );
    expect((await t.inject({ method: 'GET', url: `${cases(b)}/${c.id}/related`, headers: b.auth })).statusCode).toBe(
      404,
    );
    expect((await t.inject({ method: 'GET', url: `${cases(b)}/${c.id}/summary`, headers: b.auth })).statusCode).toBe(
      404,
    );
    expect((await t.inject({ method: 'GET', url: `${cases(a)}/${c.id}/summary` })).statusCode).toBe(401);
  });
});

describe('GET .../job-tasks: the tasks the API takes, for a picker', () => {
  it('lists every visible task with a description, its payload schema and an example the service accepts', async () => {
    const res = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/job-tasks`, headers: a.auth });
    expect(res.statusCode, res.body).toBe(200);
    const items = res.json().items as { name: string; description: string; payloadSchema: unknown; example: unknown }[];
    expect(items.map((i) => i.name)).toEqual(
      expect.arrayContaining(['cases.bulkStatus', 'interactions.effect', 'interactions.export', 'records.import']),
    );
    expect(items.map((i) => i.name)).not.toContain('webhooks.deliver'); // internal
    for (const task of items) {
      expect(task.description.length, task.name).toBeGreaterThan(20);
      expect(task.payloadSchema, task.name).toMatchObject({ type: 'object' });
      // The example as written passes the task's own checks (a job far in the future, then cancelled).
      const job = await post(`/admin/collection/${a.id}/async/jobs`, {
        task: task.name,
        payload: task.example,
        runAt: '2099-01-01T00:00:00Z',
      });
      expect(job.statusCode, `${task.name}: ${job.body}`).toBe(202);
      const cancel = await post(`/admin/collection/${a.id}/jobs/${job.json().id}/cancel`, {});
      expect(cancel.statusCode, cancel.body).toBe(200);
    }
  });

  it('answers only an admin of the collection', async () => {
    const url = `/admin/collection/${a.id}/job-tasks`;
    expect((await t.inject({ method: 'GET', url })).statusCode).toBe(401);
    expect((await t.inject({ method: 'GET', url, headers: b.auth })).statusCode).toBe(401);
    expect((await t.inject({ method: 'GET', url, headers: alice })).statusCode).toBe(401);
  });
});

describe('GET .../case-apps: the apps that hold cases', () => {
  it('lists each app with live cases once, by id; not an app whose cases are all deleted, nor another collection’s', async () => {
    const [one, two] = [await t.createCollection(), await t.createCollection()];
    const open = (c: TestCollection, app: string) =>
      post(`/admin/collection/${c.id}/app/${app}/cases`, { status: 'open' }, c.auth);
    for (const app of ['zeta', 'desk', 'desk', 'alpha']) expect((await open(one, app)).statusCode).toBe(200);
    const gone = await open(one, 'gone');
    const removed = await t.inject({
      method: 'DELETE',
      url: `/admin/collection/${one.id}/app/gone/cases/${gone.json().id}`,
      headers: one.auth,
    });
    expect(removed.statusCode, removed.body).toBeLessThan(300);
    expect((await open(two, 'beta')).statusCode).toBe(200);
    const appsOf = async (c: TestCollection) => {
      const res = await t.inject({ method: 'GET', url: `/admin/collection/${c.id}/case-apps`, headers: c.auth });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json().items as { appId: string }[]).map((i) => i.appId);
    };
    expect(await appsOf(one)).toEqual(['alpha', 'desk', 'zeta']);
    expect(await appsOf(two)).toEqual(['beta']);
    const wrongSide = await t.inject({
      method: 'GET',
      url: `/admin/collection/${one.id}/case-apps`,
      headers: two.auth,
    });
    expect(wrongSide.statusCode).toBe(401);
  });
});
