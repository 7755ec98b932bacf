/**
 * Times in ISO 8601 as the original's guides write them: a date alone (`from: '2026-11-21'`),
 * a date-time without seconds (`'2026-11-21T00:00Z'`), with an offset, or without one (UTC).
 * A date alone as a window's start is that day's first instant; as its end it includes the
 * whole day. Answers always carry full RFC 3339.
 *
 * Events sit on both sides of each day's edge, so a window read one day too short or too long
 * changes the counts; every short form is also compared with the full instants it stands for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseInstant } from '../../src/platform/instants.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { type CollectionWithUser, twoCollections } from '../helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let journeyId: string;

const EDGES = [
  '2026-11-20T23:59:59.999Z', // the day before the window
  '2026-11-21T00:00:00.000Z', // the window's first instant
  '2026-11-24T23:59:59.999Z', // the last instant of the window's last day
  '2026-11-25T00:00:00.000Z', // the day after
];
const interactions = (c = a) => `/admin/collection/${c.id}/interactions`;
const post = (url: string, payload: unknown, c = a) =>
  t.inject({ method: 'POST', url, headers: c.auth, payload: payload as Record<string, unknown> });
const ok = async (url: string, payload: unknown, c = a) => {
  const res = await post(url, payload, c);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t));
  for (const c of [a, b]) {
    for (const id of ['vote', 'enter']) await ok(interactions(c), { id, appId: 'polls' }, c);
  }
  const journey = await ok(`/admin/collection/${a.id}/journeys`, {
    name: 'Vote',
    journeyType: 'event_triggered',
    data: { steps: [{ id: 's1', config: { interactionId: 'vote', outcome: 'yes' } }] },
  });
  journeyId = journey.id;
  for (const [i, timestamp] of EDGES.entries()) {
    const userId = `u${i}`;
    await ok(`${interactions()}/append`, { interactionId: 'enter', userId, outcome: 'entered', timestamp, journeyId });
    await ok(`${interactions()}/append`, { interactionId: 'vote', userId, outcome: 'yes', timestamp });
  }
  // The other collection's events sit inside every window and must never be counted.
  await ok(
    `${interactions(b)}/append`,
    { interactionId: 'vote', userId: 'u1', outcome: 'yes', timestamp: EDGES[1] },
    b,
  );
});
afterAll(() => t.close());

describe('the forms accepted', () => {
  it.each([
    ['2026-11-21', 'start', '2026-11-21T00:00:00.000Z'],
    ['2026-11-24', 'end', '2026-11-25T00:00:00.000Z'],
    ['2026-12-31', 'end', '2027-01-01T00:00:00.000Z'],
    ['2028-02-29', 'start', '2028-02-29T00:00:00.000Z'],
    ['2026-11-21T00:00Z', 'start', '2026-11-21T00:00:00.000Z'],
    ['2026-11-21T10:30', 'start', '2026-11-21T10:30:00.000Z'],
    ['2026-11-21T10:30', 'end', '2026-11-21T10:30:00.000Z'],
    ['2026-11-21 10:30:15', 'start', '2026-11-21T10:30:15.000Z'],
    ['2026-11-21T10:30:15.123456789Z', 'start', '2026-11-21T10:30:15.123Z'],
    ['2026-11-21T01:00+01:00', 'start', '2026-11-21T00:00:00.000Z'],
    ['2026-11-21T01:00+0100', 'start', '2026-11-21T00:00:00.000Z'],
    ['2026-11-20T19:00-05', 'start', '2026-11-21T00:00:00.000Z'],
    ['0001-01-01', 'start', '0001-01-01T00:00:00.000Z'],
  ] as const)('%s as a window %s is %s', (text, edge, instant) => {
    expect(parseInstant(text, edge)?.toISOString()).toBe(instant);
  });

  it.each([
    '2026-02-29', // not a leap year
    '2026-13-01',
    '2026-11-31',
    '2026-11-21T24:00',
    '2026-11-21T10:60',
    '2026-11-21T10:00:60',
    '2026-11-21T10:00+24:00',
    '2026-11-21T10',
    '2026-11',
    '21/11/2026',
    'yesterday',
    '0000-01-01',
    '9999-12-31T23:00-05:00', // past year 9999 once the offset is applied
    '',
  ])('%j is refused', (text) => {
    expect(parseInstant(text, 'start')).toBeUndefined();
  });

  it('a date alone ending year 9999 cannot be an end (its next day has no RFC 3339 form)', () => {
    expect(parseInstant('9999-12-31', 'start')?.toISOString()).toBe('9999-12-31T00:00:00.000Z');
    expect(parseInstant('9999-12-31', 'end')).toBeUndefined();
  });
});

describe("the guides' windows", () => {
  it("counts-by-outcome with from: '2026-11-21', to: '2026-11-24' counts the 21st to the 24th inclusive", async () => {
    const body = { interactionId: 'vote', from: '2026-11-21', to: '2026-11-24' };
    expect(await ok(`${interactions()}/counts-by-outcome`, body)).toEqual([{ outcome: 'yes', count: 2 }]);
    const full = { interactionId: 'vote', from: '2026-11-21T00:00:00.000Z', to: '2026-11-25T00:00:00.000Z' };
    expect(await ok(`${interactions()}/counts-by-outcome`, full)).toEqual([{ outcome: 'yes', count: 2 }]);
  });

  it("query with from: '2026-11-21T00:00Z' (no seconds) starts at midnight, and answers RFC 3339", async () => {
    const rows = (await ok(`${interactions()}/query`, { interactionId: 'vote', from: '2026-11-21T00:00Z' })) as {
      timestamp: string;
    }[];
    expect(rows.map((r) => r.timestamp).sort()).toEqual(EDGES.slice(1));
    const offset = (await ok(`${interactions()}/query`, {
      interactionId: 'vote',
      from: '2026-11-21T01:00+01:00',
    })) as [];
    expect(offset).toHaveLength(3);
    const noZone = (await ok(`${interactions()}/query`, { interactionId: 'vote', to: '2026-11-21T00:00' })) as [];
    expect(noZone).toHaveLength(1); // UTC: only the event before midnight
  });

  it('aggregate takes the same windows as the full instants they stand for', async () => {
    const body = {
      interactionId: 'vote',
      groupBy: 'outcome',
      aggregate: {},
      field: '*',
      ops: ['count'],
      from: '2026-11-21',
      to: '2026-11-24',
    };
    const short = await ok(`${interactions()}/aggregate`, body);
    const full = await ok(`${interactions()}/aggregate`, {
      ...body,
      from: '2026-11-21T00:00:00Z',
      to: '2026-11-25T00:00:00Z',
    });
    expect(short).toEqual(full);
    expect(short.rows).toMatchObject([{ groupValue: 'yes', eventCount: 2 }]);
  });

  it('journey analytics: a date window counts the same entrants as its full instants', async () => {
    const url = `/admin/collection/${a.id}/journeys.analytics/${journeyId}`;
    const short = await ok(`${url}/funnel-report`, {
      periodStart: '2026-11-21',
      periodEnd: '2026-11-24',
      stepMappings: [],
    });
    const full = await ok(`${url}/funnel-report`, {
      periodStart: '2026-11-21T00:00:00.000Z',
      periodEnd: '2026-11-25T00:00:00.000Z',
      stepMappings: [],
    });
    expect(short).toEqual(full);
    expect(short.periodStart).toBe('2026-11-21T00:00:00.000Z');
    const stats = await ok(`${url}/stats`, { from: '2026-11-21', to: '2026-11-24' });
    const fullStats = await ok(`${url}/stats`, { from: '2026-11-21T00:00Z', to: '2026-11-25T00:00Z' });
    expect({ ...stats, lastUpdated: 0 }).toEqual({ ...fullStats, lastUpdated: 0 });
    expect(stats.stepStats[0]).toMatchObject({ entered: 2, completed: 2 });
  });

  it('jobs list and case summary: a date alone as `to` includes today', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const job = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/async/jobs`,
      headers: a.auth,
      payload: { task: 'interactions.export', payload: { from: '2026-11-21', to: '2026-11-24' } },
    });
    expect(job.statusCode, job.body).toBe(202);
    const listed = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/jobs?from=${today}&to=${today}`,
      headers: a.auth,
    });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(JSON.stringify(listed.json())).toContain(`"id":${job.json().id}`);

    const cases = `/admin/collection/${a.id}/app/support/cases`;
    expect((await post(cases, { data: { topic: 'late' } })).statusCode).toBe(200);
    const summary = await ok(`${cases}/summary`, { period: { from: today, to: today } });
    expect(summary.total).toBe(1);
    const aggregate = await ok(`${cases}/aggregate`, { filters: { createdAt: { gte: today, lte: today } } });
    expect(JSON.stringify(aggregate)).toContain('1');
    const before = await ok(`${cases}/aggregate`, { filters: { createdAt: { lt: today } } });
    expect(JSON.stringify(before)).not.toContain('1');
  });

  it('a stored export payload keeps full instants', async () => {
    const job = await post(`/admin/collection/${a.id}/async/jobs`, {
      task: 'interactions.export',
      payload: { from: '2026-11-21', to: '2026-11-24T12:00+02:00' },
    });
    expect(job.statusCode, job.body).toBe(202);
    const got = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/async/jobs/${job.json().id}`,
      headers: a.auth,
    });
    expect(got.statusCode, got.body).toBe(200);
    expect(JSON.stringify(got.json())).toContain('2026-11-24T10:00:00.000Z');
  });

  it.each([
    ['counts-by-outcome', { from: '2026-02-30' }],
    ['counts-by-outcome', { to: '2026-11-24T25:00Z' }],
    ['query', { from: 'last tuesday' }],
  ])('%s refuses %j with 400 naming the field, and the error body', async (path, body) => {
    const res = await post(`${interactions()}/${path}`, { interactionId: 'vote', ...body });
    expect(res.statusCode).toBe(400);
    const err = res.json();
    expect(err).toMatchObject({ code: 400, errorCode: expect.any(String), requestId: expect.any(String) });
    expect(JSON.stringify(err)).toContain(Object.keys(body)[0]);
    expect(JSON.stringify(err.details)).toContain('ISO 8601');
  });

  it("another collection's key reads none of these windows (401)", async () => {
    const res = await post(`${interactions()}/counts-by-outcome`, { from: '2026-11-21', to: '2026-11-24' }, b);
    expect(res.statusCode).toBe(401);
  });
});
