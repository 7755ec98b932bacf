/**
 * Tenant isolation of every interactions read that counts, groups or lists, with data in BOTH
 * collections: the same interaction ids, app id, user ids, scopes and event ids, with
 * different, known answers. Each collection's answer is checked exactly, on every path the
 * service answers from: the hourly rollup with its partial edge hours, the events, the
 * maintained latest events (with the guard that sends a window to the events), the public
 * counts, by-user reads, the admin query, types lists and exports. A query that also read the
 * other collection's rows would change both answers. Writes by shared names (an event changed
 * or deleted by its event id, a submit checked for uniqueness) must not see the other
 * collection's events.
 *
 * Events of `vote` (app `poll`), H = 2026-02-02T10:00Z, times as h:mm after H:
 *   A: e1 u1 yes 0:50 s1 (score 1), e2 u2 no 1:10 s1 (2), e3 u1 no 2:10 s2 (3),
 *      e4 u3 yes 3:30 s2 (4), e5 u6 no 0:45 s1 (5)
 *   B: e1 u1 yes 0:20 s1 (10), e2 u2 yes 0:30 s1 (20), e3 u3 yes 1:20 s2 (30),
 *      e4 u4 maybe 2:20 s2 (40), e5 u3 no 0:40 s1 (50), e6 u5 no 2:05 s2 (60), e7 u1 yes 3:40 s1 (70)
 * The window W = [0:15, 2:15) has a partial hour at each end and one whole hour: each of the
 * three parts holds events of both collections.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { BOTH_SIDES, type CollectionWithUser, type Side, twoCollections } from './helpers/fixtures.ts';
import { enqueue, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

const both = BOTH_SIDES;
const side = (s: Side) => (s === 'a' ? a : b);

const H = Date.parse('2026-02-02T10:00:00.000Z');
const at = (h: number, m: number) => new Date(H + h * 3600_000 + m * 60_000).toISOString();
const W = { from: at(0, 15), to: at(2, 15) };

type Event = [eventId: string, userId: string, outcome: string, h: number, m: number, scope: string, score: number];
const EVENTS: Record<Side, Event[]> = {
  a: [
    ['e1', 'u1', 'yes', 0, 50, 's1', 1],
    ['e2', 'u2', 'no', 1, 10, 's1', 2],
    ['e3', 'u1', 'no', 2, 10, 's2', 3],
    ['e4', 'u3', 'yes', 3, 30, 's2', 4],
    ['e5', 'u6', 'no', 0, 45, 's1', 5],
  ],
  b: [
    ['e1', 'u1', 'yes', 0, 20, 's1', 10],
    ['e2', 'u2', 'yes', 0, 30, 's1', 20],
    ['e3', 'u3', 'yes', 1, 20, 's2', 30],
    ['e4', 'u4', 'maybe', 2, 20, 's2', 40],
    ['e5', 'u3', 'no', 0, 40, 's1', 50],
    ['e6', 'u5', 'no', 2, 5, 's2', 60],
    ['e7', 'u1', 'yes', 3, 40, 's1', 70],
  ],
};
const TYPES: Record<Side, string[]> = {
  a: ['vote', 'view', 'once', 'edit', 'secret'],
  b: ['vote', 'view', 'once', 'edit', 'secret', 'share'],
};
/** `secret` publishes its counts in A, not in B: the same type id, different permissions. */
const SECRET: Record<Side, boolean> = { a: true, b: false };

async function call(
  s: Side,
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  payload?: unknown,
  who: 'admin' | 'user' | 'anonymous' = 'admin',
) {
  const c = side(s);
  const zone = who === 'admin' ? 'admin' : 'public';
  const headers = who === 'admin' ? c.auth : who === 'user' ? c.userAuth : {};
  const res = await t.inject({
    method,
    url: `/${zone}/collection/${c.id}/interactions${path}`,
    headers,
    payload: payload as Record<string, unknown>,
  });
  expect(res.statusCode, `${s} ${method} ${path}: ${res.body}`).toBe(200);
  return { body: res.json(), source: res.headers['x-analytics-source'] };
}

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t, { userId: 'u1', contactId: 'c-u1' }));
  for (const s of both) {
    for (const id of TYPES[s]) {
      const permissions =
        id === 'once'
          ? { allowPublicSubmit: true, uniquePerUser: true }
          : id === 'secret'
            ? { allowPublicSummary: SECRET[s] }
            : { allowPublicSummary: true, allowOwnRead: true };
      await call(s, 'POST', '', { id, appId: 'poll', permissions });
    }
    for (const [eventId, userId, outcome, h, m, scope, score] of EVENTS[s]) {
      await call(s, 'POST', '/append', {
        interactionId: 'vote',
        appId: 'poll',
        eventId,
        userId,
        contactId: `c-${userId}`,
        outcome,
        scope,
        timestamp: at(h, m),
        metadata: { score },
      });
    }
  }
});
afterAll(async () => {
  await t?.close();
});

/** Events as `eventId:outcome`: the same event ids in both collections, told apart by outcome. */
const keys = (rows: { eventId: string; outcome: string }[]) => rows.map((r) => `${r.eventId}:${r.outcome}`);
const counts = (pairs: [string, number][]) => pairs.map(([outcome, count]) => ({ outcome, count }));

describe('counts by outcome', () => {
  it('from the hourly rollup, whole and with partial edge hours, and from the events', async () => {
    const cases: { body: Record<string, unknown>; source: string; a: [string, number][]; b: [string, number][] }[] = [
      {
        body: { interactionId: 'vote' },
        source: 'maintained',
        a: [
          ['no', 3],
          ['yes', 2],
        ],
        b: [
          ['yes', 4],
          ['no', 2],
          ['maybe', 1],
        ],
      },
      {
        body: { appId: 'poll', ...W },
        source: 'maintained',
        a: [
          ['no', 3],
          ['yes', 1],
        ],
        b: [
          ['yes', 3],
          ['no', 2],
        ],
      },
      {
        body: { interactionId: 'vote', scope: 's1' },
        source: 'events',
        a: [
          ['no', 2],
          ['yes', 1],
        ],
        b: [
          ['yes', 3],
          ['no', 1],
        ],
      },
    ];
    for (const c of cases) {
      for (const s of both) {
        const got = await call(s, 'POST', '/counts-by-outcome', c.body);
        expect(got.body, `${s} ${JSON.stringify(c.body)}`).toEqual(counts(c[s]));
        expect(got.source, `${s} ${JSON.stringify(c.body)}`).toBe(c.source);
      }
    }
  });

  it('each identity’s latest: from the maintained latest events, and from the events', async () => {
    const latest = {
      a: counts([
        ['no', 3],
        ['yes', 1],
      ]),
      b: counts([
        ['yes', 3],
        ['maybe', 1],
        ['no', 1],
      ]),
    };
    for (const s of both) {
      const ask = async (body: Record<string, unknown>, source: string) => {
        const got = await call(s, 'POST', '/counts-by-outcome', { dedupeLatest: true, ...body });
        expect(got.body, `${s} ${JSON.stringify(body)}`).toEqual(latest[s]);
        expect(got.source, `${s} ${JSON.stringify(body)}`).toBe(source);
      };
      await ask({}, 'maintained');
      await ask({ interactionId: 'vote' }, 'maintained');
      // A partial first hour: that part is read from the latest events' rows.
      await ask({ from: W.from }, 'maintained');
      await ask({ appId: 'poll' }, 'events');
      // B has a latest event after 3:35, so its window must be read from the events; A has
      // none, and must not be sent there by B's.
      await ask({ to: at(3, 35) }, s === 'a' ? 'maintained' : 'events');
    }
  });

  it('public counts, anonymous, from the rollup and from the events', async () => {
    for (const s of both) {
      const whole = await call(s, 'POST', '/counts-by-outcome', { appId: 'poll', interactionId: 'vote' }, 'anonymous');
      expect(whole.body, s).toEqual(
        counts(
          s === 'a'
            ? [
                ['no', 3],
                ['yes', 2],
              ]
            : [
                ['yes', 4],
                ['no', 2],
                ['maybe', 1],
              ],
        ),
      );
      const window = await call(
        s,
        'POST',
        '/counts-by-outcome',
        { appId: 'poll', interactionId: 'vote', ...W },
        'anonymous',
      );
      expect(window.body, `${s} window`).toEqual(
        counts(
          s === 'a'
            ? [
                ['no', 3],
                ['yes', 1],
              ]
            : [
                ['yes', 3],
                ['no', 2],
              ],
        ),
      );
      const scoped = await call(
        s,
        'POST',
        '/counts-by-outcome',
        { appId: 'poll', interactionId: 'vote', scope: 's2', ...W },
        'anonymous',
      );
      // A type's permissions are its collection's: the same id elsewhere decides nothing.
      const secret = await t.inject({
        method: 'POST',
        url: `/public/collection/${side(s).id}/interactions/counts-by-outcome`,
        payload: { appId: 'poll', interactionId: 'secret' },
      });
      expect(secret.statusCode, `${s} secret: ${secret.body}`).toBe(SECRET[s] ? 200 : 401);
      const type = await call(s, 'GET', '/secret');
      expect(type.body.permissions, s).toMatchObject({ allowPublicSummary: SECRET[s] });
      expect(scoped.body, `${s} scope s2`).toEqual(
        counts(
          s === 'a'
            ? [['no', 1]]
            : [
                ['no', 1],
                ['yes', 1],
              ],
        ),
      );
    }
  });
});

describe('aggregate', () => {
  it('groups with sums of a metadata field, all events and each identity’s latest', async () => {
    const row = (groupValue: string, n: number, sum: number) => ({ groupValue, eventCount: n, count: n, sum });
    const want = {
      a: { all: [row('no', 3, 10), row('yes', 2, 5)], latest: [row('no', 3, 10), row('yes', 1, 4)] },
      b: {
        all: [row('yes', 4, 130), row('no', 2, 110), row('maybe', 1, 40)],
        latest: [row('yes', 3, 120), row('maybe', 1, 40), row('no', 1, 60)],
      },
    };
    for (const s of both) {
      for (const dedupeLatest of [false, true]) {
        const got = await call(s, 'POST', '/aggregate', {
          interactionId: 'vote',
          groupBy: 'outcome',
          aggregate: {},
          field: 'metadata.score',
          ops: ['count', 'sum'],
          dedupeLatest,
        });
        expect(got.body.rows, `${s} dedupeLatest ${dedupeLatest}`).toEqual(want[s][dedupeLatest ? 'latest' : 'all']);
      }
    }
  });
});

describe('event lists', () => {
  const order = {
    a: ['e5:no', 'e1:yes', 'e2:no', 'e3:no', 'e4:yes'],
    b: ['e1:yes', 'e2:yes', 'e5:no', 'e3:yes', 'e6:no', 'e4:maybe', 'e7:yes'],
  };

  it('the admin query, its latest versions and the types it includes', async () => {
    for (const s of both) {
      for (const latestPerEventId of [false, true]) {
        const got = await call(s, 'POST', '/query', {
          interactionId: 'vote',
          order: 'ASC',
          latestPerEventId,
          include: ['interaction'],
        });
        expect(keys(got.body), `${s} latestPerEventId ${latestPerEventId}`).toEqual(order[s]);
        for (const e of got.body) expect(e.interaction, s).toMatchObject({ id: 'vote', collectionId: side(s).id });
      }
    }
  });

  it('a user’s own events (by-user)', async () => {
    const own = { a: ['e3:no', 'e1:yes'], b: ['e7:yes', 'e1:yes'] };
    for (const s of both) {
      const got = await call(s, 'POST', '/by-user', { interactionId: 'vote' }, 'user');
      expect(keys(got.body), s).toEqual(own[s]);
      const all = await call(s, 'POST', '/by-user', {}, 'user');
      expect(keys(all.body), `${s} every type`).toEqual(own[s]);
    }
  });

  it('the types, admin and public', async () => {
    // Sorted: types made in one instant list by id, not in the order they were made.
    const ids = (body: { items: { id: string }[] }) => body.items.map((x) => x.id).sort();
    for (const s of both) {
      const admin = await call(s, 'GET', '?limit=100');
      expect(ids(admin.body), s).toEqual([...TYPES[s]].sort());
      const pub = await call(s, 'GET', '?limit=100', undefined, 'anonymous');
      expect(ids(pub.body), s).toEqual([...TYPES[s]].sort());
    }
  });

  it('an export holds its collection’s events only, and only its collection downloads it', async () => {
    const jobs: Partial<Record<Side, number>> = {};
    for (const s of both) {
      const job = await enqueue(t, side(s), {
        task: 'interactions.export',
        payload: { format: 'ndjson', interactionId: 'vote' },
      });
      const done = await waitForStatus(t, side(s), job.id, ['completed', 'failed'], 30_000);
      expect(done.status, JSON.stringify(done)).toBe('completed');
      expect(done.result, s).toMatchObject({ rows: EVENTS[s].length });
      jobs[s] = job.id;
      const file = await t.inject({
        method: 'GET',
        url: `/admin/collection/${side(s).id}/interactions/exports/${job.id}/download`,
        headers: side(s).auth,
      });
      expect(file.statusCode).toBe(200);
      const lines = file.body
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(keys(lines), s).toEqual(order[s]);
    }
    // Job ids are one sequence for every collection: another collection's is easy to guess.
    for (const [s, other] of [
      ['a', 'b'],
      ['b', 'a'],
    ] as const) {
      const res = await t.inject({
        method: 'GET',
        url: `/admin/collection/${side(s).id}/interactions/exports/${jobs[other]}/download`,
        headers: side(s).auth,
      });
      expect(res.statusCode, `${s} downloading ${other}'s export`).toBe(404);
    }
  });
});

describe('writes by shared names', () => {
  it('an event changed or deleted by its event id is only its collection’s', async () => {
    for (const s of both) {
      for (const eventId of ['x1', 'x2']) {
        await call(s, 'POST', '/append', {
          interactionId: 'edit',
          appId: 'poll',
          eventId,
          userId: 'u9',
          outcome: 'before',
          timestamp: at(5, 0),
        });
      }
    }
    const changed = await call('a', 'PATCH', '/events/x1', { outcome: 'after' });
    expect(changed.body).toMatchObject({ eventId: 'x1', outcome: 'after', collectionId: a.id });
    await call('a', 'PATCH', '/events/x2', { deleted: true });
    const stored = async (s: Side) =>
      keys((await call(s, 'POST', '/query', { interactionId: 'edit', order: 'ASC', includeDeleted: true })).body);
    const live = async (s: Side) =>
      keys((await call(s, 'POST', '/query', { interactionId: 'edit', order: 'ASC' })).body);
    expect(await stored('a')).toEqual(['x1:after', 'x2:before']);
    expect(await live('a')).toEqual(['x1:after']);
    expect(await stored('b')).toEqual(['x1:before', 'x2:before']);
    expect(await live('b')).toEqual(['x1:before', 'x2:before']);
  });

  it('a submit unique per user is checked against its collection’s events only', async () => {
    const submit = (s: Side) =>
      t.inject({
        method: 'POST',
        url: `/public/collection/${side(s).id}/interactions/submit`,
        headers: side(s).userAuth,
        payload: { interactionId: 'once', appId: 'poll', outcome: 'done' },
      });
    expect((await submit('b')).statusCode).toBe(200);
    const first = await submit('a');
    expect(first.statusCode, first.body).toBe(200);
    expect((await submit('a')).statusCode).toBe(409);
  });
});
