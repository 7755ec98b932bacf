/**
 * Tenant isolation of the remaining lists and summaries, with data in BOTH collections: link
 * lists, a link's clicks and click statistics, job lists (and a job read or cancelled by id),
 * webhook registrations and a registration's delivery log (and the cap on registrations),
 * location searches and API keys. Objects keyed by ids the service makes (a link, a webhook
 * registration) share an id across the collections through the database
 * (test/helpers/shared-ids.ts), so that a query keyed by the id alone would read both
 * collections' rows; each collection's answer is checked exactly, with different, known totals.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, superAuth, type TestApp } from './helpers/app.ts';
import { BOTH_SIDES, type CollectionWithUser, type Side, twoCollections } from './helpers/fixtures.ts';
import { enqueue, waitFor, waitForStatus } from './helpers/jobs.ts';
import { giveId } from './helpers/shared-ids.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

const both = BOTH_SIDES;
const side = (s: Side) => (s === 'a' ? a : b);
const MAX_REGISTRATIONS = 4;

async function call(s: Side, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) {
  const res = await t.inject({ method, url, headers: side(s).auth, payload: payload as Record<string, unknown> });
  expect(res.statusCode, `${s} ${method} ${url}: ${res.body}`).toBeLessThan(300);
  return res.json();
}
const admin = (s: Side, path: string) => `/admin/collection/${side(s).id}${path}`;
/** Rows of a collection in a table, read from the database (what to wait for). */
const rowsIn = async (table: string, s: Side, where = 'true') =>
  (
    await t.testDb.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} WHERE collection_id = $1 AND ${where}`,
      [side(s).id],
    )
  ).rows[0].n;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_MAX_REGISTRATIONS: String(MAX_REGISTRATIONS),
    CLICK_FLUSH_MS: '5',
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

describe('links', () => {
  /** A's link and B's first link have the same id; A has 2 links and 2 clicks, B 3 links and 3 clicks. */
  const CLICKS: Record<Side, { userAgent: string; referer: string; device: string; n: number }> = {
    a: { userAgent: 'curl/8.0', referer: 'https://a.example/page', device: 'bot', n: 2 },
    b: {
      userAgent: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148',
      referer: 'https://b.example/page',
      device: 'mobile',
      n: 3,
    },
  };
  const LINKS: Record<Side, number> = { a: 2, b: 3 };
  let linkId: string;

  beforeAll(async () => {
    const made: Record<Side, { id: string; code: string }[]> = { a: [], b: [] };
    for (const s of both) {
      for (let i = 0; i < LINKS[s]; i++) {
        made[s].push(
          await call(s, 'POST', admin(s, '/links'), {
            url: `https://${s}.example/${i}`,
            code: `iso-${s}${i}-${randomBytes(4).toString('hex')}`,
          }),
        );
      }
    }
    linkId = made.a[0].id;
    // Before anything visits it: the redirect then finds the link under its new id.
    await giveId(t, b.id, { table: 'links', column: 'id' }, made.b[0].id, linkId);
    for (const s of both) {
      const { userAgent, referer, n } = CLICKS[s];
      for (let i = 0; i < n; i++) {
        const res = await t.inject({
          method: 'GET',
          url: `/l/${made[s][0].code}`,
          headers: { 'user-agent': userAgent, referer },
        });
        expect(res.statusCode).toBe(302);
      }
    }
    await waitFor(
      async () =>
        (await rowsIn('link_clicks', 'a')) === 2 && (await rowsIn('link_clicks', 'b')) === 3 ? true : undefined,
      15_000,
      'the clicks stored',
    );
  });

  it('a link’s clicks, their pages and totals, and its click statistics are its collection’s', async () => {
    for (const s of both) {
      const { userAgent, referer, device, n } = CLICKS[s];
      const clicks = await call(s, 'GET', admin(s, `/links/${linkId}/clicks?limit=100`));
      expect(clicks.total, s).toBe(n);
      expect(
        clicks.items.map((c: { userAgent: string }) => c.userAgent),
        s,
      ).toEqual(Array(n).fill(userAgent));
      expect((await call(s, 'GET', admin(s, `/links/${linkId}/clicks?limit=1`))).total, s).toBe(n);
      expect((await call(s, 'GET', admin(s, `/links/${linkId}/clicks?offset=50`))).total, `${s} past the end`).toBe(n);
      const stats = await call(s, 'GET', admin(s, `/links/${linkId}/clicks/stats?interval=day`));
      expect(stats.total, s).toBe(n);
      expect(stats.deviceTypes, s).toEqual({ items: [{ value: device, count: n }], other: 0 });
      expect(stats.referers, s).toEqual({ items: [{ value: new URL(referer).hostname, count: n }], other: 0 });
      expect((await call(s, 'GET', admin(s, `/links/${linkId}`))).clicks, s).toBe(n);
    }
  });

  it('the links list and its totals', async () => {
    for (const s of both) {
      const list = await call(s, 'GET', admin(s, '/links?limit=100'));
      expect(list.total, s).toBe(LINKS[s]);
      expect(
        list.items.map((l: { destinationUrl: string }) => new URL(l.destinationUrl).hostname),
        s,
      ).toEqual(Array(LINKS[s]).fill(`${s}.example`));
      expect((await call(s, 'GET', admin(s, '/links?limit=1'))).total, s).toBe(LINKS[s]);
      expect((await call(s, 'GET', admin(s, '/links?offset=50'))).total, `${s} past the end`).toBe(LINKS[s]);
    }
  });
});

describe('jobs', () => {
  it('lists only its collection’s jobs; another collection’s job is not found, read or cancelled', async () => {
    const JOBS: Record<Side, number> = { a: 2, b: 3 };
    const ids: Record<Side, number[]> = { a: [], b: [] };
    for (const s of both) {
      for (let i = 0; i < JOBS[s]; i++) {
        const job = await enqueue(t, side(s), {
          task: 'records.import',
          payload: { appId: 'jobs', items: [{ ref: `${s}${i}`, data: {} }] },
        });
        ids[s].push(job.id);
      }
      for (const id of ids[s]) await waitForStatus(t, side(s), id, ['completed']);
    }
    // A job that waits: its collection may cancel it, another may not even see it.
    const later = await enqueue(t, b, {
      task: 'records.import',
      payload: { appId: 'jobs', items: [{ ref: 'later', data: {} }] },
      runAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    ids.b.push(later.id);
    for (const s of both) {
      const list = await call(s, 'GET', admin(s, '/jobs?limit=100'));
      expect(list.items.map((j: { id: number }) => j.id).sort(), s).toEqual([...ids[s]].sort());
      const done = await call(s, 'GET', admin(s, '/jobs?state=completed&limit=100'));
      expect(done.items.length, `${s} completed`).toBe(JOBS[s]);
    }
    for (const id of ids.b) {
      const read = await t.inject({ method: 'GET', url: admin('a', `/jobs/${id}`), headers: a.auth });
      expect(read.statusCode, `B's job ${id} read through A`).toBe(404);
    }
    const cancel = await t.inject({ method: 'POST', url: admin('a', `/jobs/${later.id}/cancel`), headers: a.auth });
    expect(cancel.statusCode).toBe(404);
    expect((await call('b', 'GET', admin('b', `/jobs/${later.id}`))).status).toBe('queued');
  });
});

describe('webhooks', () => {
  it('the registrations, a registration’s delivery log and its totals, and the cap on registrations', async () => {
    const register = async (s: Side, path: string, active = true) =>
      (await call(s, 'POST', '/v1/webhooks', { url: `${rx.url}${path}`, events: ['link.deleted'], active })) as {
        id: string;
      };
    const hook = await register('a', '/a');
    const ofB = await register('b', '/b1');
    const other = await register('b', '/b2');
    // Before any delivery points at it.
    await giveId(t, b.id, { table: 'webhooks', column: 'id' }, ofB.id, hook.id);
    const SENT: Record<Side, number> = { a: 2, b: 3 };
    for (const s of both) {
      for (let i = 0; i < SENT[s]; i++) await call(s, 'POST', `/v1/webhooks/${hook.id}/test`);
    }
    await waitFor(
      async () =>
        (await rowsIn('webhook_deliveries', 'a', "status = 'succeeded'")) === SENT.a &&
        (await rowsIn('webhook_deliveries', 'b', "status = 'succeeded'")) === SENT.b
          ? true
          : undefined,
      30_000,
      'the test deliveries',
    );
    expect(rx.on('/a')).toHaveLength(SENT.a);
    expect(rx.on('/b1')).toHaveLength(SENT.b);
    for (const s of both) {
      for (const qs of ['?limit=100', '?limit=1', '?status=succeeded&eventType=webhook.test']) {
        const log = await call(s, 'GET', `/v1/webhooks/${hook.id}/deliveries${qs}`);
        expect(log.total, `${s} ${qs}`).toBe(SENT[s]);
      }
      const all = await call(s, 'GET', `/v1/webhooks/${hook.id}/deliveries?limit=100`);
      expect(all.items.length, s).toBe(SENT[s]);
      for (const d of all.items) expect(d.attempts, s).toHaveLength(1);
      const past = await call(s, 'GET', `/v1/webhooks/${hook.id}/deliveries?offset=50`);
      expect(past.total, `${s} past the end`).toBe(SENT[s]);
    }
    const listed = async (s: Side) =>
      (await call(s, 'GET', '/v1/webhooks')).items.map((w: { url: string }) => new URL(w.url).pathname);
    expect(await listed('a')).toEqual(['/a']);
    expect(await listed('b')).toEqual(['/b1', '/b2']);
    for (const [s, path] of [
      ['a', '/a'],
      ['b', '/b1'],
    ] as const) {
      expect(new URL((await call(s, 'GET', `/v1/webhooks/${hook.id}`)).url).pathname, s).toBe(path);
    }
    expect(other.id).not.toBe(hook.id);
    // The cap counts the collection's own registrations: A, with one, has room for three more.
    for (let i = 0; i < MAX_REGISTRATIONS - 1; i++) await register('a', `/a-more-${i}`, false);
    const over = await t.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: a.auth,
      payload: { url: `${rx.url}/a-over`, events: ['link.deleted'] },
    });
    expect(over.statusCode).toBe(409);
    expect(await listed('b')).toEqual(['/b1', '/b2']);
  });
});

describe('locations and API keys', () => {
  it('a search holds the collection’s own locations and the global ones, never another collection’s', async () => {
    const global = await t.inject({
      method: 'POST',
      url: '/platform/location',
      headers: superAuth,
      payload: { name: 'Shared Landmark', category: 'iso' },
    });
    expect(global.statusCode).toBe(200);
    const OWN: Record<Side, number> = { a: 2, b: 3 };
    for (const s of both) {
      for (let i = 0; i < OWN[s]; i++) {
        await call(s, 'POST', admin(s, '/location'), { name: `Store ${s}${i}`, category: 'iso' });
      }
    }
    const ids: Record<Side, string[]> = { a: [], b: [] };
    for (const s of both) {
      const names = Array.from({ length: OWN[s] }, (_, i) => `Store ${s}${i}`);
      const found = await call(s, 'GET', admin(s, '/location/search?category=iso&limit=100'));
      expect(found.items.map((l: { name: string }) => l.name).sort(), s).toEqual(['Shared Landmark', ...names].sort());
      expect(found.count, s).toBe(OWN[s] + 1);
      ids[s] = found.items
        .filter((l: { name: string }) => l.name.startsWith('Store'))
        .map((l: { locationId: string }) => l.locationId);
      for (const qs of ['?category=iso&limit=1', '?category=iso&offset=50', '?category=iso&q=store']) {
        const page = await call(s, 'GET', admin(s, `/location/search${qs}`));
        expect(page.count, `${s} ${qs}`).toBe(qs.includes('q=') ? OWN[s] : OWN[s] + 1);
      }
    }
    // Location ids are unique across collections: another collection's is not found here.
    for (const [s, other] of [
      ['a', 'b'],
      ['b', 'a'],
    ] as const) {
      for (const id of ids[other]) {
        const res = await t.inject({ method: 'GET', url: `/public/collection/${side(s).id}/location/${id}` });
        expect(res.statusCode, `${other}'s location ${id} read through ${s}`).toBe(404);
      }
      const own = await t.inject({ method: 'GET', url: `/public/collection/${side(s).id}/location/${ids[s][0]}` });
      expect(own.statusCode).toBe(200);
    }
  });

  it('the API keys list is the collection’s', async () => {
    const extra: Record<Side, number> = { a: 1, b: 2 };
    for (const s of both) {
      for (let i = 0; i < extra[s]; i++) {
        const res = await t.inject({
          method: 'POST',
          url: admin(s, '/api-keys'),
          headers: superAuth,
          payload: { name: `${s}-extra-${i}` },
        });
        expect(res.statusCode).toBe(200);
      }
    }
    for (const s of both) {
      const res = await t.inject({ method: 'GET', url: admin(s, '/api-keys'), headers: superAuth });
      expect(res.statusCode).toBe(200);
      // Sorted: keys made in one instant (PGlite's clock) list in id order, not the order made.
      const names = (res.json().items ?? res.json()).map((k: { name: string }) => k.name).sort();
      expect(names, s).toEqual(['test', ...Array.from({ length: extra[s] }, (_, i) => `${s}-extra-${i}`)].sort());
    }
  });
});
