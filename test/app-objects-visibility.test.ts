/**
 * The `admin` section and admin-only objects never leak on the public zone: this walks every
 * app-object operation of the published OpenAPI document on `/public/...`, as the owner, as
 * another user and as an admin key, and inspects every response.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';

const SECRET = 'TOP-SECRET-7f3a';
let t: TestApp;
let a: TestCollection;
let alice: { authorization: string };
let bob: { authorization: string };
const ids: Record<string, string> = {};
let hidden: Record<string, string>;

const adminBase = () => `/admin/collection/${a.id}/app/walk`;

async function adminCreate(kind: string, payload: Record<string, unknown>) {
  const res = await t.inject({ method: 'POST', url: `${adminBase()}/${kind}`, headers: a.auth, payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().id as string;
}

async function seed(visibility: string) {
  const sections = { data: { d: 1 }, owner: { o: 1 }, admin: { secret: SECRET } };
  const caseId = await adminCreate('cases', { visibility, contactId: 'contact-alice', ...sections });
  await t.inject({
    method: 'POST',
    url: `${adminBase()}/cases/${caseId}/history`,
    headers: a.auth,
    payload: { entry: { note: SECRET } },
  });
  await t.inject({
    method: 'PATCH',
    url: `${adminBase()}/cases/${caseId}`,
    headers: a.auth,
    payload: { admin: { more: SECRET } },
  });
  const parent = { parentType: 'case', parentId: caseId };
  const threadId = await adminCreate('threads', { visibility, contactId: 'contact-alice', ...parent, ...sections });
  const recordId = await adminCreate('records', { visibility, contactId: 'contact-alice', ...parent, ...sections });
  return { caseId, threadId, recordId };
}

beforeAll(async () => {
  t = await createTestApp();
  a = await t.createCollection();
  alice = bearer(await t.userToken(a.id, 'alice', 'contact-alice'));
  bob = bearer(await t.userToken(a.id, 'bob', 'contact-bob'));
  Object.assign(ids, await seed('public'));
  hidden = await seed('admin');
});
afterAll(() => t.close());

/** A plausible body per operation (admin-only ones are refused before they are read). */
const BODIES: Record<string, unknown> = {
  cases_create: { data: { x: 1 }, admin: { secret: SECRET } },
  cases_aggregate: { groupBy: ['status'], metrics: ['count', 'avg_close_time'] },
  cases_summary: {},
  cases_update: { data: { y: 1 }, admin: { secret: SECRET } },
  cases_appendHistory: { entry: { note: SECRET } },
  threads_create: { title: 't', admin: { secret: SECRET } },
  threads_aggregate: { groupBy: ['status'], metrics: ['reply_count'] },
  threads_update: { data: { y: 1 } },
  threads_reply: { text: 'hi' },
  records_create: { data: { x: 1 }, admin: { secret: SECRET } },
  records_aggregate: { groupBy: ['record_type'] },
  records_upsert: { ref: 'walk-1', data: {} },
  records_bulkUpsert: [{ ref: 'walk-2' }],
  records_bulkDelete: { refs: ['walk-2'] },
  records_update: { data: { y: 1 } },
};

function hasAdminKey(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasAdminKey);
  if (v && typeof v === 'object') {
    return Object.entries(v).some(([k, x]) => k === 'admin' || hasAdminKey(x));
  }
  return false;
}

async function appObjectOperations() {
  const doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).json();
  const ops: { method: string; path: string; operationId: string }[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { operationId: string }>>)) {
    if (!path.startsWith('/{zone}/collection/{collectionId}/app/{appId}/')) continue;
    for (const [method, op] of Object.entries(item))
      ops.push({ method: method.toUpperCase(), path, operationId: op.operationId });
  }
  return ops;
}

describe('credentials', () => {
  it('every app-object operation refuses missing, foreign and wrong-zone credentials (401) and unknown zones (404)', async () => {
    const other = await t.createCollection();
    const otherUser = bearer(await t.userToken(other.id, 'alice', 'contact-alice'));
    const ops = await appObjectOperations();
    for (const op of ops) {
      const url = (zone: string) =>
        op.path
          .replace('{zone}', zone)
          .replace('{collectionId}', a.id)
          .replace('{appId}', 'walk')
          .replace('{caseId}', ids.caseId)
          .replace('{threadId}', ids.threadId)
          .replace('{recordId}', ids.recordId);
      const body = BODIES[op.operationId];
      const call = (zone: string, headers: Record<string, string>) =>
        t.inject({
          method: op.method as 'GET',
          url: url(zone),
          headers,
          ...(body !== undefined ? { payload: body as object } : {}),
        });
      for (const [zone, headers, label] of [
        ['admin', {}, 'none'],
        ['public', {}, 'none'],
        ['admin', other.auth, 'another collection’s admin key'],
        ['public', other.auth, 'another collection’s admin key'],
        ['public', otherUser, 'another collection’s user token'],
        ['admin', alice, 'a user token on the admin zone'],
      ] as const) {
        const res = await call(zone, headers);
        expect(res.statusCode, `${op.method} ${url(zone)} with ${label}: ${res.body}`).toBe(401);
      }
      const zone = await call('owner', a.auth);
      expect(zone.statusCode, `${op.method} ${url('owner')}`).toBe(404);
    }
  });
});

describe('public zone', () => {
  it('never returns the admin section or admin-only objects, on any app-object operation', async () => {
    const ops = await appObjectOperations();
    expect(ops.length).toBeGreaterThanOrEqual(28);
    // Deletes last, so the other operations still find their objects.
    ops.sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE'));
    let checked = 0;
    for (const target of [ids, hidden]) {
      for (const headers of [alice, bob, a.auth]) {
        for (const op of ops) {
          const url = op.path
            .replace('{zone}', 'public')
            .replace('{collectionId}', a.id)
            .replace('{appId}', 'walk')
            .replace('{caseId}', target.caseId)
            .replace('{threadId}', target.threadId)
            .replace('{recordId}', target.recordId);
          const body = BODIES[op.operationId];
          const res = await t.inject({
            method: op.method as 'GET',
            url,
            headers,
            ...(body !== undefined ? { payload: body as object } : {}),
          });
          const what = `${op.method} ${url} as ${headers === alice ? 'owner' : headers === bob ? 'other user' : 'admin key'}`;
          expect(res.statusCode, `${what}: ${res.body}`).toBeLessThan(500);
          expect(res.body.includes(SECRET), what).toBe(false);
          if (res.statusCode === 200) expect(hasAdminKey(res.json()), what).toBe(false);
          if (target === hidden && headers !== a.auth && /\{(case|thread|record)Id\}/.test(op.path)) {
            expect([401, 404], what).toContain(res.statusCode);
          }
          checked++;
        }
      }
      // The walk deleted the objects; seed fresh ones for the next round.
      if (target === ids) Object.assign(ids, await seed('public'));
    }
    expect(checked).toBe(ops.length * 6);
  });

  it('lists, related and summaries on the public zone include only what the user may see', async () => {
    const fresh = await seed('public');
    const extra = await seed('owner');
    const rel = await t.inject({
      method: 'GET',
      url: `/public/collection/${a.id}/app/walk/cases/${fresh.caseId}/related`,
      headers: bob,
    });
    expect(rel.statusCode).toBe(200);
    expect(rel.json().threads.map((x: { id: string }) => x.id)).toEqual([fresh.threadId]);
    expect(rel.json().threads[0].owner).toBeUndefined();
    const aliceRel = await t.inject({
      method: 'GET',
      url: `/public/collection/${a.id}/app/walk/cases/${extra.caseId}/related`,
      headers: alice,
    });
    expect(aliceRel.json().records[0].owner).toEqual({ o: 1 });
    const bobList = await t.inject({
      method: 'GET',
      url: `/public/collection/${a.id}/app/walk/cases?limit=500`,
      headers: bob,
    });
    const listed = bobList.json().data.map((x: { id: string }) => x.id);
    expect(listed).toContain(fresh.caseId);
    expect(listed).not.toContain(extra.caseId);
    expect(listed).not.toContain(hidden.caseId);
    const sum = await t.inject({
      method: 'GET',
      url: `/public/collection/${a.id}/app/walk/cases/${extra.caseId}/summary`,
      headers: alice,
    });
    expect(sum.statusCode).toBe(200);
    expect(sum.json()).toMatchObject({ threads: 1, records: 1, timeToCloseSeconds: null });
    expect(sum.json().case.owner).toEqual({ o: 1 });
    expect(sum.json().case.admin).toBeUndefined();
    const adminSum = await t.inject({
      method: 'GET',
      url: `${adminBase()}/cases/${extra.caseId}/summary`,
      headers: a.auth,
    });
    expect(adminSum.json().case.admin).toMatchObject({ secret: SECRET });
  });
});
