/**
 * One session that calls every operation the original's published OpenAPI document has and
 * this service serves, with bodies as the original's SDK and guides send them, and checks each
 * success answer against the original's response schema (test/compat/original.ts). The last
 * test checks that the session reached every such operation, so a route added to either side
 * without a call here fails.
 *
 * The calls go over a real socket, as the SDK makes them: under `BASE_PATH=/api/v1`, the admin
 * key as `X-API-Key`, a user token as Bearer. Every other suite's answers are checked against
 * the same schemas too (test/helpers/app.ts); this file is where each operation is sure to be
 * seen at least once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, SUPER_KEY, type TestApp } from '../helpers/app.ts';
import { type CollectionWithUser, collectionWithUser } from '../helpers/fixtures.ts';
import { mismatches, NOT_SERVED, originalOperation, originalOperations } from './original.ts';

const BASE = '/api/v1';
let t: TestApp;
let a: CollectionWithUser;
let origin: string;
const seen = new Set<string>();

beforeAll(async () => {
  t = await createTestApp({ BASE_PATH: BASE });
  a = await collectionWithUser(t, { userId: 'user-1', contactId: 'contact-1' });
  origin = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => t.close());

type Who = 'admin' | 'user' | 'anonymous' | 'platform';

/** Calls the service, expects a success, and checks the answer against the original's schema. */
async function call(method: string, path: string, who: Who, payload?: unknown) {
  const headers: Record<string, string> =
    who === 'admin'
      ? { 'x-api-key': a.key }
      : who === 'user'
        ? a.userAuth
        : who === 'platform'
          ? { 'x-api-key': SUPER_KEY }
          : {};
  if (payload !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${origin}${BASE}${path}`, {
    method,
    headers,
    body: payload === undefined ? undefined : JSON.stringify(payload),
  });
  const text = await res.text();
  expect(res.status, `${method} ${path}: ${text}`).toBeLessThan(300);
  const body = text ? JSON.parse(text) : undefined;
  const found = mismatches(method, path, res.status, body);
  expect.soft(found, `${method} ${path}: ${JSON.stringify(found)}`).toEqual([]);
  const op = originalOperation(method, path);
  if (op) seen.add(`${op.method} ${op.template}`);
  return body;
}

describe("every operation of the original's document, answered in its shapes", () => {
  it('interactions', async () => {
    const admin = `/admin/collection/${a.id}/interactions`;
    const pub = `/public/collection/${a.id}/interactions`;
    await call('POST', `${admin}/`, 'admin', {
      id: 'vote',
      appId: 'polls',
      permissions: { allowPublicSubmit: true, allowPublicSummary: true, allowOwnRead: true },
    });
    await call('GET', `${admin}/?appId=polls`, 'admin');
    await call('GET', `${admin}/vote`, 'admin');
    await call('PATCH', `${admin}/vote`, 'admin', { permissions: { endAt: '2099-01-01T00:00:00Z' } });
    await call('POST', `${pub}/submit`, 'user', { appId: 'polls', interactionId: 'vote', outcome: 'yes' });
    await call('POST', `${admin}/append`, 'admin', {
      appId: 'polls',
      interactionId: 'vote',
      userId: 'user-2',
      outcome: 'no',
      timestamp: '2026-11-21T10:00Z',
    });
    await call('POST', `${admin}/query`, 'admin', { appId: 'polls', interactionId: 'vote', from: '2026-11-21' });
    await call('POST', `${admin}/counts-by-outcome`, 'admin', {
      appId: 'polls',
      interactionId: 'vote',
      from: '2026-11-21',
      to: '2099-11-24',
    });
    await call('POST', `${admin}/aggregate`, 'admin', {
      interactionId: 'vote',
      groupBy: 'outcome',
      aggregate: {},
      field: '*',
      ops: ['count'],
    });
    await call('GET', `${pub}/?appId=polls`, 'user');
    await call('GET', `${pub}/vote`, 'user');
    await call('POST', `${pub}/counts-by-outcome`, 'anonymous', { appId: 'polls', interactionId: 'vote' });
    await call('POST', `${pub}/by-user`, 'user', { appId: 'polls', interactionId: 'vote' });
    await call('POST', `${admin}/`, 'admin', { id: 'old', appId: 'polls' });
    await call('DELETE', `${admin}/old`, 'admin');
  });

  it('journeys and their analytics', async () => {
    const base = `/admin/collection/${a.id}/journeys`;
    const journey = await call('POST', `${base}/`, 'admin', {
      name: 'Onboarding',
      journeyType: 'event_triggered',
      data: { steps: [{ id: 'welcome', config: { interactionId: 'vote', outcome: 'yes' } }] },
    });
    await call('GET', base, 'admin');
    await call('GET', `${base}/${journey.id}`, 'admin');
    await call('PATCH', `${base}/${journey.id}`, 'admin', { name: 'Onboarding v2' });
    const analytics = `/admin/collection/${a.id}/journeys.analytics/${journey.id}`;
    await call('POST', `${analytics}/funnel-report`, 'admin', { stepMappings: [] });
    await call('POST', `${analytics}/stats`, 'admin', { from: '2026-01-01', to: '2099-12-31' });
    await call('POST', `${analytics}/steps/welcome/recipients`, 'admin', {
      status: 'completed',
      interactionId: 'vote',
    });
    const old = await call('POST', base, 'admin', { name: 'Old', journeyType: 'scheduled' });
    await call('DELETE', `${base}/${old.id}`, 'admin');
  });

  it('jobs', async () => {
    const job = await call('POST', `/admin/collection/${a.id}/async/jobs`, 'admin', {
      task: 'interactions.export',
      payload: { from: '2026-11-21' },
    });
    await call('GET', `/admin/collection/${a.id}/async/jobs/${job.id}`, 'admin');
    await call('GET', `/admin/collection/${a.id}/jobs?from=2026-11-01`, 'admin');
    await call('GET', `/admin/collection/${a.id}/jobs/${job.id}`, 'admin');
  });

  it('locations', async () => {
    const global = await call('POST', '/platform/location', 'platform', { name: 'Head office', countryCode: 'GB' });
    const own = await call('POST', `/admin/collection/${a.id}/location`, 'admin', { name: 'Shop', countryCode: 'GB' });
    await call('GET', `/admin/collection/${a.id}/location/search?q=sho`, 'admin');
    await call('GET', `/public/collection/${a.id}/location/${own.id ?? own.locationId}`, 'anonymous');
    await call('GET', `/public/location/${global.id ?? global.locationId}`, 'anonymous');
  });

  it('cases', async () => {
    for (const zone of ['admin', 'public'] as const) {
      const who: Who = zone === 'admin' ? 'admin' : 'user';
      const base = `/${zone}/collection/${a.id}/app/support/cases`;
      const created = await call('POST', base, who, {
        category: 'billing',
        data: { subject: 'Charged twice' },
        ...(zone === 'public' ? { contactId: 'contact-1' } : { contactId: 'contact-1', priority: 2 }),
      });
      await call('GET', base, who);
      await call('GET', `${base}/${created.id}`, who);
      await call(
        'PATCH',
        `${base}/${created.id}`,
        who,
        zone === 'admin' ? { status: 'resolved' } : { data: { more: 1 } },
      );
      if (zone === 'admin') {
        await call('POST', `${base}/aggregate`, who, { groupBy: ['status'], metrics: ['count'] });
        await call('POST', `${base}/summary`, who, { period: { from: '2026-01-01', to: '2099-02-28' } });
        await call('POST', `${base}/${created.id}/history`, who, { entry: { note: 'called back' } });
        await call('GET', `${base}/${created.id}/related`, who);
      }
    }
  });

  it('threads', async () => {
    for (const zone of ['admin', 'public'] as const) {
      const who: Who = zone === 'admin' ? 'admin' : 'user';
      const base = `/${zone}/collection/${a.id}/app/community/threads`;
      const created = await call('POST', base, who, { title: 'Hello', body: { text: 'First post' } });
      await call('GET', base, who);
      await call('GET', `${base}/${created.id}`, who);
      await call(
        'PATCH',
        `${base}/${created.id}`,
        who,
        zone === 'admin' ? { title: 'Hello again' } : { tags: ['hello'] },
      );
      await call('POST', `${base}/${created.id}/reply`, who, { body: { text: 'A reply' } });
      if (zone === 'admin') await call('POST', `${base}/aggregate`, who, { groupBy: ['status'], metrics: ['count'] });
    }
  });

  it('records', async () => {
    const base = `/admin/collection/${a.id}/app/catalog/records`;
    const created = await call('POST', base, 'admin', { recordType: 'note', ref: 'R-1', data: { text: 'hi' } });
    await call('GET', base, 'admin');
    await call('GET', `${base}/${created.id}`, 'admin');
    await call('PATCH', `${base}/${created.id}`, 'admin', { data: { text: 'hello' } });
    await call('POST', `${base}/upsert`, 'admin', { ref: 'R-2', recordType: 'note', data: {} });
    await call('POST', `${base}/bulk-upsert`, 'admin', [{ ref: 'R-3', recordType: 'note', data: {} }]);
    await call('POST', `${base}/bulk-delete`, 'admin', { refs: ['R-3'] });
    await call('POST', `${base}/aggregate`, 'admin', { groupBy: ['recordType'], metrics: ['count'] });
    await call('DELETE', `${base}/${created.id}`, 'admin');
    await call('POST', `${base}/${created.id}/restore`, 'admin');
    const pub = `/public/collection/${a.id}/app/catalog/records`;
    await call('POST', pub, 'user', { recordType: 'note', contactId: 'contact-1', data: { text: 'mine' } });
    await call('GET', pub, 'user');
  });

  it('reached every operation of the original that this service serves', () => {
    const expected = originalOperations().filter((op) => !NOT_SERVED.includes(op));
    expect(expected.filter((op) => !seen.has(op))).toEqual([]);
  });
});
