/**
 * Tenant isolation of every app-object summary, aggregate and list, with data in BOTH
 * collections. An audit once removed the collection condition from the case summary's query
 * and no test failed: the other collection had no cases in that app. Here two collections hold
 * objects under the same app ids, the same refs, the same parent ids and (given through the
 * database, test/helpers/shared-ids.ts) the same case and thread ids, with different, known
 * totals; each collection's answer is checked exactly, so a query that also reads the other
 * collection's rows changes both answers. Bulk writes by shared names (a status change by
 * filter, a delete by refs, folding the status counters) must leave the other collection's
 * objects as they were.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldCounts } from '../src/modules/app-objects/cases/cases.repository.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { BOTH_SIDES, type CollectionWithUser, type Side, twoCollections } from './helpers/fixtures.ts';
import { enqueue, waitForStatus } from './helpers/jobs.ts';
import { giveId } from './helpers/shared-ids.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

const side = (s: Side) => (s === 'a' ? a : b);
const base = (s: Side, app: string, zone: 'admin' | 'public' = 'admin') =>
  `/${zone}/collection/${side(s).id}/app/${app}`;

async function call(s: Side, method: 'GET' | 'POST', url: string, payload?: unknown, asUser = false) {
  const c = side(s);
  const res = await t.inject({
    method,
    url,
    headers: asUser ? c.userAuth : c.auth,
    payload: payload as Record<string, unknown>,
  });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json();
}
const create = async (s: Side, app: string, kind: string, payload: Record<string, unknown>) =>
  (await call(s, 'POST', `${base(s, app)}/${kind}`, payload)).id as string;

/** Cases of app `desk`: the same app in both collections, different totals. */
const DESK: Record<Side, Record<string, unknown>[]> = {
  a: [
    { status: 'open', priority: 1, category: 'billing' },
    { status: 'open', priority: 1, category: 'tech', visibility: 'public' },
    { status: 'open', priority: 2, category: 'tech' },
    { status: 'closed', priority: 2, category: 'tech' },
    { status: 'closed', category: 'billing' },
  ],
  b: [
    { status: 'open', priority: 3, category: 'billing', visibility: 'public' },
    { status: 'open', priority: 3, category: 'billing', visibility: 'public' },
    { status: 'open', priority: 3, category: 'tech' },
    { status: 'open', priority: 3, category: 'tech' },
    { status: 'pending', priority: 1, category: 'billing' },
    { status: 'resolved', category: 'billing' },
    { status: 'resolved', category: 'billing' },
  ],
};
const deskIds: Record<Side, string[]> = { a: [], b: [] };

/**
 * App `help`: one case per collection, both with the same id, and the threads and records
 * pointing at it; the first thread of each collection has the same id too, with replies.
 */
let caseId: string;
let threadId: string;
const threads: Record<Side, string[]> = { a: [], b: [] };
const records: Record<Side, string[]> = { a: [], b: [] };
const REPLIES: Record<Side, number> = { a: 2, b: 3 };
const HISTORY_ENTRIES: Record<Side, number> = { a: 1, b: 2 };

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t, { userId: 'u1', contactId: 'contact-u1' }));

  for (const s of ['a', 'b'] as const) {
    for (const payload of DESK[s]) deskIds[s].push(await create(s, 'desk', 'cases', payload));
  }

  caseId = await create('a', 'help', 'cases', { status: 'open' });
  const caseOfB = await create('b', 'help', 'cases', { status: 'open' });
  await giveId(t, b.id, { table: 'app_cases', column: 'id' }, caseOfB, caseId, [
    { table: 'app_case_history', column: 'case_id' },
  ]);
  const child = { parentType: 'case', parentId: caseId };
  for (const [s, n] of [
    ['a', 2],
    ['b', 3],
  ] as const) {
    for (let i = 0; i < n; i++) {
      threads[s].push(await create(s, 'help', 'threads', { ...child, title: `${s}${i}`, visibility: 'public' }));
    }
  }
  threadId = threads.a[0];
  await giveId(t, b.id, { table: 'app_threads', column: 'id' }, threads.b[0], threadId);
  threads.b[0] = threadId;
  for (const s of ['a', 'b'] as const) {
    for (let i = 0; i < REPLIES[s]; i++) {
      await call(s, 'POST', `${base(s, 'help')}/threads/${threadId}/reply`, {
        authorId: `agent-${s}`,
        authorType: 'agent',
        text: `${s}-${i}`,
      });
    }
    for (let i = 0; i < HISTORY_ENTRIES[s]; i++) {
      await call(s, 'POST', `${base(s, 'help')}/cases/${caseId}/history`, { entry: { note: `${s}-${i}` } });
    }
  }
  // One more reply on another thread of B: B's total replies are 4.
  await call('b', 'POST', `${base('b', 'help')}/threads/${threads.b[1]}/reply`, {
    authorId: 'agent-b',
    authorType: 'agent',
    text: 'b-other',
  });

  // Records: A's 1 child note and specs r1, r2; B's 2 child notes, spec r1, other r2, spec r3.
  records.a.push(await create('a', 'help', 'records', { ...child, recordType: 'note' }));
  for (const ref of ['r1', 'r2']) records.a.push(await create('a', 'help', 'records', { recordType: 'spec', ref }));
  for (let i = 0; i < 2; i++) records.b.push(await create('b', 'help', 'records', { ...child, recordType: 'note' }));
  for (const [recordType, ref] of [
    ['spec', 'r1'],
    ['other', 'r2'],
    ['spec', 'r3'],
  ]) {
    records.b.push(await create('b', 'help', 'records', { recordType, ref }));
  }
});
afterAll(async () => {
  await t?.close();
});

const both = BOTH_SIDES;

describe('cases', () => {
  it('collection summary: totals by status and priority and the weekly trend, each collection its own', async () => {
    const want = {
      a: { total: 5, byStatus: { closed: 2, open: 3 }, byPriority: { '1': 2, '2': 2, none: 1 } },
      b: { total: 7, byStatus: { open: 4, pending: 1, resolved: 2 }, byPriority: { '1': 1, '3': 4, none: 2 } },
    };
    for (const s of both) {
      const got = await call(s, 'POST', `${base(s, 'desk')}/cases/summary`, {});
      expect(got, s).toMatchObject(want[s]);
      expect(
        got.trend.map((w: { count: number }) => w.count),
        s,
      ).toEqual([want[s].total]);
    }
  });

  it('aggregate: totals, groups and time series; a user’s aggregate counts what it may see', async () => {
    const body = { groupBy: ['status'], metrics: ['count'], timeSeriesField: 'created_at', timeSeriesInterval: 'year' };
    const want = {
      a: {
        count: 5,
        groups: [
          { status: 'open', count: 3 },
          { status: 'closed', count: 2 },
        ],
        visible: 1,
      },
      b: {
        count: 7,
        groups: [
          { status: 'open', count: 4 },
          { status: 'resolved', count: 2 },
          { status: 'pending', count: 1 },
        ],
        visible: 2,
      },
    };
    for (const s of both) {
      const got = await call(s, 'POST', `${base(s, 'desk')}/cases/aggregate`, body);
      expect(got.count, s).toBe(want[s].count);
      expect(got.groups, s).toEqual(want[s].groups);
      expect(
        got.timeSeries.map((p: { count: number }) => p.count),
        s,
      ).toEqual([want[s].count]);
      const visible = await call(s, 'POST', `${base(s, 'desk', 'public')}/cases/aggregate`, {}, true);
      expect(visible.count, `${s} as a user`).toBe(want[s].visible);
    }
  });

  it('list totals: from the status counters, from a count, and past the last page', async () => {
    const want = { a: { open: 3, all: 5, tech: 3 }, b: { open: 4, all: 7, tech: 2 } };
    const total = async (s: Side, qs: string, asUser = false) =>
      (await call(s, 'GET', `${base(s, 'desk', asUser ? 'public' : 'admin')}/cases${qs}`, undefined, asUser)).pagination
        .total;
    const check = async () => {
      for (const s of both) {
        expect(await total(s, '?status=open&limit=1'), `${s} open`).toBe(want[s].open);
        expect(await total(s, '?limit=1'), `${s} all`).toBe(want[s].all);
        expect(await total(s, '?category=tech&limit=1'), `${s} tech`).toBe(want[s].tech);
        expect(await total(s, '?category=tech&offset=50'), `${s} tech past the end`).toBe(want[s].tech);
        expect(await total(s, '?status=open&offset=50'), `${s} open past the end`).toBe(want[s].open);
      }
    };
    await check();
    for (const s of both) {
      const page = await call(s, 'GET', `${base(s, 'desk')}/cases?limit=100&sort=createdAt:asc`);
      expect(page.data.map((c: { id: string }) => c.id).sort(), s).toEqual([...deskIds[s]].sort());
      const mine = await call(s, 'GET', `${base(s, 'desk', 'public')}/cases?limit=100`, undefined, true);
      expect(mine.data.length, `${s} as a user`).toBe(s === 'a' ? 1 : 2);
    }
    // Folding one collection's counter deltas leaves the other's counters as they were.
    await foldCounts(t.testDb.db, a.id, 'desk');
    await check();
    await foldCounts(t.testDb.db, b.id, 'desk');
    await check();
  });

  it('a case’s summary, related objects and history count only its own collection’s', async () => {
    const want = { a: { threads: 2, records: 1 }, b: { threads: 3, records: 2 } };
    for (const s of both) {
      const summary = await call(s, 'GET', `${base(s, 'help')}/cases/${caseId}/summary`);
      expect(summary, s).toMatchObject({ case: { id: caseId, collectionId: side(s).id }, ...want[s] });
      const related = await call(s, 'GET', `${base(s, 'help')}/cases/${caseId}/related`);
      expect(related.threads.map((x: { id: string }) => x.id).sort(), s).toEqual([...threads[s]].sort());
      // The first records of each collection are the case's children.
      const children = records[s].slice(0, want[s].records);
      expect(related.records.map((x: { id: string }) => x.id).sort(), s).toEqual([...children].sort());
      const shared = related.threads.find((x: { id: string }) => x.id === threadId);
      expect(
        shared.replies.map((r: { text: string }) => r.text),
        `${s} latest replies`,
      ).toEqual(Array.from({ length: REPLIES[s] }, (_, i) => `${s}-${i}`));
      const history = await call(s, 'GET', `${base(s, 'help')}/cases/${caseId}/history`);
      expect(
        history.data.map((h: { action: string }) => h.action),
        s,
      ).toEqual(['create', ...Array(HISTORY_ENTRIES[s]).fill('entry')]);
    }
  });

  it('a status change by filter (cases.bulkStatus) changes only its collection’s cases', async () => {
    const bulk: Record<Side, string[]> = {
      a: ['open', 'open', 'open', 'closed'],
      b: ['open', 'open', 'pending', 'pending'],
    };
    for (const s of both) for (const status of bulk[s]) await create(s, 'bulk', 'cases', { status });
    const job = await enqueue(t, a, {
      task: 'cases.bulkStatus',
      payload: { appId: 'bulk', status: 'resolved', filter: { status: 'open' } },
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.result).toEqual({ status: 'resolved', matched: 3, changed: 3, unchanged: 0 });
    expect(done.progress).toEqual({ done: 3, total: 3 });
    const statuses = async (s: Side) =>
      (await call(s, 'GET', `${base(s, 'bulk')}/cases?limit=100`)).data.map((c: { status: string }) => c.status).sort();
    expect(await statuses('a')).toEqual(['closed', 'resolved', 'resolved', 'resolved']);
    expect(await statuses('b')).toEqual(['open', 'open', 'pending', 'pending']);
  });
});

describe('threads', () => {
  it('aggregate: count, replies, groups and time series of its own collection', async () => {
    const want = { a: { count: 2, replies: 2 }, b: { count: 3, replies: 4 } };
    const body = {
      groupBy: ['status'],
      metrics: ['count', 'reply_count'],
      timeSeriesField: 'created_at',
      timeSeriesInterval: 'year',
    };
    for (const s of both) {
      const got = await call(s, 'POST', `${base(s, 'help')}/threads/aggregate`, body);
      expect(got.count, s).toBe(want[s].count);
      expect(got.total_replies, s).toBe(want[s].replies);
      expect(
        got.groups.map((g: { count: number; total_replies: number }) => [g.count, g.total_replies]),
        s,
      ).toEqual([[want[s].count, want[s].replies]]);
      expect(
        got.timeSeries.map((p: { count: number }) => p.count),
        s,
      ).toEqual([want[s].count]);
    }
  });

  it('a thread’s replies (the thread’s latest, and their pages) and list totals', async () => {
    for (const s of both) {
      const texts = Array.from({ length: REPLIES[s] }, (_, i) => `${s}-${i}`);
      const thread = await call(s, 'GET', `${base(s, 'help')}/threads/${threadId}`);
      expect(thread.replyCount, s).toBe(REPLIES[s]);
      expect(
        thread.replies.map((r: { text: string }) => r.text),
        s,
      ).toEqual(texts);
      const page = await call(s, 'GET', `${base(s, 'help')}/threads/${threadId}/replies?limit=1`);
      expect(page.pagination.total, s).toBe(REPLIES[s]);
      expect(
        page.data.map((r: { text: string }) => r.text),
        s,
      ).toEqual(texts.slice(0, 1));
      const all = await call(s, 'GET', `${base(s, 'help')}/threads/${threadId}/replies?sort=at:desc`);
      expect(
        all.data.map((r: { text: string }) => r.text),
        s,
      ).toEqual([...texts].reverse());
      for (const qs of ['?limit=1', '?offset=50']) {
        const list = await call(s, 'GET', `${base(s, 'help')}/threads${qs}`);
        expect(list.pagination.total, `${s} ${qs}`).toBe(threads[s].length);
      }
      const listed = await call(s, 'GET', `${base(s, 'help')}/threads?limit=100`);
      expect(listed.data.map((x: { id: string }) => x.id).sort(), s).toEqual([...threads[s]].sort());
    }
  });
});

describe('records', () => {
  it('aggregate by record type, list totals and pages of its own collection', async () => {
    const want = {
      a: [
        { record_type: 'spec', count: 2 },
        { record_type: 'note', count: 1 },
      ],
      b: [
        { record_type: 'note', count: 2 },
        { record_type: 'spec', count: 2 },
        { record_type: 'other', count: 1 },
      ],
    };
    for (const s of both) {
      const got = await call(s, 'POST', `${base(s, 'help')}/records/aggregate`, {
        groupBy: ['record_type'],
        timeSeriesField: 'created_at',
        timeSeriesInterval: 'year',
      });
      expect(got.count, s).toBe(records[s].length);
      expect(got.groups, s).toEqual(want[s]);
      expect(
        got.timeSeries.map((p: { count: number }) => p.count),
        s,
      ).toEqual([records[s].length]);
      for (const qs of ['?limit=1', '?offset=50', '?recordType=spec&limit=1']) {
        const list = await call(s, 'GET', `${base(s, 'help')}/records${qs}`);
        const n = qs.includes('spec') ? 2 : records[s].length;
        expect(list.pagination.total, `${s} ${qs}`).toBe(n);
      }
      const listed = await call(s, 'GET', `${base(s, 'help')}/records?limit=100`);
      expect(listed.data.map((x: { id: string }) => x.id).sort(), s).toEqual([...records[s]].sort());
    }
  });

  it('a delete by refs deletes only its collection’s records of those refs', async () => {
    for (const s of both) for (const ref of ['p1', 'p2', 'p3']) await create(s, 'purge', 'records', { ref });
    const res = await call('a', 'POST', `${base('a', 'purge')}/records/bulk-delete`, { refs: ['p1', 'p2'] });
    expect(res).toEqual({ deleted: 2 });
    const refs = async (s: Side) =>
      (await call(s, 'GET', `${base(s, 'purge')}/records?limit=100`)).data.map((r: { ref: string }) => r.ref).sort();
    expect(await refs('a')).toEqual(['p3']);
    expect(await refs('b')).toEqual(['p1', 'p2', 'p3']);
  });
});
