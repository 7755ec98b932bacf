/**
 * App objects as clients written for the original use them: the requests its guides show
 * (under BASE_PATH=/api/v1, the admin key as X-API-Key, a user token as Bearer), and the
 * answers checked against the original's types: every field of AppCase, AppThread and
 * AppRecord present (the original types them `T | null`, so unset is null, not absent),
 * the ones it types as non-null never null, nothing it does not have; aggregate metrics it
 * types as optional numbers absent when they have no value; time-series items
 * `{bucket, count}` with its bucket labels; the case summary's weekly `{week, count}` trend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isoWeek } from '../../src/modules/app-objects/shared/aggregate.ts';
import { bearer, createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';
import { ALWAYS_NON_NULL, SHAPES } from './sdk-types.ts';

const BASE = '/api/v1';
let t: TestApp;
let c: TestCollection;
let other: TestCollection;
/** The original's `user.contactId` differs from the token's user id here, to tell them apart. */
const user = { userId: 'u-7', contactId: 'contact-7' };
const otherUser = { userId: 'u-8', contactId: 'contact-8' };
let userAuth: { authorization: string };
let otherUserAuth: { authorization: string };
let adminKey: { 'x-api-key': string };

const path = (zone: 'admin' | 'public', kind: string, col = c) =>
  `${BASE}/${zone}/collection/${col.id}/app/support/${kind}`;

beforeAll(async () => {
  t = await createTestApp({ BASE_PATH: BASE });
  c = await t.createCollection();
  other = await t.createCollection();
  adminKey = { 'x-api-key': c.key };
  userAuth = bearer(await t.userToken(c.id, user.userId, user.contactId));
  otherUserAuth = bearer(await t.userToken(c.id, otherUser.userId, otherUser.contactId));
});
afterAll(() => t.close());

async function call(method: 'POST' | 'GET' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) {
  const res = await t.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  return { status: res.statusCode, body: res.json(), text: res.body };
}

async function ok(method: 'POST' | 'GET' | 'PATCH', url: string, headers: Record<string, string>, payload?: object) {
  const res = await call(method, url, headers, payload);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** Moves an object's creation time (the API does not let clients set it). */
async function createdAt(table: 'app_cases' | 'app_threads' | 'app_records', id: string, at: string) {
  await t.testDb.db.query(`UPDATE ${table} SET created_at = $1::timestamptz WHERE collection_id = $2 AND id = $3`, [
    at,
    c.id,
    id,
  ]);
}

/**
 * Every field of the original's type is present, the non-null ones are not null, and there is
 * nothing else; `owner` and `admin` are there exactly for the callers who may see them.
 */
function expectShape(
  kind: keyof typeof SHAPES,
  obj: Record<string, unknown>,
  sees: 'admin' | 'owner' | 'other',
  extra: string[] = [],
) {
  const { fields, nonNull } = SHAPES[kind];
  const sections = sees === 'admin' ? ['owner', 'admin'] : sees === 'owner' ? ['owner'] : [];
  expect(Object.keys(obj).sort()).toEqual([...fields, ...sections, ...extra].sort());
  for (const f of [...ALWAYS_NON_NULL, ...nonNull, ...sections]) expect(obj[f], `${kind}.${f}`).not.toBeNull();
  if (kind !== 'case') expect(typeof obj.authorType).toBe('string');
}

describe("public creates as the guides send them, with the caller's own identity", () => {
  it('the warranty claim: a case with status and contactId', async () => {
    const claim = await ok('POST', path('public', 'cases'), userAuth, {
      visibility: 'owner',
      category: 'warranty',
      status: 'open',
      priority: 2,
      productId: 'prod-1',
      proofId: 'proof-1',
      contactId: user.contactId,
      data: { issue: 'Screen flickering after 3 months', photos: ['https://img.example/1.jpg'] },
      owner: { purchaseDate: '2025-11-15', serialNumber: 'SN-7738291', preferredContact: 'email' },
    });
    expectShape('case', claim, 'owner');
    expect(claim).toMatchObject({ status: 'open', contactId: user.contactId, assignedTo: null, closedAt: null });
    // The admin's next steps in the same guide.
    const assigned = await ok('PATCH', `${path('admin', 'cases')}/${claim.id}`, adminKey, {
      assignedTo: 'user_jane_support',
      priority: 3,
      admin: { internalNotes: 'Likely hardware defect, approve replacement' },
    });
    expectShape('case', assigned, 'admin');
    const resolved = await ok('POST', `${path('admin', 'cases')}/${claim.id}/history`, adminKey, {
      entry: { action: 'approved_replacement', agent: 'Jane', tracking: 'UPS-123456789' },
      historyTarget: 'owner',
      status: 'resolved',
    });
    expectShape('case', resolved, 'admin');
    expect(resolved.closedAt).not.toBeNull();
  });

  it('appendHistory with only a status (AppendHistoryInput types entry as optional)', async () => {
    const claim = await ok('POST', path('public', 'cases'), userAuth, { category: 'warranty', status: 'open' });
    const closed = await ok('POST', `${path('admin', 'cases')}/${claim.id}/history`, adminKey, { status: 'closed' });
    expectShape('case', closed, 'admin');
    expect(closed).toMatchObject({ status: 'closed', closedAt: expect.any(String) });
    expect(closed.admin.history).toEqual([{ at: expect.any(String), actorId: expect.any(String) }]);
  });

  it("a contactId that is not the caller's, and a case for someone in another collection, are refused", async () => {
    const foreign = await call('POST', path('public', 'cases'), userAuth, {
      category: 'warranty',
      status: 'open',
      contactId: otherUser.contactId,
    });
    expect(foreign.status).toBe(401);
    expect(foreign.body).toMatchObject({ code: 401, errorCode: 'FORBIDDEN', details: { fields: ['contactId'] } });
    const elsewhere = await call('POST', path('public', 'cases', other), userAuth, {
      status: 'open',
      contactId: user.contactId,
    });
    expect(elsewhere.status).toBe(401);
  });

  it('the product Q&A: a thread with authorId and authorType customer; replies by another customer and by staff', async () => {
    const question = await ok('POST', path('public', 'threads'), userAuth, {
      visibility: 'public',
      slug: 'how-to-clean-leather',
      title: 'How do I clean leather without damaging it?',
      status: 'open',
      authorId: user.contactId,
      authorType: 'customer',
      productId: 'prod-1',
      body: { text: 'I spilled coffee on my leather bag. What cleaner is safe to use?' },
      tags: ['cleaning', 'leather', 'care'],
    });
    expectShape('thread', question, 'owner');
    expect(question).toMatchObject({ authorId: user.contactId, authorType: 'customer', contactId: user.contactId });

    const reply = await ok('POST', `${path('public', 'threads')}/${question.id}/reply`, otherUserAuth, {
      authorId: otherUser.contactId,
      authorType: 'customer',
      text: 'I use a mild soap and water solution. Works great!',
    });
    expectShape('thread', reply, 'other');
    const staff = await ok('POST', `${path('admin', 'threads')}/${question.id}/reply`, adminKey, {
      authorId: 'user_expert_sarah',
      authorType: 'brand_expert',
      text: 'Our official leather care kit is perfect for this. Avoid harsh chemicals.',
      productLink: 'prod_leather_care_kit',
    });
    expectShape('thread', staff, 'admin');
    expect(staff.replies).toEqual([
      {
        at: expect.any(String),
        authorId: otherUser.contactId,
        authorType: 'customer',
        text: 'I use a mild soap and water solution. Works great!',
      },
      {
        at: expect.any(String),
        authorId: 'user_expert_sarah',
        authorType: 'brand_expert',
        text: 'Our official leather care kit is perfect for this. Avoid harsh chemicals.',
        productLink: 'prod_leather_care_kit',
      },
    ]);
    const resolved = await ok('PATCH', `${path('admin', 'threads')}/${question.id}`, adminKey, { status: 'resolved' });
    expect(resolved.status).toBe('resolved');
  });

  it('the product comment: a thread with authorId only is authored by a user', async () => {
    const comment = await ok('POST', path('public', 'threads'), userAuth, {
      visibility: 'public',
      parentType: 'product',
      parentId: 'prod-1',
      authorId: user.contactId,
      body: { text: 'Love this product! Best purchase ever.' },
      tags: ['positive'],
    });
    expectShape('thread', comment, 'owner');
    expect(comment).toMatchObject({ authorId: user.contactId, authorType: 'user' });
  });

  it('a user may not reply or create as staff, nor as someone else', async () => {
    const th = await ok('POST', path('public', 'threads'), userAuth, { visibility: 'public', body: { text: 'q' } });
    for (const payload of [
      { authorType: 'admin', text: 'x' },
      { authorType: 'agent', text: 'x' },
      { authorId: user.contactId, text: 'x' },
    ]) {
      const res = await call('POST', `${path('public', 'threads')}/${th.id}/reply`, otherUserAuth, payload);
      expect(res.status, JSON.stringify(payload)).toBe(401);
      expect(res.body.errorCode).toBe('FORBIDDEN');
    }
    const asStaff = await call('POST', path('public', 'threads'), userAuth, { authorType: 'staff' });
    expect(asStaff.status).toBe(401);
    expect(asStaff.body.details).toMatchObject({ fields: ['authorType'], reason: 'staff_author_type' });
  });

  it('the product registration and the appointment: records with contactId (and authorId, authorType)', async () => {
    const registration = await ok('POST', path('public', 'records'), userAuth, {
      recordType: 'product_registration',
      visibility: 'owner',
      status: 'active',
      productId: 'prod-1',
      proofId: 'proof-1',
      contactId: user.contactId,
      authorId: user.contactId,
      authorType: 'customer',
      startsAt: '2026-02-20T00:00:00.000Z',
      expiresAt: '2027-02-20T00:00:00.000Z',
      data: { registrationNumber: 'REG-2026-1234', purchaseDate: '2026-02-15', retailer: 'Best Electronics' },
      owner: { serialNumber: 'SN-9922736', installDate: '2026-02-20', location: 'Home office' },
    });
    expectShape('record', registration, 'owner');
    expect(registration).toMatchObject({ contactId: user.contactId, authorId: user.contactId, authorType: 'customer' });
    const booking = await ok('POST', path('public', 'records'), userAuth, {
      recordType: 'service_appointment',
      visibility: 'owner',
      contactId: user.contactId,
      startsAt: '2026-03-15T10:00:00Z',
      expiresAt: '2026-03-15T11:00:00Z',
      data: { serviceType: 'installation', location: 'Customer site', technician: null },
      owner: { address: '123 Main St', phone: '555-1234', notes: 'Call before arrival' },
    });
    expectShape('record', booking, 'owner');
    expect(booking).toMatchObject({ contactId: user.contactId, authorId: user.userId, authorType: 'user' });
    const singleton = await ok('POST', path('public', 'records'), userAuth, {
      recordType: 'product_registration_once',
      visibility: 'owner',
      contactId: user.contactId,
      productId: 'prod-1',
      singletonPer: 'product',
      data: { registeredAt: new Date().toISOString() },
    });
    expectShape('record', singleton, 'owner');
    // Another customer sees none of it; their own list is empty.
    const theirs = await ok('GET', `${path('public', 'records')}?recordType=product_registration`, otherUserAuth);
    expect(theirs.data).toEqual([]);
  });

  it('admin-written records and threads are authored by admin unless the admin says otherwise', async () => {
    const shipment = await ok('POST', path('admin', 'records'), adminKey, {
      recordType: 'shipment',
      parentType: 'case',
      parentId: 'case_x',
      data: { carrier: 'UPS', tracking: 'UPS-123456789', estimatedDelivery: '2026-02-28' },
      owner: { shippingAddress: '123 Main St' },
      admin: { cost: 25.0, warehouse: 'CA-01' },
    });
    expectShape('record', shipment, 'admin');
    expect(shipment).toMatchObject({ authorType: 'admin', authorId: null, contactId: null });
    const audit = await ok('POST', path('admin', 'records'), adminKey, {
      recordType: 'audit_log',
      visibility: 'admin',
      authorId: 'staff-1',
      authorType: 'admin',
      data: { action: 'case_reassigned', timestamp: new Date().toISOString() },
    });
    expect(audit).toMatchObject({ authorId: 'staff-1', authorType: 'admin' });
    const upserted = await ok('POST', `${path('admin', 'records')}/upsert`, adminKey, {
      ref: 'product:prod_abc',
      recordType: 'nutrition',
      productId: 'prod_abc',
      data: { calories: 250, protein: 12.5 },
    });
    expectShape('record', upserted, 'admin', ['created']);
    expect(upserted).toMatchObject({ authorType: 'admin', created: true });
    const thread = await ok('POST', path('admin', 'threads'), adminKey, {
      parentType: 'case',
      parentId: 'case_x',
      body: { text: 'Follow-up discussion about this case' },
    });
    expectShape('thread', thread, 'admin');
    expect(thread.authorType).toBe('admin');
    const lists = await Promise.all(
      (['cases', 'threads', 'records'] as const).map((k) => ok('GET', `${path('admin', k)}?limit=500`, adminKey)),
    );
    for (const [i, kind] of (['case', 'thread', 'record'] as const).entries()) {
      expect(lists[i].data.length).toBeGreaterThan(0);
      for (const item of lists[i].data) expectShape(kind, item, 'admin');
    }
  });
});

describe('aggregates and the case summary as the original shapes them', () => {
  /** Creation times: the guide's weeks (2026-W07…W09) and the edges of ISO week years. */
  const WHEN = [
    '2026-02-10T14:35:00Z', // Tuesday of 2026-W07
    '2026-02-15T23:59:59Z', // Sunday, still 2026-W07
    '2026-02-16T00:00:00Z', // Monday of 2026-W08
    '2026-03-02T08:00:00Z', // 2026-W10
    '2026-12-31T12:00:00Z', // Thursday: 2026-W53 (2026 has 53 ISO weeks)
    '2027-01-01T09:00:00Z', // Friday: still 2026-W53, though in calendar year 2027
    '2027-01-04T00:00:00Z', // Monday of 2027-W01
    '2024-12-30T06:00:00Z', // Monday: 2025-W01, though in calendar year 2024
  ];
  let app: string;
  const at = (kind: 'cases' | 'threads' | 'records', zone: 'admin' | 'public' = 'admin') =>
    `${BASE}/${zone}/collection/${c.id}/app/${app}/${kind}`;

  beforeAll(async () => {
    app = 'reports';
    for (const when of WHEN) {
      const kase = await ok('POST', at('cases'), adminKey, { category: 'warranty', contactId: user.contactId });
      await createdAt('app_cases', kase.id, when);
      const thread = await ok('POST', at('threads'), adminKey, {});
      await createdAt('app_threads', thread.id, when);
      const record = await ok('POST', at('records'), adminKey, { recordType: 'service_appointment' });
      await createdAt('app_records', record.id, when);
    }
  });

  const series = async (kind: 'cases' | 'threads' | 'records', timeSeriesInterval: string) => {
    const body = await ok('POST', `${at(kind)}/aggregate`, adminKey, {
      timeSeriesField: 'created_at',
      timeSeriesInterval,
      metrics: ['count'],
    });
    for (const item of body.timeSeries) expect(Object.keys(item).sort()).toEqual(['bucket', 'count', 'start']);
    return body.timeSeries.map((i: { bucket: string; count: number }) => [i.bucket, i.count]);
  };

  it('weekly buckets are ISO weeks (the guide’s 2026-W07), with the ISO week-numbering year, for every kind', async () => {
    const weeks = [
      ['2025-W01', 1],
      ['2026-W07', 2],
      ['2026-W08', 1],
      ['2026-W10', 1],
      ['2026-W53', 2],
      ['2027-W01', 1],
    ];
    for (const kind of ['cases', 'threads', 'records'] as const)
      expect(await series(kind, 'week'), kind).toEqual(weeks);
    const body = await ok('POST', `${at('cases')}/aggregate`, adminKey, {
      timeSeriesField: 'created_at',
      timeSeriesInterval: 'week',
      metrics: ['count'],
    });
    expect(body.timeSeries[1]).toEqual({ bucket: '2026-W07', start: '2026-02-09T00:00:00.000Z', count: 2 });
    expect(body.timeSeries[4]).toEqual({ bucket: '2026-W53', start: '2026-12-28T00:00:00.000Z', count: 2 });
  });

  it('hours, days, months, quarters and years have their own labels', async () => {
    expect(await series('cases', 'hour')).toEqual([
      ['2024-12-30T06:00:00Z', 1],
      ['2026-02-10T14:00:00Z', 1],
      ['2026-02-15T23:00:00Z', 1],
      ['2026-02-16T00:00:00Z', 1],
      ['2026-03-02T08:00:00Z', 1],
      ['2026-12-31T12:00:00Z', 1],
      ['2027-01-01T09:00:00Z', 1],
      ['2027-01-04T00:00:00Z', 1],
    ]);
    expect(await series('records', 'day')).toEqual([
      ['2024-12-30', 1],
      ['2026-02-10', 1],
      ['2026-02-15', 1],
      ['2026-02-16', 1],
      ['2026-03-02', 1],
      ['2026-12-31', 1],
      ['2027-01-01', 1],
      ['2027-01-04', 1],
    ]);
    expect(await series('threads', 'month')).toEqual([
      ['2024-12', 1],
      ['2026-02', 3],
      ['2026-03', 1],
      ['2026-12', 1],
      ['2027-01', 2],
    ]);
    expect(await series('cases', 'quarter')).toEqual([
      ['2024-Q4', 1],
      ['2026-Q1', 4],
      ['2026-Q4', 1],
      ['2027-Q1', 2],
    ]);
    expect(await series('records', 'year')).toEqual([
      ['2024', 1],
      ['2026', 5],
      ['2027', 2],
    ]);
  });

  it('the case summary trend is weekly {week, count} (plus the week’s start)', async () => {
    // The guide's period is in dates; date-time windows are the same request in RFC 3339.
    const summary = await ok('POST', `${at('cases')}/summary`, adminKey, {
      period: { from: '2026-01-01T00:00:00Z', to: '2026-03-01T00:00:00Z' },
    });
    expect(Object.keys(summary).sort()).toEqual(['byPriority', 'byStatus', 'total', 'trend']);
    expect(summary).toMatchObject({ total: 3, byStatus: { open: 3 }, byPriority: { none: 3 } });
    expect(summary.trend).toEqual([
      { week: '2026-W07', start: '2026-02-09T00:00:00.000Z', count: 2 },
      { week: '2026-W08', start: '2026-02-16T00:00:00.000Z', count: 1 },
    ]);
    const edge = await ok('POST', `${at('cases')}/summary`, adminKey, {
      period: { from: '2026-12-01T00:00:00Z', to: '2027-01-31T00:00:00Z' },
    });
    expect(edge.trend.map((w: { week: string; count: number }) => [w.week, w.count])).toEqual([
      ['2026-W53', 2],
      ['2027-W01', 1],
    ]);
  });

  it('ISO week labels agree with PostgreSQL’s for every day of 2015–2035', async () => {
    const { rows } = await t.testDb.db.query<{ day: string; label: string }>(
      `SELECT to_char(d, 'YYYY-MM-DD') AS day, to_char(d, 'IYYY-"W"IW') AS label
       FROM generate_series('2015-01-01'::timestamp, '2035-12-31'::timestamp, interval '1 day') AS d`,
    );
    expect(rows.length).toBeGreaterThan(7000);
    // Any moment of the day has the day's week: noon, and the first and last second.
    const wrong = rows.filter((r) =>
      ['00:00:00', '12:00:00', '23:59:59'].some((time) => isoWeek(new Date(`${r.day}T${time}Z`)) !== r.label),
    );
    expect(wrong).toEqual([]);
  });

  it('the guide’s aggregates: close times by category, reply metrics, records by status', async () => {
    const open = await ok('POST', `${at('cases')}/aggregate`, adminKey, {
      groupBy: ['category'],
      metrics: ['count', 'avg_close_time', 'p95_close_time'],
    });
    // No case is closed yet: the close-time metrics have no value and are left out, not null.
    expect(open).toEqual({ count: WHEN.length, groups: [{ category: 'warranty', count: WHEN.length }] });
    const list = await ok('GET', `${at('cases')}?limit=2&sort=createdAt:asc`, adminKey);
    for (const k of list.data) await ok('PATCH', `${at('cases')}/${k.id}`, adminKey, { status: 'closed' });
    const closed = await ok('POST', `${at('cases')}/aggregate`, adminKey, {
      filters: { closed_at: '__notnull__' },
      groupBy: ['category'],
      metrics: ['count', 'avg_close_time', 'p95_close_time'],
    });
    expect(closed.groups).toEqual([
      {
        category: 'warranty',
        count: 2,
        avg_close_time_seconds: expect.any(Number),
        p95_close_time_seconds: expect.any(Number),
      },
    ]);
    const threads = await ok('POST', `${at('threads')}/aggregate`, adminKey, {
      groupBy: ['status'],
      metrics: ['count', 'reply_count'],
    });
    expect(threads).toEqual({
      count: WHEN.length,
      total_replies: 0,
      avg_replies: 0,
      groups: [{ status: 'open', count: WHEN.length, total_replies: 0, avg_replies: 0 }],
    });
    const records = await ok('POST', `${at('records')}/aggregate`, adminKey, {
      filters: { record_type: 'service_appointment' },
      groupBy: ['status'],
      metrics: ['count'],
    });
    expect(records).toEqual({ count: WHEN.length, groups: [{ status: 'active', count: WHEN.length }] });
    const empty = await ok('POST', `${BASE}/admin/collection/${c.id}/app/nothing/threads/aggregate`, adminKey, {
      metrics: ['reply_count'],
    });
    expect(empty).toEqual({ count: 0, total_replies: 0 });
  });
});

describe('list filters as the SDK types them', () => {
  /** The SDK's query string: each value through encodeURIComponent(String(value)). */
  const qs = (params: Record<string, string | number>) =>
    `?${Object.entries(params)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
      .join('&')}`;

  it("cases.list priority as CaseListQueryParams types it ('gte:N' / 'lte:N', a string)", async () => {
    for (const [ref, priority] of [
      ['P1', 1],
      ['P3', 3],
      ['P5', 5],
    ] as const) {
      await ok('POST', path('admin', 'cases'), adminKey, { ref, priority, category: 'triage' });
    }
    const refs = async (params: Record<string, string | number>, zone: 'admin' | 'public' = 'admin') => {
      const res = await ok(
        'GET',
        `${path(zone, 'cases')}${qs({ category: 'triage', sort: 'ref:asc', ...params })}`,
        adminKey,
      );
      return res.data.map((x: { ref: string }) => x.ref);
    };
    expect(await refs({ priority: 'gte:3' })).toEqual(['P3', 'P5']);
    expect(await refs({ priority: 'lte:3' })).toEqual(['P1', 'P3']);
    expect(await refs({ priority: 3 })).toEqual(['P3']);
    expect(await refs({ priority: 'gte:2,lte:4' })).toEqual(['P3']);
    const bad = await call('GET', `${path('admin', 'cases')}${qs({ priority: 'gte:high' })}`, adminKey);
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual({ param: 'priority' });
  });

  it("records.list q: the guide's case-insensitive substring of data.label, on both zones", async () => {
    const made = [
      { ref: 'label-1', visibility: 'public', data: { label: 'Premium Leather Wallet' } },
      { ref: 'label-2', visibility: 'public', data: { label: 'Basic wallet' } },
      { ref: 'label-3', visibility: 'public', data: { title: 'premium, but no label' } },
      { ref: 'label-4', visibility: 'owner', contactId: otherUser.contactId, data: { label: 'SUPER PREMIUM' } },
      { ref: 'label-5', visibility: 'public', data: { label: '100% premium_' } },
    ];
    for (const r of made) await ok('POST', path('admin', 'records'), adminKey, { recordType: 'product', ...r });
    const refs = async (zone: 'admin' | 'public', headers: Record<string, string>, q: string) =>
      (
        await ok('GET', `${path(zone, 'records')}${qs({ recordType: 'product', q, sort: 'ref:asc' })}`, headers)
      ).data.map((x: { ref: string }) => x.ref);
    // The guide's call: app.records.list(collectionId, appId, {recordType: 'product', q: 'premium'}, true).
    expect(await refs('admin', adminKey, 'premium')).toEqual(['label-1', 'label-4', 'label-5']);
    // Public: the same match over what the caller may see.
    expect(await refs('public', userAuth, 'premium')).toEqual(['label-1', 'label-5']);
    expect(await refs('public', otherUserAuth, 'PREMIUM')).toEqual(['label-1', 'label-4', 'label-5']);
    // % and _ are characters, not patterns; ref is still searched too.
    expect(await refs('admin', adminKey, '100%')).toEqual(['label-5']);
    expect(await refs('admin', adminKey, 'm_')).toEqual(['label-5']);
    expect(await refs('admin', adminKey, 'label-2')).toEqual(['label-2']);
  });
});
