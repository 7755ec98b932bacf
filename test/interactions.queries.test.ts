import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let u1: string;
let u2: string;

const T1 = '2026-05-01T10:00:00.000Z';
const T2 = '2026-05-02T10:00:00.000Z';
const T3 = '2026-05-03T10:00:00.000Z';
const T4 = '2026-05-04T10:00:00.000Z';

const admin = (c: TestCollection) => `/admin/collection/${c.id}/interactions`;
const pub = (c: TestCollection) => `/public/collection/${c.id}/interactions`;

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t, { userId: 'u1', contactId: 'c1' }));
  u1 = a.userToken;
  u2 = await t.userToken(a.id, 'u2', 'c2');
  const types = [
    {
      id: 'quiz',
      appId: 'learn',
      permissions: { allowOwnRead: true, allowPublicSummary: true },
      data: { display: { title: 'Quiz' } },
    },
    { id: 'poll', appId: 'learn', permissions: { allowAuthenticatedSummary: true } },
    { id: 'secret', appId: 'learn', permissions: {} },
    { id: 'off', appId: 'learn', permissions: { enabled: false, allowPublicSummary: true, allowOwnRead: true } },
  ];
  for (const payload of types) {
    const res = await t.inject({ method: 'POST', url: admin(a), headers: a.auth, payload });
    expect(res.statusCode).toBe(200);
  }
  const events = [
    {
      interactionId: 'quiz',
      userId: 'u1',
      contactId: 'c1',
      outcome: 'fail',
      timestamp: T1,
      metadata: { score: 2 },
      scope: 's1',
    },
    {
      interactionId: 'quiz',
      userId: 'u1',
      contactId: 'c1',
      outcome: 'success',
      timestamp: T3,
      metadata: { score: 8 },
      broadcastId: 'bc1',
    },
    { interactionId: 'quiz', userId: 'u2', contactId: 'c2', outcome: 'success', timestamp: T2, metadata: { score: 6 } },
    {
      interactionId: 'quiz',
      userId: 'u2',
      contactId: 'c2',
      outcome: 'fail',
      timestamp: T4,
      metadata: { score: 'n/a' },
    },
    {
      interactionId: 'quiz',
      userId: 'u3',
      contactId: 'c3',
      outcome: 'success',
      timestamp: T2,
      metadata: { score: 10 },
    },
    { interactionId: 'quiz', contactId: 'c4', outcome: 'fail', timestamp: T1, metadata: { score: 1 } },
    { interactionId: 'poll', userId: 'u1', outcome: 'yes', timestamp: T2 },
    { interactionId: 'poll', userId: 'u2', outcome: 'no', timestamp: T2 },
    { interactionId: 'secret', userId: 'u1', outcome: 'hidden', timestamp: T2 },
    { interactionId: 'off', userId: 'u1', outcome: 'x', timestamp: T2 },
  ];
  for (const payload of events) {
    const res = await t.inject({ method: 'POST', url: `${admin(a)}/append`, headers: a.auth, payload });
    expect(res.statusCode, res.body).toBe(200);
  }
  // Noise in another collection with the same ids must never show up.
  await t.inject({
    method: 'POST',
    url: admin(b),
    headers: b.auth,
    payload: { id: 'quiz', appId: 'learn', permissions: { allowPublicSummary: true } },
  });
  await t.inject({
    method: 'POST',
    url: `${admin(b)}/append`,
    headers: b.auth,
    payload: { interactionId: 'quiz', userId: 'u1', outcome: 'success' },
  });
});
afterAll(() => t.close());

const post = (url: string, payload: unknown, headers: Record<string, string> = a.auth) =>
  t.inject({ method: 'POST', url, headers, payload: payload as Record<string, unknown> });

describe('admin query', () => {
  it('filters by user, interaction, outcome, window, scope, broadcast; orders and limits', async () => {
    const q = async (body: Record<string, unknown>) => {
      const res = await post(`${admin(a)}/query`, body);
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { timestamp: string; userId: string; outcome: string; interactionId: string }[];
    };
    expect((await q({ userId: 'u1', interactionId: 'quiz' })).map((e) => e.timestamp)).toEqual([T3, T1]);
    expect((await q({ userId: 'u1', interactionId: 'quiz', order: 'ASC' })).map((e) => e.timestamp)).toEqual([T1, T3]);
    expect((await q({ interactionId: 'quiz', limit: 2 })).map((e) => e.timestamp)).toEqual([T4, T3]);
    expect((await q({ contactId: 'c4' })).map((e) => e.outcome)).toEqual(['fail']);
    expect((await q({ interactionId: 'quiz', outcome: 'success' })).length).toBe(3);
    expect((await q({ interactionIds: ['poll', 'secret'] })).length).toBe(3);
    expect((await q({ interactionId: 'quiz', from: T2, to: T4 })).map((e) => e.timestamp)).toEqual([T3, T2, T2]);
    expect((await q({ scope: 's1' })).length).toBe(1);
    expect((await q({ broadcastId: 'bc1' }))[0].timestamp).toBe(T3);
    expect((await q({ appId: 'learn' })).length).toBe(10);
    expect((await q({ appId: 'other' })).length).toBe(0);
  });

  it('includes the interaction type when asked', async () => {
    const res = await post(`${admin(a)}/query`, { interactionId: 'quiz', limit: 1, include: ['interaction'] });
    expect(res.json()[0].interaction).toMatchObject({ id: 'quiz', appId: 'learn', display: { title: 'Quiz' } });
    const without = await post(`${admin(a)}/query`, { interactionId: 'quiz', limit: 1 });
    expect(without.json()[0].interaction).toBeUndefined();
  });

  it('refuses bad input (400) and callers who are not admins of the collection (401)', async () => {
    for (const body of [
      { limit: 0 },
      { limit: 10_001 },
      { order: 'down' },
      { include: ['user'] },
      { from: 'yesterday' },
      { nope: 1 },
      { interactionIds: 'quiz' },
    ]) {
      expect((await post(`${admin(a)}/query`, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    for (const headers of [{}, b.auth, bearer(u1)]) {
      expect((await post(`${admin(a)}/query`, {}, headers)).statusCode).toBe(401);
    }
    const other = await post(`${admin(b)}/query`, { interactionId: 'quiz' }, b.auth);
    expect(other.json().length).toBe(1);
  });
});

describe('counts by outcome', () => {
  const counts = async (body: Record<string, unknown>) => {
    const res = await post(`${admin(a)}/counts-by-outcome`, body);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  it('counts every event by outcome', async () => {
    expect(await counts({ interactionId: 'quiz' })).toEqual([
      { outcome: 'fail', count: 3 },
      { outcome: 'success', count: 3 },
    ]);
    expect(await counts({ interactionId: 'quiz', from: T2, to: T4 })).toEqual([{ outcome: 'success', count: 3 }]);
    expect(await counts({ interactionId: 'quiz', limit: 1 })).toHaveLength(1);
  });

  it('stays exact on windows that cut hours, and through updates and deletes (hourly rollup)', async () => {
    const c = await t.createCollection();
    await post(admin(c), { id: 'roll', appId: 'r' }, c.auth);
    const base = Date.parse('2026-09-01T00:00:00.000Z');
    const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();
    // 40 events over ~10 hours, every 15 minutes, outcomes cycling a/b/c/none.
    for (let i = 0; i < 40; i++) {
      const outcome = ['a', 'b', 'c', undefined][i % 4];
      const res = await post(
        `${admin(c)}/append`,
        {
          interactionId: 'roll',
          userId: `u${i % 7}`,
          eventId: `e${i}`,
          timestamp: at(i * 15),
          ...(outcome ? { outcome } : {}),
        },
        c.auth,
      );
      expect(res.statusCode).toBe(200);
    }
    await t.inject({ method: 'PATCH', url: `${admin(c)}/events/e5`, headers: c.auth, payload: { outcome: 'z' } });
    await t.inject({ method: 'PATCH', url: `${admin(c)}/events/e6`, headers: c.auth, payload: { deleted: true } });
    await t.inject({ method: 'PATCH', url: `${admin(c)}/events/e7`, headers: c.auth, payload: { deleted: true } });
    await t.inject({
      method: 'PATCH',
      url: `${admin(c)}/events/e7`,
      headers: c.auth,
      payload: { deleted: false, outcome: 'y' },
    });
    const windows: [number | undefined, number | undefined][] = [
      [undefined, undefined],
      [0, 600],
      [7, 333],
      [60, 120],
      [61, 119],
      [59, 61],
      [undefined, 95],
      [200, undefined],
      [601, 700],
    ];
    for (const [from, to] of windows) {
      const filter = {
        interactionId: 'roll',
        ...(from !== undefined ? { from: at(from) } : {}),
        ...(to !== undefined ? { to: at(to) } : {}),
      };
      const events = (await post(`${admin(c)}/query`, { ...filter, limit: 1000 }, c.auth)).json() as {
        outcome?: string;
      }[];
      // A row without an outcome has none; counts name that group null.
      const expected = new Map<string | null, number>();
      for (const e of events) expected.set(e.outcome ?? null, (expected.get(e.outcome ?? null) ?? 0) + 1);
      const counts = (await post(`${admin(c)}/counts-by-outcome`, filter, c.auth)).json() as {
        outcome: string | null;
        count: number;
      }[];
      expect(new Map(counts.map((r) => [r.outcome, r.count])), JSON.stringify(filter)).toEqual(expected);
      // A scope filter is answered from the events (no event here has a scope).
      expect((await post(`${admin(c)}/counts-by-outcome`, { ...filter, scope: 'none' }, c.auth)).json()).toEqual([]);
    }
    // The rollup itself holds the 39 live events (40 appended, one deleted).
    const { rows } = await t.testDb.db.query<{ n: number }>(
      'SELECT sum(n)::int AS n FROM interaction_counts_hourly WHERE collection_id = $1',
      [c.id],
    );
    expect(rows[0].n).toBe(39);
  });

  it('dedupeLatest counts each user’s latest outcome once (idField userId or contactId)', async () => {
    // u1: fail then success → success; u2: success then fail → fail; u3: success; c4 has no userId.
    expect(await counts({ interactionId: 'quiz', dedupeLatest: true })).toEqual([
      { outcome: 'success', count: 2 },
      { outcome: 'fail', count: 1 },
    ]);
    expect(await counts({ interactionId: 'quiz', dedupeLatest: true, idField: 'contactId' })).toEqual([
      { outcome: 'fail', count: 2 },
      { outcome: 'success', count: 2 },
    ]);
    // In a window ending before u2's failure, u2's latest is its success.
    expect(await counts({ interactionId: 'quiz', dedupeLatest: true, to: T4 })).toEqual([
      { outcome: 'success', count: 3 },
    ]);
  });

  it('refuses bad input and foreign callers', async () => {
    for (const body of [{ idField: 'email' }, { dedupeLatest: 'yes' }, { limit: -1 }, { to: 5 }]) {
      expect((await post(`${admin(a)}/counts-by-outcome`, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    for (const headers of [{}, b.auth, bearer(u1)]) {
      expect((await post(`${admin(a)}/counts-by-outcome`, {}, headers)).statusCode).toBe(401);
    }
  });
});

describe('aggregate', () => {
  it('groups and aggregates a numeric metadata field, ignoring non-numbers', async () => {
    const res = await post(`${admin(a)}/aggregate`, {
      interactionId: 'quiz',
      groupBy: 'outcome',
      aggregate: { label: 'scores' },
      field: 'metadata.score',
      ops: ['count', 'sum', 'avg', 'min', 'max'],
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      groupBy: 'outcome',
      aggregate: { label: 'scores' },
      field: 'metadata.score',
      ops: ['count', 'sum', 'avg', 'min', 'max'],
      dedupeLatest: false,
      rows: [
        { groupValue: 'fail', eventCount: 3, count: 2, sum: 3, avg: 1.5, min: 1, max: 2 },
        { groupValue: 'success', eventCount: 3, count: 3, sum: 24, avg: 8, min: 6, max: 10 },
      ],
    });
  });

  it('supports dedupeLatest, other groupings and only the ops asked for', async () => {
    const res = await post(`${admin(a)}/aggregate`, {
      interactionId: 'quiz',
      groupBy: 'outcome',
      aggregate: {},
      field: 'metadata.score',
      ops: ['sum'],
      dedupeLatest: true,
    });
    expect(res.json().rows).toEqual([
      { groupValue: 'success', eventCount: 2, sum: 18 },
      // The group holds no number: sum is absent, not null.
      { groupValue: 'fail', eventCount: 1 },
    ]);
    const byDay = await post(`${admin(a)}/aggregate`, {
      groupBy: 'day',
      aggregate: {},
      field: '*',
      ops: ['count'],
      interactionId: 'poll',
    });
    expect(byDay.json().rows).toEqual([{ groupValue: '2026-05-02', eventCount: 2, count: 0 }]);
    const byMeta = await post(`${admin(a)}/aggregate`, {
      groupBy: 'metadata.score',
      aggregate: {},
      field: '*',
      ops: ['count'],
      interactionId: 'quiz',
      limit: 1,
    });
    expect(byMeta.json().rows).toHaveLength(1);
  });

  it('refuses bad input and foreign callers', async () => {
    const ok = { groupBy: 'outcome', aggregate: {}, field: 'metadata.score', ops: ['sum'] };
    for (const body of [
      { ...ok, groupBy: 'password' },
      { ...ok, groupBy: 'metadata.a;drop' },
      { ...ok, field: 'outcome' },
      { ...ok, ops: ['median'] },
      { ...ok, ops: [] },
      { groupBy: 'outcome', field: 'metadata.score', ops: ['sum'] },
    ]) {
      expect((await post(`${admin(a)}/aggregate`, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    for (const headers of [{}, b.auth, bearer(u1)]) {
      expect((await post(`${admin(a)}/aggregate`, ok, headers)).statusCode).toBe(401);
    }
  });
});

describe('public by-user', () => {
  it('returns the caller’s own events of types that allow own reads', async () => {
    const res = await post(`${pub(a)}/by-user`, {}, bearer(u1));
    expect(res.statusCode, res.body).toBe(200);
    const rows = res.json() as { userId: string; interactionId: string; timestamp: string }[];
    expect(rows.map((r) => [r.interactionId, r.timestamp])).toEqual([
      ['quiz', T3],
      ['quiz', T1],
    ]);
    const filtered = await post(`${pub(a)}/by-user`, { interactionId: 'quiz', from: T2 }, bearer(u1));
    expect(filtered.json()).toHaveLength(1);
    const other = await post(`${pub(a)}/by-user`, { interactionId: 'quiz' }, bearer(u2));
    expect((other.json() as { userId: string }[]).every((r) => r.userId === 'u2')).toBe(true);
  });

  it('refuses a type without allowOwnRead (reason), anonymous callers, foreign tokens, bad input', async () => {
    const secret = await post(`${pub(a)}/by-user`, { interactionId: 'secret' }, bearer(u1));
    expect(secret.statusCode).toBe(401);
    expect(secret.json().details.reason).toBe('own_read_not_allowed');
    expect((await post(`${pub(a)}/by-user`, { interactionId: 'off' }, bearer(u1))).statusCode).toBe(404);
    expect((await post(`${pub(a)}/by-user`, {}, {})).statusCode).toBe(401);
    expect((await post(`${pub(a)}/by-user`, {}, b.userAuth)).statusCode).toBe(401);
    expect((await post(`${pub(a)}/by-user`, {}, b.auth)).statusCode).toBe(401);
    expect((await post(`${pub(a)}/by-user`, { limit: 0 }, bearer(u1))).statusCode).toBe(400);
    expect((await post(`${pub(a)}/by-user`, { userId: 'u2' }, bearer(u1))).statusCode).toBe(400);
  });
});

describe('public counts by outcome', () => {
  it('serves anyone where allowPublicSummary, token holders where allowAuthenticatedSummary', async () => {
    const anon = await post(`${pub(a)}/counts-by-outcome`, { appId: 'learn', interactionId: 'quiz' }, {});
    expect(anon.statusCode, anon.body).toBe(200);
    expect(anon.json()).toEqual([
      { outcome: 'fail', count: 3 },
      { outcome: 'success', count: 3 },
    ]);
    const withToken = await post(`${pub(a)}/counts-by-outcome`, { appId: 'learn', interactionId: 'poll' }, bearer(u1));
    expect(withToken.json()).toEqual([
      { outcome: 'no', count: 1 },
      { outcome: 'yes', count: 1 },
    ]);
  });

  it('refuses with reasons, and answers 404 / 400 / 401 as documented', async () => {
    const anonPoll = await post(`${pub(a)}/counts-by-outcome`, { appId: 'learn', interactionId: 'poll' }, {});
    expect(anonPoll.statusCode).toBe(401);
    expect(anonPoll.json()).toMatchObject({ errorCode: 'UNAUTHORIZED', details: { reason: 'auth_required' } });
    const secret = await post(`${pub(a)}/counts-by-outcome`, { appId: 'learn', interactionId: 'secret' }, bearer(u1));
    expect(secret.statusCode).toBe(401);
    expect(secret.json()).toMatchObject({ errorCode: 'FORBIDDEN', details: { reason: 'summary_not_allowed' } });
    expect((await post(`${pub(a)}/counts-by-outcome`, { appId: 'learn', interactionId: 'off' }, {})).statusCode).toBe(
      404,
    );
    expect((await post(`${pub(a)}/counts-by-outcome`, { appId: 'wrong', interactionId: 'quiz' }, {})).statusCode).toBe(
      404,
    );
    expect((await post(`${pub(a)}/counts-by-outcome`, { interactionId: 'quiz' }, {})).statusCode).toBe(400);
    expect(
      (await post(`${pub(a)}/counts-by-outcome`, { appId: 'learn', interactionId: 'quiz' }, b.userAuth)).statusCode,
    ).toBe(401);
    // The other collection's quiz counts only its own event.
    const bCounts = await post(`${pub(b)}/counts-by-outcome`, { appId: 'learn', interactionId: 'quiz' }, {});
    expect(bCounts.json()).toEqual([{ outcome: 'success', count: 1 }]);
  });
});
