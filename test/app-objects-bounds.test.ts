/**
 * Isolation of app objects (issue 23): no user can grow a shared object without bound, a
 * thread answers a bounded body however many replies it holds, and no user can pass for staff
 * with a look-alike author type. Real database (PGlite, or PostgreSQL with TEST_DATABASE_URL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OBJECT_MAX_BYTES,
  REPLY_MAX_BYTES,
  SECTION_MAX_BYTES,
  THREAD_LATEST_REPLIES,
} from '../src/modules/app-objects/shared/bounds.ts';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';

let t: TestApp;
let a: TestCollection;
let b: TestCollection;
let alice: { authorization: string };
let bob: { authorization: string };
let bella: { authorization: string };

const path = (zone: 'admin' | 'public', c: TestCollection, kind: string) =>
  `/${zone}/collection/${c.id}/app/forum/${kind}`;

beforeAll(async () => {
  t = await createTestApp();
  a = await t.createCollection();
  b = await t.createCollection();
  alice = bearer(await t.userToken(a.id, 'alice', 'contact-alice'));
  bob = bearer(await t.userToken(a.id, 'bob', 'contact-bob'));
  bella = bearer(await t.userToken(b.id, 'bella', 'contact-bella'));
});
afterAll(() => t.close());

async function ok(method: 'POST' | 'PATCH' | 'GET', url: string, headers: Record<string, string>, payload?: object) {
  const res = await t.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
  return res.json();
}

const big = (bytes: number) => 'x'.repeat(bytes);

/** What the database holds for one object (its row as JSON text) and, for a thread, its replies. */
async function storedBytes(table: 'app_threads' | 'app_cases' | 'app_records', id: string): Promise<number> {
  const { rows } = await t.testDb.db.query<{ n: number }>(
    `SELECT octet_length(x::text) AS n FROM ${table} x WHERE collection_id = $1 AND id = $2`,
    [a.id, id],
  );
  let n = Number(rows[0].n);
  if (table === 'app_threads') {
    const r = await t.testDb.db.query<{ n: number }>(
      `SELECT coalesce(sum(octet_length(r::text)), 0) AS n FROM app_thread_replies r WHERE collection_id = $1 AND thread_id = $2`,
      [a.id, id],
    );
    n += Number(r.rows[0].n);
  }
  return n;
}

describe('bounded replies', () => {
  it('8 replies of 900 KB by another user cannot grow a public thread past 4 MiB: each is a 413, nothing stored', async () => {
    const th = await ok('POST', path('public', a, 'threads'), alice, { visibility: 'public', title: 'Q' });
    const before = await storedBytes('app_threads', th.id);
    for (let i = 0; i < 8; i++) {
      const res = await t.inject({
        method: 'POST',
        url: `${path('public', a, 'threads')}/${th.id}/reply`,
        headers: bob,
        payload: { text: big(900_000), i },
      });
      expect(res.statusCode, res.body).toBe(413);
      expect(res.json()).toMatchObject({
        code: 413,
        errorCode: 'PAYLOAD_TOO_LARGE',
        details: { fields: ['reply'], reason: 'reply_too_large', limitBytes: REPLY_MAX_BYTES },
      });
      expect(res.json().message).toContain('64 KiB');
      expect(res.body.length).toBeLessThan(2000);
    }
    expect(await storedBytes('app_threads', th.id)).toBe(before);
    const stored = await ok('GET', `${path('admin', a, 'threads')}/${th.id}`, a.auth);
    expect(stored).toMatchObject({ replyCount: 0, replies: [], lastReplyAt: null });

    // Replies under the bound are stored, and the thread stays far below 4 MiB.
    for (let i = 0; i < 8; i++) {
      await ok('POST', `${path('public', a, 'threads')}/${th.id}/reply`, bob, { text: big(60_000), i });
    }
    expect(await storedBytes('app_threads', th.id)).toBeLessThan(OBJECT_MAX_BYTES);
    // An admin's reply is bounded too.
    const adminReply = await t.inject({
      method: 'POST',
      url: `${path('admin', a, 'threads')}/${th.id}/reply`,
      headers: a.auth,
      payload: { text: big(REPLY_MAX_BYTES) },
    });
    expect(adminReply.statusCode).toBe(413);
    expect((await ok('GET', `${path('admin', a, 'threads')}/${th.id}`, a.auth)).replyCount).toBe(8);
  });

  it('a reply over the bound on a thread the caller cannot see is still a 404/401, not a 413', async () => {
    const hidden = await ok('POST', path('public', a, 'threads'), alice, { visibility: 'owner' });
    const res = await t.inject({
      method: 'POST',
      url: `${path('public', a, 'threads')}/${hidden.id}/reply`,
      headers: bob,
      payload: { text: big(900_000) },
    });
    expect(res.statusCode).toBe(401);
    const elsewhere = await t.inject({
      method: 'POST',
      url: `${path('admin', b, 'threads')}/${hidden.id}/reply`,
      headers: b.auth,
      payload: { text: big(900_000) },
    });
    expect(elsewhere.statusCode).toBe(404);
  });
});

describe('bounded sections and objects', () => {
  it('8 merged PATCHes of 900 KB cannot grow a case past 4 MiB; a refused PATCH stores nothing', async () => {
    const kase = await ok('POST', path('public', a, 'cases'), alice, { data: { subject: 'Double charge' } });
    const accepted: string[] = [];
    for (let i = 0; i < 8; i++) {
      const section = i % 2 ? 'owner' : 'data';
      const before = await storedBytes('app_cases', kase.id);
      const res = await t.inject({
        method: 'PATCH',
        url: `${path('public', a, 'cases')}/${kase.id}`,
        headers: alice,
        payload: { [section]: { [`k${i}`]: big(900_000) } },
      });
      if (res.statusCode === 200) {
        accepted.push(section);
        continue;
      }
      expect(res.statusCode, res.body.slice(0, 300)).toBe(413);
      expect(res.json()).toMatchObject({
        errorCode: 'PAYLOAD_TOO_LARGE',
        details: { fields: [section], reason: 'section_too_large', limitBytes: SECTION_MAX_BYTES },
      });
      expect(res.json().message).toContain(`${section} of a case may hold at most 1 MiB`);
      expect(await storedBytes('app_cases', kase.id)).toBe(before);
    }
    // One 900 KB key fits in each section; the second of each is refused.
    expect(accepted).toEqual(['data', 'owner']);
    expect(await storedBytes('app_cases', kase.id)).toBeLessThan(OBJECT_MAX_BYTES);
    // The audit trail has no row for a refused change (it commits with the change).
    const history = await ok('GET', `${path('admin', a, 'cases')}/${kase.id}/history`, a.auth);
    expect(history.data.filter((e: { action: string }) => e.action === 'update')).toHaveLength(2);
    // Removing a key makes room again: the bound is on what the merge leaves.
    await ok('PATCH', `${path('public', a, 'cases')}/${kase.id}`, alice, { data: { k0: null, k2: big(900_000) } });
  });

  it('history appends of 900 KB cannot grow a case’s section past 1 MiB: a 413, nothing stored', async () => {
    const kase = await ok('POST', path('public', a, 'cases'), alice, { data: { subject: 'Long story' } });
    const url = `${path('admin', a, 'cases')}/${kase.id}/history`;
    const results: number[] = [];
    for (let i = 0; i < 4; i++) {
      const before = await storedBytes('app_cases', kase.id);
      const res = await t.inject({
        method: 'POST',
        url,
        headers: a.auth,
        payload: { historyTarget: 'admin', entry: { note: big(900_000) }, status: 'pending' },
      });
      results.push(res.statusCode);
      if (res.statusCode === 413) {
        expect(res.json()).toMatchObject({ errorCode: 'PAYLOAD_TOO_LARGE', details: { fields: ['admin'] } });
        expect(await storedBytes('app_cases', kase.id)).toBe(before);
      }
    }
    expect(results).toEqual([200, 413, 413, 413]);
    expect(await storedBytes('app_cases', kase.id)).toBeLessThan(2 * SECTION_MAX_BYTES);
    // A case that is not there is still a 404, not a 413.
    const gone = await t.inject({
      method: 'POST',
      url: `${path('admin', a, 'cases')}/case_missing/history`,
      headers: a.auth,
      payload: { historyTarget: 'admin', entry: { note: big(900_000) } },
    });
    expect(gone.statusCode).toBe(404);
  });

  it('upserts by ref merge within the same bounds: repeated upserts of one ref cannot grow it', async () => {
    const url = `${path('admin', a, 'records')}/upsert`;
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.inject({
        method: 'POST',
        url,
        headers: a.auth,
        payload: { ref: 'grows', recordType: 'note', data: { [`k${i}`]: big(900_000) } },
      });
      codes.push(res.statusCode);
      if (res.statusCode === 413) expect(res.json()).toMatchObject({ details: { fields: ['data'] } });
    }
    expect(codes).toEqual([200, 413, 413]);
    const { rows } = await t.testDb.db.query<{ n: number }>(
      "SELECT octet_length(data::text) AS n FROM app_records WHERE collection_id = $1 AND ref = 'grows'",
      [a.id],
    );
    expect(Number(rows[0].n)).toBeLessThan(SECTION_MAX_BYTES);
  });

  it('concurrent PATCHes of 900 KB cannot pass the bound together: exactly one lands', async () => {
    const kase = await ok('POST', path('public', a, 'cases'), alice, {});
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        t.inject({
          method: 'PATCH',
          url: `${path('public', a, 'cases')}/${kase.id}`,
          headers: alice,
          payload: { data: { [`k${i}`]: big(900_000) } },
        }),
      ),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 413, 413, 413, 413, 413, 413, 413]);
    const stored = await ok('GET', `${path('admin', a, 'cases')}/${kase.id}`, a.auth);
    expect(Object.keys(stored.data)).toHaveLength(1);
  });

  it('threads and records: merges are bounded per section, and the object as a whole (413 naming object)', async () => {
    const th = await ok('POST', path('public', a, 'threads'), alice, { data: { a: big(900_000) } });
    const thRes = await t.inject({
      method: 'PATCH',
      url: `${path('public', a, 'threads')}/${th.id}`,
      headers: alice,
      payload: { data: { b: big(900_000) } },
    });
    expect(thRes.statusCode).toBe(413);
    expect(thRes.json().details.fields).toEqual(['data']);

    // Four sections just under 1 MiB each fit (4 × 1,040,000 < 4 MiB); a facet rule on top does not.
    const rec = await ok('POST', path('admin', a, 'records'), a.auth, {
      recordType: 'big',
      data: { v: big(1_040_000) },
    });
    for (const section of ['owner', 'admin', 'metadata']) {
      await ok('PATCH', `${path('admin', a, 'records')}/${rec.id}`, a.auth, { [section]: { v: big(1_040_000) } });
    }
    const before = await storedBytes('app_records', rec.id);
    const facetRule = {
      all: Array.from({ length: 10 }, (_, i) => ({ facetKey: `f${i}`, anyOf: Array(100).fill(big(150)) })),
    };
    const res = await t.inject({
      method: 'PATCH',
      url: `${path('admin', a, 'records')}/${rec.id}`,
      headers: a.auth,
      payload: { facetRule },
    });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(413);
    expect(res.json()).toMatchObject({
      details: { fields: ['object'], reason: 'object_too_large', limitBytes: OBJECT_MAX_BYTES },
    });
    expect(await storedBytes('app_records', rec.id)).toBe(before);
  });

  it('a user’s singletonPer create that updates their record is bounded as a PATCH is', async () => {
    const reg = { recordType: 'registration', productId: 'p-big', singletonPer: 'product' };
    const first = await ok('POST', path('public', a, 'records'), alice, { ...reg, data: { k0: big(900_000) } });
    const before = await storedBytes('app_records', first.id);
    const again = await t.inject({
      method: 'POST',
      url: path('public', a, 'records'),
      headers: alice,
      payload: { ...reg, data: { k1: big(900_000) } },
    });
    expect(again.statusCode, again.body.slice(0, 300)).toBe(413);
    expect(again.json().details).toMatchObject({ fields: ['data'], reason: 'section_too_large' });
    expect(await storedBytes('app_records', first.id)).toBe(before);
  });

  it('a create is measured as the database prints it: numbers written short are refused by their printed size', async () => {
    // 1e300 is 5 bytes in the request and 301 printed: a 40 KB body would be 2.4 MB stored.
    const res = await t.inject({
      method: 'POST',
      url: path('public', a, 'cases'),
      headers: alice,
      payload: { data: { n: Array(8000).fill(1e300) } },
    });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(413);
    expect(res.json().details).toMatchObject({ fields: ['data'], reason: 'section_too_large' });
  });
});

describe('a thread with 10,000 replies', () => {
  it('answers a bounded body with replyCount, and the replies route pages through all of them', async () => {
    const th = await ok('POST', path('public', a, 'threads'), alice, { visibility: 'public', title: 'busy' });
    // 9,999 seeded in one statement, as replies made through the API are stored; the
    // 10,000th through the API (the most a thread holds by default).
    await t.testDb.db.query(
      `INSERT INTO app_thread_replies (collection_id, thread_id, seq, at, author_id, author_type, extra)
       SELECT $1, $2, n, now() - make_interval(secs => 10000 - n), 'bob', 'user', jsonb_build_object('n', n, 'text', repeat('r', 200))
       FROM generate_series(1, 9999) AS n`,
      [a.id, th.id],
    );
    await t.testDb.db.query(
      `UPDATE app_threads SET reply_count = 9999, last_reply_at = now() WHERE collection_id = $1 AND id = $2`,
      [a.id, th.id],
    );
    // A reply answers a bounded body, its own reply last.
    const replied = await t.inject({
      method: 'POST',
      url: `${path('public', a, 'threads')}/${th.id}/reply`,
      headers: bob,
      payload: { n: 10_000, text: 'the last one' },
    });
    expect(replied.statusCode).toBe(200);
    expect(replied.body.length).toBeLessThan(16 * 1024);
    expect(replied.json().replyCount).toBe(10_000);
    expect(replied.json().replies.at(-1)).toMatchObject({ n: 10_000, authorId: 'bob', authorType: 'user' });

    const read = await t.inject({ method: 'GET', url: `${path('public', a, 'threads')}/${th.id}`, headers: bob });
    expect(read.statusCode).toBe(200);
    const body = read.json();
    expect(body.replyCount).toBe(10_000);
    expect(body.replies).toHaveLength(THREAD_LATEST_REPLIES);
    expect(body.replies.map((r: { n: number }) => r.n)).toEqual(
      Array.from({ length: THREAD_LATEST_REPLIES }, (_, i) => 10_000 - THREAD_LATEST_REPLIES + 1 + i),
    );
    expect(read.body.length).toBeLessThan(16 * 1024);
    const full = await t.inject({
      method: 'POST',
      url: `${path('public', a, 'threads')}/${th.id}/reply`,
      headers: bob,
      payload: { text: 'too many' },
    });
    expect(full.statusCode).toBe(409);

    // The list answers each thread with its latest replies too.
    const list = await ok('GET', `${path('public', a, 'threads')}?limit=500`, bob);
    const listed = list.data.find((x: { id: string }) => x.id === th.id);
    expect(listed.replies).toHaveLength(THREAD_LATEST_REPLIES);

    // Pages of 200 join up: 10,001 replies, each once, in order.
    const seen: number[] = [];
    let offset = 0;
    for (;;) {
      const page = await ok('GET', `${path('public', a, 'threads')}/${th.id}/replies?limit=200&offset=${offset}`, bob);
      expect(page.pagination).toMatchObject({ total: 10_000, limit: 200, offset });
      for (const r of page.data) seen.push(r.n);
      offset += page.data.length;
      if (!page.pagination.hasMore) break;
    }
    expect(seen).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
    const newest = await ok('GET', `${path('admin', a, 'threads')}/${th.id}/replies?sort=at:desc&limit=2`, a.auth);
    expect(newest.data.map((r: { n: number }) => r.n)).toEqual([10_000, 9999]);
    for (const qs of ['?limit=201', '?limit=0', '?offset=-1', '?sort=n:asc', '?nope=1']) {
      const bad = await t.inject({
        method: 'GET',
        url: `${path('admin', a, 'threads')}/${th.id}/replies${qs}`,
        headers: a.auth,
      });
      expect(bad.statusCode, qs).toBe(400);
    }
  });
});

describe('the replies route: visibility and tenancy', () => {
  it('follows the thread’s visibility, and another collection’s key or user gets a 404', async () => {
    const open = await ok('POST', path('public', a, 'threads'), alice, { visibility: 'public' });
    const mine = await ok('POST', path('public', a, 'threads'), alice, { visibility: 'owner' });
    const staffOnly = await ok('POST', path('admin', a, 'threads'), a.auth, { visibility: 'admin' });
    for (const th of [open, mine, staffOnly]) {
      await ok('POST', `${path('admin', a, 'threads')}/${th.id}/reply`, a.auth, { text: `in A ${th.id}` });
    }
    const theirs = await ok('POST', path('public', b, 'threads'), bella, { visibility: 'public' });
    await ok('POST', `${path('public', b, 'threads')}/${theirs.id}/reply`, bella, { text: 'in B' });

    const replies = (zone: 'admin' | 'public', c: TestCollection, id: string, headers: Record<string, string>) =>
      t.inject({ method: 'GET', url: `${path(zone, c, 'threads')}/${id}/replies`, headers });

    expect((await replies('public', a, open.id, bob)).json().data).toHaveLength(1);
    expect((await replies('public', a, mine.id, alice)).statusCode).toBe(200);
    expect((await replies('public', a, mine.id, bob)).statusCode).toBe(404);
    expect((await replies('public', a, staffOnly.id, alice)).statusCode).toBe(404);
    expect((await replies('admin', a, staffOnly.id, a.auth)).statusCode).toBe(200);
    expect((await replies('public', a, open.id, {})).statusCode).toBe(401);

    // From collection B's side: A's threads do not exist there, whoever asks.
    for (const th of [open, mine, staffOnly]) {
      const byKey = await replies('admin', b, th.id, b.auth);
      expect(byKey.statusCode).toBe(404);
      expect(byKey.json().errorCode).toBe('NOT_FOUND');
      expect((await replies('public', b, th.id, bella)).statusCode).toBe(404);
      // B's credentials on A's paths are refused before any lookup.
      expect((await replies('admin', a, th.id, b.auth)).statusCode).toBe(401);
      expect((await replies('public', a, th.id, bella)).statusCode).toBe(401);
    }
    // B's own thread answers only its own reply; A's key cannot read it.
    const own = (await replies('public', b, theirs.id, bella)).json();
    expect(own.data.map((r: { text: string }) => r.text)).toEqual(['in B']);
    expect((await replies('admin', a, theirs.id, a.auth)).statusCode).toBe(404);
  });
});

describe('look-alike staff author types', () => {
  const LOOK_ALIKES = [
    'ａｄｍｉｎ',
    'ad\u200bmin',
    'ad\u00admin',
    'ad\u2060min',
    'ＡＤＭＩＮ',
    'ag\u200dent',
    'staff\ufe0f',
  ];

  it('are refused for a user (400 naming authorType and what to send) on thread and record creates and replies; nothing is written', async () => {
    const th = await ok('POST', path('public', a, 'threads'), alice, { visibility: 'public' });
    const count = async (table: string) =>
      Number(
        (await t.testDb.db.query<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE collection_id = $1`, [a.id]))
          .rows[0].n,
      );
    const before = [await count('app_threads'), await count('app_records'), await count('app_thread_replies')];
    for (const authorType of LOOK_ALIKES) {
      for (const [url, payload] of [
        [path('public', a, 'threads'), { authorType, title: 'x' }],
        [`${path('public', a, 'threads')}/${th.id}/reply`, { authorType, text: 'x' }],
        [path('public', a, 'records'), { authorType, recordType: 'note' }],
        [path('public', a, 'records'), { authorType, recordType: 'reg', productId: 'p1', singletonPer: 'product' }],
      ] as const) {
        const res = await t.inject({ method: 'POST', url, headers: bob, payload });
        expect(res.statusCode, `${JSON.stringify(authorType)} ${url}`).toBe(400);
        expect(res.json()).toMatchObject({
          errorCode: 'BAD_REQUEST',
          details: { fields: ['authorType'], reason: 'staff_author_type_lookalike' },
        });
        expect(res.json().message).toContain('leave authorType out');
      }
    }
    // The plain spellings stay a 401, as before.
    for (const authorType of ['admin', 'ADMIN', ' Agent ']) {
      const res = await t.inject({
        method: 'POST',
        url: path('public', a, 'threads'),
        headers: bob,
        payload: { authorType },
      });
      expect(res.statusCode).toBe(401);
      expect(res.json().details.reason).toBe('staff_author_type');
    }
    expect([await count('app_threads'), await count('app_records'), await count('app_thread_replies')]).toEqual(before);
    // What users may call themselves is unchanged, non-ASCII included.
    const fan = await ok('POST', path('public', a, 'threads'), bob, { authorType: 'ｃｕｓｔｏｍｅｒ' });
    expect(fan.authorType).toBe('ｃｕｓｔｏｍｅｒ');
  });

  it('an admin may still name them', async () => {
    for (const authorType of LOOK_ALIKES) {
      const th = await ok('POST', path('admin', a, 'threads'), a.auth, { authorType });
      expect(th.authorType).toBe(authorType);
      const replied = await ok('POST', `${path('admin', a, 'threads')}/${th.id}/reply`, a.auth, { authorType });
      expect(replied.replies[0].authorType).toBe(authorType);
      const rec = await ok('POST', path('admin', a, 'records'), a.auth, { authorType, recordType: 'note' });
      expect(rec.authorType).toBe(authorType);
    }
  });
});
