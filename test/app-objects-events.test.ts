/**
 * Events of app objects (src/modules/app-objects/shared/events.ts) at a real receiver: one
 * event per change of a case, thread or record, from the admin and the public routes, the
 * bulk writes and the tasks, signed, its `data` checked against the catalogue (the test app is
 * strict: a mismatch fails the change); a refused or rolled-back change sends nothing; another
 * collection's registrations hear nothing of it; `filters.appIds` narrows to one app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../clients/typescript/src/webhooks.ts';
import { bearer, createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, sleep, waitFor, waitForStatus } from './helpers/jobs.ts';
import { type Received, type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;
let bob: { authorization: string };
const secrets = new Map<string, string>();
const FAMILIES = ['case.*', 'thread.*', 'record.*'];

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', JOBS_POLL_INTERVAL_MS: '200' });
  ({ a, b } = await twoCollections(t, { userId: 'u1', contactId: 'ct1' }));
  bob = bearer(await t.userToken(a.id, 'bob', 'ct-bob'));
  rx = await startReceiver();
  // /a and /b hear every app-object event of their collection; /a-shop only app `shop` of A's.
  for (const [c, path, filters] of [
    [a, '/a', undefined],
    [b, '/b', undefined],
    [a, '/a-shop', { appIds: ['shop'] }],
  ] as const) {
    const res = await t.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: c.auth,
      payload: { url: `${rx.url}${path}`, events: FAMILIES, active: true, ...(filters && { filters }) },
    });
    expect(res.statusCode, res.body).toBe(200);
    secrets.set(path, res.json().secret);
  }
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

const base = (c: TestCollection, zone: 'admin' | 'public', appId: string, plural: string) =>
  `/${zone}/collection/${c.id}/app/${appId}/${plural}`;

async function call(method: 'POST' | 'PATCH' | 'DELETE', url: string, headers: object, payload?: unknown) {
  return t.inject({ method, url, headers: headers as Record<string, string>, payload: payload as object });
}
async function ok(method: 'POST' | 'PATCH' | 'DELETE', url: string, headers: object, payload?: unknown) {
  const res = await call(method, url, headers, payload);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** What `path` received about the object `id` (any kind), in the order received. */
const about = (path: string, id: string) =>
  rx.on(path).filter((r) => [r.body.data.case_id, r.body.data.thread_id, r.body.data.record_id].includes(id));

/**
 * Waits until `path` received `n` events about `id`, then a moment more: a second copy of any
 * of them would have arrived by then. Deliveries run concurrently, so the order they arrive in
 * says nothing; tests find each event by what it says.
 */
async function received(path: string, id: string, n: number): Promise<Received[]> {
  await waitFor(async () => (about(path, id).length >= n ? true : undefined), 15_000, `${n} events about ${id}`);
  await sleep(300);
  const got = about(path, id);
  expect(got.map((r) => r.body.type)).toHaveLength(n);
  return got;
}

/** How many of each type, sorted by type. */
const types = (list: Received[]) => {
  const n = new Map<string, number>();
  for (const r of list) n.set(r.body.type, (n.get(r.body.type) ?? 0) + 1);
  return Object.fromEntries([...n].sort(([x], [y]) => x.localeCompare(y)));
};

/** The data of the one event of `type` that `pick` chooses (exactly one). */
function one(list: Received[], type: string, pick: (d: Record<string, unknown>) => boolean = () => true) {
  const found = list.filter((r) => r.body.type === type && pick(r.body.data));
  expect(found, `one ${type}`).toHaveLength(1);
  return found[0].body.data;
}
const changed =
  (...fields: string[]) =>
  (d: Record<string, unknown>) =>
    JSON.stringify(d.changed_fields) === JSON.stringify(fields);

/** Both signatures of every delivery verify with the registration's secret (as a receiver checks them). */
async function signed(path: string, list: Received[]) {
  for (const r of list) {
    const event = await verifyWebhook({
      rawBody: r.raw,
      headers: r.headers as Record<string, string>,
      secret: secrets.get(path) as string,
    });
    expect(event.id).toBe(r.body.id);
  }
  expect(new Set(list.map((r) => r.body.id)).size).toBe(list.length);
}

const adminActor = { role: 'admin', id: expect.stringMatching(/.+/), contact_id: null };
const u1 = { role: 'user', id: 'u1', contact_id: 'ct1' };

describe('case events', () => {
  it('created, updated (from and to, as the history records them), deleted: once each, signed', async () => {
    const cases = base(a, 'admin', 'desk', 'cases');
    const c = await ok('POST', cases, a.auth, {
      status: 'open',
      category: 'warranty',
      ref: 'SUP-1',
      contactId: 'ct1',
      visibility: 'owner',
      data: { subject: 'Lid' },
    });
    await ok('PATCH', `${cases}/${c.id}`, a.auth, { status: 'closed', assignedTo: 'agent-1' });
    // The same status again changes nothing: no event.
    await ok('PATCH', `${cases}/${c.id}`, a.auth, { status: 'closed' });
    await ok('PATCH', `${base(a, 'public', 'desk', 'cases')}/${c.id}`, a.userAuth, { data: { note: 'hi' } });
    await ok('POST', `${cases}/${c.id}/history`, a.auth, {
      entry: { note: 'called the customer' },
      historyTarget: 'owner',
      priority: 3,
    });
    await ok('DELETE', `${cases}/${c.id}`, a.auth);

    const got = await received('/a', c.id, 5);
    await signed('/a', got);
    expect(types(got)).toEqual({ 'case.created': 1, 'case.deleted': 1, 'case.updated': 3 });
    const created = one(got, 'case.created');
    const closed = one(got, 'case.updated', changed('status', 'assigned_to', 'closed_at'));
    const owners = one(got, 'case.updated', changed('data.note'));
    const entry = one(got, 'case.updated', changed('owner.history', 'priority'));
    const deleted = one(got, 'case.deleted');
    expect(created).toMatchObject({
      case_id: c.id,
      app_id: 'desk',
      status: 'open',
      category: 'warranty',
      ref: 'SUP-1',
      contact_id: 'ct1',
      visibility: 'owner',
      data: { subject: 'Lid' },
      owner: {},
      admin: {},
      omitted: [],
      deleted_at: null,
      actor: adminActor,
    });
    expect(closed.changes).toEqual([
      { field: 'status', from: 'open', to: 'closed' },
      { field: 'assigned_to', from: null, to: 'agent-1' },
      { field: 'closed_at', from: null, to: closed.closed_at },
    ]);
    expect(closed.closed_at).toEqual(expect.any(String));
    expect(owners).toMatchObject({ changes: [], data: { note: 'hi' }, actor: u1 });
    expect(entry).toMatchObject({
      changes: [{ field: 'priority', from: null, to: 3 }],
      priority: 3,
      history_entry: { target: 'owner', entry: { note: 'called the customer', at: expect.any(String) } },
    });
    expect(deleted).toMatchObject({ case_id: c.id, deleted_at: expect.any(String), actor: adminActor });
    expect(deleted.data).toBeUndefined();

    // What the history recorded is what the events said (the history also keeps the PATCH that
    // changed nothing, as an update of no fields; it sent no event).
    const history = (await t.inject({ method: 'GET', url: `${cases}/${c.id}/history`, headers: a.auth })).json().data;
    expect(history.map((h: { changedFields: string[] }) => h.changedFields).slice(1, 5)).toEqual([
      ['status', 'assignedTo', 'closedAt'],
      [],
      ['data.note'],
      ['owner.history', 'priority'],
    ]);
  });

  it('another collection’s registration hears nothing of these changes, and its own only', async () => {
    const mine = await ok('POST', base(a, 'admin', 'desk', 'cases'), a.auth, { category: 'a-side' });
    const theirs = await ok('POST', base(b, 'admin', 'desk', 'cases'), b.auth, { category: 'b-side' });
    const [fromB] = await received('/b', theirs.id, 1);
    expect(fromB.body.data).toMatchObject({ case_id: theirs.id, category: 'b-side' });
    await received('/a', mine.id, 1);
    expect(about('/a', theirs.id)).toHaveLength(0);
    // Nothing of A's at B, whatever it was about.
    const aIds = new Set(rx.on('/a').map((r) => r.body.data.case_id ?? r.body.data.thread_id ?? r.body.data.record_id));
    expect(
      rx.on('/b').filter((r) => aIds.has(r.body.data.case_id ?? r.body.data.thread_id ?? r.body.data.record_id)),
    ).toHaveLength(0);
  });

  it('refused changes send nothing: another contact’s PATCH, a PATCH past the size bound', async () => {
    const cases = base(a, 'admin', 'desk', 'cases');
    const c = await ok('POST', cases, a.auth, { contactId: 'ct1', data: { big: 'x'.repeat(700_000) } });
    await received('/a', c.id, 1);
    expect(
      (await call('PATCH', `${base(a, 'public', 'desk', 'cases')}/${c.id}`, bob, { data: { x: 1 } })).statusCode,
    ).toBe(401);
    // Refused by the bound in the UPDATE, inside the transaction.
    expect((await call('PATCH', `${cases}/${c.id}`, a.auth, { data: { more: 'y'.repeat(500_000) } })).statusCode).toBe(
      413,
    );
    await sleep(500);
    const got = about('/a', c.id);
    expect(got.map((r) => r.body.type)).toEqual(['case.created']);
    // 700 KB of data is more than an event carries: named in `omitted`, read from the API.
    expect(got[0].body.data).toMatchObject({ omitted: ['data'], owner: {}, admin: {} });
    expect(got[0].body.data.data).toBeUndefined();
  });

  it('cases.bulkStatus: one case.updated per case it changed, by the job', async () => {
    const cases = base(a, 'admin', 'bulk', 'cases');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ok('POST', cases, a.auth, { status: i === 0 ? 'done' : 'open' })).id);
    for (const id of ids) await received('/a', id, 1);
    const job = await enqueue(t, a, { task: 'cases.bulkStatus', payload: { appId: 'bulk', status: 'done' } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed']);
    expect(done.result).toMatchObject({ matched: 3, changed: 2 });
    for (const id of ids.slice(1)) {
      expect(one(await received('/a', id, 2), 'case.updated')).toMatchObject({
        changes: [{ field: 'status', from: 'open', to: 'done' }],
        actor: { role: 'admin', id: `job:${job.id}`, contact_id: null },
      });
    }
    expect(about('/a', ids[0])).toHaveLength(1);
  });
});

describe('thread events', () => {
  it('created, replied (bounded content), updated, deleted, from the public zone and the admin one', async () => {
    const pub = base(a, 'public', 'forum', 'threads');
    const th = await ok('POST', pub, a.userAuth, { title: 'Lid', visibility: 'public', body: { text: 'help' } });
    await ok('POST', `${pub}/${th.id}/reply`, a.userAuth, { text: 'anyone?' });
    await ok('POST', `${base(a, 'admin', 'forum', 'threads')}/${th.id}/reply`, a.auth, { text: 'on it' });
    await ok('POST', `${pub}/${th.id}/reply`, a.userAuth, { text: 'w'.repeat(40_000) });
    // Too large a reply: 413, nothing sent.
    expect((await call('POST', `${pub}/${th.id}/reply`, a.userAuth, { text: 'v'.repeat(70_000) })).statusCode).toBe(
      413,
    );
    await ok('PATCH', `${pub}/${th.id}`, a.userAuth, { tags: ['kettle'], body: { text: 'help!' } });
    await ok('PATCH', `${base(a, 'admin', 'forum', 'threads')}/${th.id}`, a.auth, { title: 'Kettle lid' });
    await ok('DELETE', `${pub}/${th.id}`, a.userAuth);

    const got = await received('/a', th.id, 7);
    await signed('/a', got);
    expect(types(got)).toEqual({ 'thread.created': 1, 'thread.deleted': 1, 'thread.replied': 3, 'thread.updated': 2 });
    const created = one(got, 'thread.created');
    const [r1, r2, r3] = [1, 2, 3].map((seq) =>
      one(got, 'thread.replied', (d) => (d.reply as { seq: number }).seq === seq),
    );
    const owners = one(got, 'thread.updated', changed('tags', 'body'));
    const admins = one(got, 'thread.updated', changed('title'));
    const deleted = one(got, 'thread.deleted');
    expect(created).toMatchObject({
      thread_id: th.id,
      app_id: 'forum',
      title: 'Lid',
      author_id: 'u1',
      author_type: 'user',
      contact_id: 'ct1',
      body: { text: 'help' },
      tags: [],
      actor: u1,
    });
    expect(r1).toMatchObject({
      reply_count: 1,
      reply: { seq: 1, author_id: 'u1', author_type: 'user', content: { text: 'anyone?' } },
      omitted: [],
      actor: u1,
    });
    expect(r2).toMatchObject({ reply_count: 2, reply: { seq: 2, author_type: 'admin', content: { text: 'on it' } } });
    expect(r2.actor).toMatchObject(adminActor);
    expect(r3).toMatchObject({ reply_count: 3, reply: { seq: 3, content: null }, omitted: ['reply.content'] });
    expect(owners).toMatchObject({
      changes: [
        { field: 'tags', from: [], to: ['kettle'] },
        { field: 'body', from: { text: 'help' }, to: { text: 'help!' } },
      ],
      actor: u1,
    });
    expect(admins).toMatchObject({ changes: [{ field: 'title', from: 'Lid', to: 'Kettle lid' }], tags: ['kettle'] });
    expect(admins.actor).toMatchObject(adminActor);
    expect(deleted).toMatchObject({ thread_id: th.id, reply_count: 3, actor: u1 });
  });
});

describe('record events', () => {
  const recs = (c: TestCollection, appId = 'catalog') => base(c, 'admin', appId, 'records');

  it('upserts and singleton creates publish what they did; a write that changes nothing publishes nothing', async () => {
    const created = await ok('POST', `${recs(a)}/upsert`, a.auth, {
      ref: 'sku-1',
      recordType: 'item',
      data: { label: 'A' },
    });
    await ok('POST', `${recs(a)}/upsert`, a.auth, { ref: 'sku-1', status: 'draft', data: { label: 'B' } });
    await ok('POST', `${recs(a)}/upsert`, a.auth, { ref: 'sku-1', status: 'draft', data: { label: 'B' } });
    const got = await received('/a', created.id, 2);
    await signed('/a', got);
    expect(types(got)).toEqual({ 'record.created': 1, 'record.updated': 1 });
    expect(one(got, 'record.created')).toMatchObject({
      record_id: created.id,
      ref: 'sku-1',
      record_type: 'item',
      status: 'active',
    });
    expect(one(got, 'record.updated')).toMatchObject({
      changed_fields: ['status', 'data.label'],
      changes: [{ field: 'status', from: 'active', to: 'draft' }],
      data: { label: 'B' },
    });

    const pub = base(a, 'public', 'catalog', 'records');
    const reg = await ok('POST', pub, a.userAuth, { recordType: 'pref', singletonPer: 'contactId', data: { v: 1 } });
    const again = await ok('POST', pub, a.userAuth, { recordType: 'pref', singletonPer: 'contactId', data: { v: 2 } });
    expect(again.id).toBe(reg.id);
    const single = await received('/a', reg.id, 2);
    expect(one(single, 'record.created')).toMatchObject({ data: { v: 1 }, actor: u1 });
    expect(one(single, 'record.updated')).toMatchObject({ changed_fields: ['data.v'], data: { v: 2 }, actor: u1 });
    // Another contact's singleton create of a key it may not change: 409, nothing sent.
    const adminOnly = await ok('POST', recs(a), a.auth, {
      recordType: 'pref2',
      contactId: 'ct-bob',
      visibility: 'admin',
      singletonPer: 'contactId',
    });
    await received('/a', adminOnly.id, 1);
    expect(
      (await call('POST', pub, bob, { recordType: 'pref2', singletonPer: 'contactId', data: { v: 9 } })).statusCode,
    ).toBe(409);
    await sleep(300);
    expect(about('/a', adminOnly.id)).toHaveLength(1);
  });

  it('singleton creates reviving a deleted record, concurrently: one record, one record.updated each', async () => {
    const key = { recordType: 'settings', productId: 'p-rev', singletonPer: 'productId' };
    const r = await ok('POST', recs(a), a.auth, { ...key, data: { n: -1 } });
    await ok('DELETE', `${recs(a)}/${r.id}`, a.auth);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, n) => call('POST', recs(a), a.auth, { ...key, data: { n } })),
    );
    expect(answers.map((x) => x.statusCode)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((x) => x.json().id))).toEqual(new Set([r.id]));
    const got = await received('/a', r.id, 10);
    expect(types(got)).toEqual({ 'record.created': 1, 'record.deleted': 1, 'record.updated': 8 });
    // Exactly one of them revived it; each of the others changed data.n.
    expect(one(got, 'record.updated', (d) => (d.changed_fields as string[]).includes('deleted_at'))).toMatchObject({
      deleted_at: null,
    });
    const ns = got.filter((x) => x.body.type === 'record.updated').map((x) => (x.body.data.data as { n: number }).n);
    expect(new Set(ns).size).toBe(8);
  });

  it('PATCH, delete, restore, bulk upsert and bulk delete: one event per record', async () => {
    const r = await ok('POST', recs(a), a.auth, { recordType: 'item', ref: 'r-1', productId: 'p1' });
    await ok('PATCH', `${recs(a)}/${r.id}`, a.auth, { productId: null, variantId: 'v1' });
    await ok('DELETE', `${recs(a)}/${r.id}`, a.auth);
    await ok('POST', `${recs(a)}/${r.id}/restore`, a.auth);
    const first = await received('/a', r.id, 4);
    expect(types(first)).toEqual({ 'record.created': 1, 'record.deleted': 1, 'record.updated': 2 });
    // As the history records a PATCH: the fields it named (the scope derived from them is in the object).
    expect(one(first, 'record.updated', changed('product_id', 'variant_id'))).toMatchObject({
      changes: [
        { field: 'product_id', from: 'p1', to: null },
        { field: 'variant_id', from: null, to: 'v1' },
      ],
      scope_type: 'variant',
    });
    expect(one(first, 'record.updated', changed('deleted_at'))).toMatchObject({
      changes: [{ field: 'deleted_at', from: expect.any(String), to: null }],
      deleted_at: null,
    });

    const bulk = await ok('POST', `${recs(a)}/bulk-upsert`, a.auth, [
      { ref: 'r-1', data: { label: 'one' } },
      { ref: 'bulk-2', recordType: 'item' },
      { ref: 'bulk-3', recordType: 'item' },
    ]);
    const [, second, third] = bulk.results.map((x: { id: string }) => x.id);
    const afterBulk = await received('/a', r.id, 5);
    expect(one(afterBulk, 'record.updated', changed('data.label'))).toMatchObject({ data: { label: 'one' } });
    expect((await received('/a', second, 1))[0].body.type).toBe('record.created');
    expect((await received('/a', third, 1))[0].body.type).toBe('record.created');

    const del = await ok('POST', `${recs(a)}/bulk-delete`, a.auth, { refs: ['bulk-2', 'bulk-3', 'nothing-here'] });
    expect(del).toEqual({ deleted: 2 });
    for (const id of [second, third]) {
      const gone = one(await received('/a', id, 2), 'record.deleted');
      expect(gone).toMatchObject({ record_id: id, deleted_at: expect.any(String), record_type: 'item' });
    }
  });

  it('a bulk upsert refused at its last item (inside its transaction) writes and sends nothing', async () => {
    const big = await ok('POST', `${recs(a)}/upsert`, a.auth, { ref: 'zz-big', data: { a: 'x'.repeat(700_000) } });
    await received('/a', big.id, 1);
    const res = await call('POST', `${recs(a)}/bulk-upsert`, a.auth, [
      { ref: 'rb-1', recordType: 'item' },
      { ref: 'rb-2', recordType: 'item' },
      { ref: 'zz-big', data: { b: 'y'.repeat(400_000) } },
    ]);
    expect(res.statusCode, res.body).toBe(413);
    const list = await t.inject({ method: 'GET', url: `${recs(a)}?refPrefix=rb-`, headers: a.auth });
    expect(list.json().pagination.total).toBe(0);
    await sleep(500);
    expect(rx.on('/a').filter((x) => String(x.body.data.ref).startsWith('rb-'))).toHaveLength(0);
    expect(about('/a', big.id)).toHaveLength(1);
  });

  it('records.import publishes one event per record saved, in batches; the refused item sends nothing', async () => {
    const big = await ok('POST', `${recs(a, 'imports')}/upsert`, a.auth, {
      ref: 'imp-0050',
      data: { a: 'x'.repeat(700_000) },
    });
    const items = Array.from({ length: 150 }, (_, i) => ({
      ref: `imp-${String(i).padStart(4, '0')}`,
      recordType: 'import',
      data: i === 50 ? { b: 'y'.repeat(400_000) } : { i },
    }));
    items.push({ ref: 'imp-bad', recordType: 'import', data: 'not an object' as never });
    const job = await enqueue(t, a, { task: 'records.import', payload: { appId: 'imports', items } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.result, JSON.stringify(done.result).slice(0, 500)).toMatchObject({
      saved: 149,
      failed: 2,
      created: 149,
      updated: 0,
    });
    expect(done.result.errors.map((e: { index: number }) => e.index)).toEqual([50, 150]);
    const imported = () =>
      rx.on('/a').filter((x) => x.body.data.app_id === 'imports' && x.body.data.record_type === 'import');
    await waitFor(async () => (imported().length >= 149 ? true : undefined), 20_000, '149 import events');
    await sleep(300);
    expect(imported()).toHaveLength(149);
    expect(new Set(imported().map((x) => x.body.data.ref)).size).toBe(149);
    expect(imported().every((x) => x.body.type === 'record.created')).toBe(true);
    expect(imported()[0].body.data.actor).toEqual({ role: 'admin', id: `job:${job.id}`, contact_id: null });
    expect(about('/a', big.id)).toHaveLength(1);
  });
});

describe('filters.appIds', () => {
  it('a registration narrowed to one app hears that app’s changes only', async () => {
    const inShop = await ok('POST', base(a, 'admin', 'shop', 'records'), a.auth, { recordType: 'item' });
    const inDesk = await ok('POST', base(a, 'admin', 'desk', 'cases'), a.auth, {});
    const shopThread = await ok('POST', base(a, 'admin', 'shop', 'threads'), a.auth, {});
    await received('/a', inDesk.id, 1);
    await received('/a-shop', inShop.id, 1);
    await received('/a-shop', shopThread.id, 1);
    expect(about('/a-shop', inDesk.id)).toHaveLength(0);
    expect(rx.on('/a-shop').every((x) => x.body.data.app_id === 'shop')).toBe(true);
    await signed('/a-shop', rx.on('/a-shop'));
  });
});
