/**
 * Links and tenant isolation (issue 23):
 * - a code a link gave up by rename is reserved like a deleted link's: its collection may take
 *   it back, another collection never (the same 409 as for a deleted code);
 * - `HEAD /l/{code}` answers as GET would, but is no click: nothing stored, no `link.clicked`
 *   (counted in the database after a flush, and at a real webhook receiver), with and without
 *   BASE_PATH.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', CLICK_FLUSH_MS: '5' });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

const code = (prefix: string) => `${prefix}-${randomBytes(6).toString('hex')}`;
const links = (c: TestCollection) => `/admin/collection/${c.id}/links`;
const create = (c: TestCollection, payload: Record<string, unknown>, app = t) =>
  app.inject({ method: 'POST', url: `${app.config.basePath}${links(c)}`, headers: c.auth, payload });
const rename = (c: TestCollection, linkId: string, newCode: string) =>
  t.inject({ method: 'PATCH', url: `${links(c)}/${linkId}`, headers: c.auth, payload: { code: newCode } });
const created = async (c: TestCollection, payload: Record<string, unknown>, app = t) => {
  const res = await create(c, payload, app);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string; code: string };
};
const storedClicks = async (app: TestApp, linkId: string) =>
  (await app.testDb.db.query<{ n: number }>('SELECT count(*) AS n FROM link_clicks WHERE link_id = $1', [linkId]))
    .rows[0].n;
const counter = async (app: TestApp, linkId: string) =>
  (await app.testDb.db.query<{ clicks: number }>('SELECT clicks FROM links WHERE id = $1', [linkId])).rows[0].clicks;

describe('codes are never handed on', () => {
  it('refuses another collection a renamed-away code exactly as it refuses a deleted one', async () => {
    const deleted = await created(a, { url: 'https://a.example/deleted', code: code('del') });
    expect((await t.inject({ method: 'DELETE', url: `${links(a)}/${deleted.id}`, headers: a.auth })).statusCode).toBe(
      200,
    );
    const refusedDeleted = await create(b, { url: 'https://b.example/', code: deleted.code });

    const old = code('old');
    const link = await created(a, { url: 'https://a.example/page', code: old });
    const renamed = await rename(a, link.id, code('new'));
    expect(renamed.statusCode, renamed.body).toBe(200);

    // By creation and by rename: the same status and errorCode as the deleted code's.
    const byCreate = await create(b, { url: 'https://b.example/', code: old });
    const bLink = await created(b, { url: 'https://b.example/own' });
    const byRename = await rename(b, bLink.id, old);
    for (const res of [refusedDeleted, byCreate, byRename]) {
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json()).toMatchObject({ code: 409, errorCode: 'CONFLICT', details: { field: 'code' } });
    }
    // The old address answers as for any code no link holds (docs/links.md): 404, GET or HEAD.
    for (const method of ['GET', 'HEAD'] as const) {
      expect((await t.inject({ method, url: `/l/${old}` })).statusCode).toBe(404);
    }
    // B's link is unchanged.
    const bNow = await t.inject({ method: 'GET', url: `${links(b)}/${bLink.id}`, headers: b.auth });
    expect(bNow.json().code).toBe(bLink.code);
  });

  it('lets the collection take a renamed-away code back: by renaming back, or with a new link', async () => {
    const first = code('back');
    const link = await created(a, { url: 'https://a.example/one', code: first });
    expect((await rename(a, link.id, code('away'))).statusCode).toBe(200);
    const back = await rename(a, link.id, first);
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json().code).toBe(first);
    const redirect = await t.inject({ method: 'GET', url: `/l/${first}` });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe('https://a.example/one');

    const second = code('again');
    const other = await created(a, { url: 'https://a.example/two', code: second });
    expect((await rename(a, other.id, code('moved'))).statusCode).toBe(200);
    expect((await create(b, { url: 'https://b.example/', code: second })).statusCode).toBe(409);
    const fresh = await created(a, { url: 'https://a.example/three', code: second });
    expect(fresh.code).toBe(second);
    expect((await t.inject({ method: 'GET', url: `/l/${second}` })).headers.location).toBe('https://a.example/three');
  });

  it('gives one of two collections racing for a new code the code, and the other a 409', async () => {
    const contested = code('race');
    const answers = await Promise.all([
      create(a, { url: 'https://a.example/race', code: contested }),
      create(b, { url: 'https://b.example/race', code: contested }),
    ]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const winner = answers[0].statusCode === 200 ? a : b;
    const loser = winner === a ? b : a;
    // The loser never gets it later either, after the winner renames its link away.
    const won = answers.find((r) => r.statusCode === 200)?.json() as { id: string };
    expect((await rename(winner, won.id, code('after'))).statusCode).toBe(200);
    expect((await create(loser, { url: 'https://x.example/', code: contested })).statusCode).toBe(409);
  });
});

describe('HEAD /l/{code} is not a click', () => {
  it('answers as GET does, stores no click and sends no link.clicked', async () => {
    const hook = await t.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: a.auth,
      payload: { url: `${rx.url}/head`, events: ['link.created', 'link.clicked'], active: true },
    });
    expect(hook.statusCode, hook.body).toBe(200);
    const link = await created(a, { url: 'https://dest.example/head?x=1' });
    // Only this link's events count: an earlier test's click in collection A, flushed late on a
    // loaded machine, may reach this registration too.
    const mine = () => rx.on('/head').filter((r) => r.body.data.link_id === link.id);
    await waitFor(async () => (mine().length >= 1 ? true : undefined), 10_000, 'link.created');

    const head = await t.inject({ method: 'HEAD', url: `/l/${link.code}` });
    expect(head.statusCode).toBe(302);
    expect(head.headers.location).toBe('https://dest.example/head?x=1');
    expect(head.headers['cache-control']).toBe('private, no-store');
    for (let i = 0; i < 4; i++)
      expect((await t.inject({ method: 'HEAD', url: `/l/${link.code}` })).statusCode).toBe(302);
    // One real visit after the HEADs: once its click is stored and delivered, any click the
    // HEADs had queued (earlier in the same buffer) would have been stored and sent too.
    const get = await t.inject({ method: 'GET', url: `/l/${link.code}` });
    expect(get.statusCode).toBe(302);
    expect(get.headers.location).toBe(head.headers.location);
    await t.app.services.links.redirects.flush();
    await waitFor(async () => (mine().length >= 2 ? true : undefined), 10_000, 'link.clicked');

    expect(await storedClicks(t, link.id)).toBe(1);
    expect(await counter(t, link.id)).toBe(1);
    const { rows } = await t.testDb.db.query<{ n: number }>(
      "SELECT count(*) AS n FROM webhook_events WHERE collection_id = $1 AND type = 'link.clicked' AND body LIKE $2",
      [a.id, `%${link.id}%`],
    );
    expect(rows[0].n).toBe(1);
    // Every delivery of this registration has ended: nothing more is on its way.
    await waitFor(
      async () => {
        const { rows } = await t.testDb.db.query<{ n: number }>(
          "SELECT count(*) AS n FROM webhook_deliveries WHERE collection_id = $1 AND webhook_id = $2 AND status = 'pending'",
          [a.id, hook.json().id],
        );
        return rows[0].n === 0 ? true : undefined;
      },
      10_000,
      'deliveries to end',
    );
    expect(mine().map((r) => r.body.type)).toEqual(['link.created', 'link.clicked']);
  });

  it('answers unknown and expired codes as GET does', async () => {
    const unknown = code('none');
    const [get404, head404] = await Promise.all(
      (['GET', 'HEAD'] as const).map((method) => t.inject({ method, url: `/l/${unknown}` })),
    );
    expect([get404.statusCode, head404.statusCode]).toEqual([404, 404]);
    const link = await created(b, { url: 'https://b.example/expiring' });
    const expire = await t.inject({
      method: 'PATCH',
      url: `${links(b)}/${link.id}`,
      headers: b.auth,
      payload: { expiresAt: '2020-01-01T00:00:00Z' },
    });
    expect(expire.statusCode).toBe(200);
    for (const method of ['GET', 'HEAD'] as const) {
      expect((await t.inject({ method, url: `/l/${link.code}` })).statusCode).toBe(410);
    }
  });

  it('under BASE_PATH too', async () => {
    const s = await createTestApp({ BASE_PATH: '/api', CLICK_FLUSH_MS: '5' });
    try {
      const c = await s.createCollection();
      const link = await created(c, { url: 'https://base.example/' }, s);
      for (let i = 0; i < 3; i++) {
        const head = await s.inject({ method: 'HEAD', url: `/api/l/${link.code}` });
        expect(head.statusCode).toBe(302);
        expect(head.headers.location).toBe('https://base.example/');
      }
      // The redirect is mounted once, under the prefix.
      expect((await s.inject({ method: 'HEAD', url: `/l/${link.code}` })).statusCode).toBe(404);
      expect((await s.inject({ method: 'GET', url: `/api/l/${link.code}` })).statusCode).toBe(302);
      await s.app.services.links.redirects.flush();
      expect(await storedClicks(s, link.id)).toBe(1);
      expect(await counter(s, link.id)).toBe(1);
    } finally {
      await s.close();
    }
  });
});
