/**
 * `http` jobs (issue 27, item 2) against a real receiver on loopback: signed requests (the
 * signature checked here with an HMAC of our own, not the service's code), a receiver that
 * fails twice then answers 200, Retry-After, the SSRF rule on enqueue and on every attempt, the
 * collection's secret and its rotation, and another collection's secret out of reach.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, waitFor, waitForStatus } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    JOBS_BACKOFF_BASE_MS: '20',
    JOBS_POLL_INTERVAL_MS: '200',
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

const secretOf = async (c: TestCollection) => {
  const res = await t.inject({ method: 'GET', url: `/admin/collection/${c.id}/http-tasks/secret`, headers: c.auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { secret: string; previousSecretExpiresAt: string | null };
};

/** The Standard Webhooks signatures of a request, as a receiver computes them from the secret. */
const expected = (secret: string, id: string, timestamp: string, body: string) =>
  `v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${id}.${timestamp}.${body}`)
    .digest('base64')}`;

describe('an http job', () => {
  it('whose receiver fails twice, then answers 200, completes on the third attempt, signed, with the answer as its result', async () => {
    rx.answer('/work', [{ status: 500, body: 'down' }, { status: 502 }, { status: 200, body: '{"done":true}' }]);
    const { secret } = await secretOf(a);
    const job = await enqueue(t, a, {
      task: 'http',
      payload: { url: `${rx.url}/work`, method: 'PUT', headers: { 'X-Order': 'o-1' }, body: { orderId: 'o-1' } },
      maxAttempts: 5,
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 20_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.attempts).toBe(3);
    expect(done.result).toMatchObject({ status: 200, body: '{"done":true}' });
    const got = rx.on('/work');
    expect(got).toHaveLength(3);
    for (const r of got) {
      expect(r.raw.toString()).toBe('{"orderId":"o-1"}');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-order']).toBe('o-1');
      // The same webhook-id on every attempt: the receiver can drop a repeat.
      expect(r.headers['webhook-id']).toBe(`job_${job.id}`);
      const ts = String(r.headers['webhook-timestamp']);
      expect(r.headers['webhook-signature']).toBe(expected(secret, `job_${job.id}`, ts, r.raw.toString()));
    }
  });

  it('waits for the time a Retry-After asks before the next attempt', async () => {
    rx.answer('/later', [{ status: 503, headers: { 'retry-after': '2' } }, { status: 204 }]);
    const job = await enqueue(t, a, { task: 'http', payload: { url: `${rx.url}/later`, method: 'GET' } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 20_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const [first, second] = rx.on('/later');
    expect(second.at - first.at).toBeGreaterThanOrEqual(1900);
    expect(first.raw.length).toBe(0); // a GET sends no body
  });

  it('after too many failures is failed, with what the receiver answered', async () => {
    rx.answer('/broken', { status: 418, body: 'no coffee' });
    const job = await enqueue(t, a, { task: 'http', payload: { url: `${rx.url}/broken` }, maxAttempts: 2 });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 20_000);
    expect(done.status).toBe('failed');
    expect(done.lastError).toBe('HTTP 418: no coffee');
  });

  it('refuses a payload the service could not send, naming the field or the setting', async () => {
    const refused = async (payload: unknown) => {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/async/jobs`,
        headers: a.auth,
        payload: { task: 'http', payload },
      });
      expect(res.statusCode, res.body).toBe(400);
      return res.json() as { message: string; details?: Record<string, unknown> };
    };
    expect((await refused({ url: 'ftp://example.com/x' })).message).toContain('payload.url');
    expect((await refused({ url: 'https://example.com', method: 'TRACE' })).message).toContain('method');
    expect(
      (await refused({ url: 'https://example.com', headers: { 'Webhook-Signature': 'v1,forged' } })).details,
    ).toMatchObject({
      headers: ['Webhook-Signature'],
    });
    expect((await refused({ url: 'https://example.com', timeoutMs: 60_000 })).message).toContain('timeoutMs');
    // The framing headers the client sets, as for interaction effects.
    expect((await refused({ url: 'https://example.com', headers: { Upgrade: 'h2c' } })).details).toMatchObject({
      headers: ['Upgrade'],
    });
  });
});

describe('the signing secret', () => {
  it('is the collection’s own: another collection’s admin cannot read or rotate it, and gets a different one', async () => {
    const mine = await secretOf(a);
    expect(mine.secret).toMatch(/^whsec_/);
    expect((await secretOf(a)).secret).toBe(mine.secret); // made once
    expect((await secretOf(b)).secret).not.toBe(mine.secret);
    for (const [method, url] of [
      ['GET', `/admin/collection/${a.id}/http-tasks/secret`],
      ['POST', `/admin/collection/${a.id}/http-tasks/secret/rotate`],
    ] as const) {
      expect((await t.inject({ method, url, headers: b.auth })).statusCode).toBe(401);
      expect((await t.inject({ method, url })).statusCode).toBe(401);
    }
    expect((await secretOf(a)).secret).toBe(mine.secret);
  });

  it.skipIf(!onPostgres)(
    'made by another transaction while a first use waits on it: the first use gets that one',
    async () => {
      // A collection's first http jobs start together on several connections: each finds no
      // secret and tries to make one, and all but one wait for the one that made it. The waiting
      // statement's snapshot predates that commit, so it once answered nothing (the jobs' attempts
      // failed with a TypeError). Here the other maker is a transaction held open on purpose.
      const fresh = await t.createCollection();
      const made = `whsec_${Buffer.from('held open by the test, 32 bytes!').toString('base64')}`;
      let commit = () => {};
      const held = new Promise<void>((resolve) => {
        commit = resolve;
      });
      let inserted = () => {};
      const rowInserted = new Promise<void>((resolve) => {
        inserted = resolve;
      });
      const other = t.testDb.db.transaction(async (tx) => {
        await tx.query('INSERT INTO http_task_secrets (collection_id, secret) VALUES ($1, $2)', [fresh.id, made]);
        inserted();
        await held;
      });
      // The first use only once the other's row is in: sent sooner, it could make the secret
      // itself first, and the other's insert then failed on the key (CI caught it once).
      await rowInserted;
      const first = t.inject({
        method: 'GET',
        url: `/admin/collection/${fresh.id}/http-tasks/secret`,
        headers: fresh.auth,
      });
      // The first use is blocked on the uncommitted row before the other commits.
      await waitFor(
        async () => {
          const { rows } = await t.testDb.db.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%http_task_secrets%'",
          );
          return rows[0].n > 0 ? true : undefined;
        },
        10_000,
        'the first use waiting on the other transaction',
      );
      commit();
      await other;
      const res = await first;
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().secret).toBe(made);
    },
  );

  it('rotated, signs with the new and the old one during the grace period', async () => {
    const before = await secretOf(b);
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${b.id}/http-tasks/secret/rotate`,
      headers: b.auth,
      payload: { graceSeconds: 600 },
    });
    expect(res.statusCode, res.body).toBe(200);
    const after = res.json() as { secret: string; previousSecretExpiresAt: string };
    expect(after.secret).not.toBe(before.secret);
    expect(Date.parse(after.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(590_000);
    rx.answer('/rotated', { status: 200 });
    const job = await enqueue(t, b, { task: 'http', payload: { url: `${rx.url}/rotated`, body: 'plain text' } });
    expect((await waitForStatus(t, b, job.id, ['completed', 'failed'], 20_000)).status).toBe('completed');
    const [r] = rx.on('/rotated');
    const ts = String(r.headers['webhook-timestamp']);
    expect(String(r.headers['webhook-signature']).split(' ')).toEqual([
      expected(after.secret, `job_${job.id}`, ts, 'plain text'),
      expected(before.secret, `job_${job.id}`, ts, 'plain text'),
    ]);
  });
});

describe('the SSRF rule', () => {
  let strict: TestApp;
  let c: TestCollection;
  beforeAll(async () => {
    strict = await createTestApp({ JOBS_BACKOFF_BASE_MS: '20', JOBS_POLL_INTERVAL_MS: '200' });
    c = await strict.createCollection();
  });
  afterAll(() => strict?.close());

  it('refuses a private address literal at enqueue, naming the setting; a name resolving to one fails its attempts', async () => {
    const res = await strict.inject({
      method: 'POST',
      url: `/admin/collection/${c.id}/async/jobs`,
      headers: c.auth,
      payload: { task: 'http', payload: { url: `${rx.url}/private` } },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().details).toMatchObject({ setting: 'WEBHOOK_ALLOW_PRIVATE_NETWORKS' });
    const job = await enqueue(strict, c, {
      task: 'http',
      payload: { url: `http://localhost:${rx.port}/private` },
      maxAttempts: 1,
    });
    const done = await waitForStatus(strict, c, job.id, ['completed', 'failed'], 20_000);
    expect(done.status).toBe('failed');
    expect(done.lastError).toContain('WEBHOOK_ALLOW_PRIVATE_NETWORKS');
    expect(rx.on('/private')).toHaveLength(0);
  });
});
