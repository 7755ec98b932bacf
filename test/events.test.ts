/**
 * Events from every module at one receiver (issue 24, "what it must show"): a registration
 * subscribed to `case.*`, `record.*`, `journey.*`, `job.*` and `interaction.recorded` gets each
 * event once per change, signed, with `data` valid against the catalogue's schema as
 * `GET /v1/webhooks/event-types` serves it; a change rolled back sends nothing; another
 * collection, doing the same, hears only its own. Each module's own suite tests its events in
 * depth; this one shows them together, as a team building on the service would subscribe.
 */
import { Compile } from 'typebox/compile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../clients/typescript/src/index.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, sleep, waitFor, waitForStatus } from './helpers/jobs.ts';
import { type Received, type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

const SUBSCRIBED = ['case.*', 'record.*', 'journey.*', 'job.*', 'interaction.recorded'];
let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;
const secrets = new Map<string, string>();

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    JOBS_POLL_INTERVAL_MS: '100',
    JOURNEY_MILESTONES_POLL_MS: '200',
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

async function ok(c: TestCollection, method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
  const res = await t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });
  expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(200);
  return res.json();
}

/** The same story in a collection: every module changes something; one change is rolled back. */
async function story(c: TestCollection, path: string) {
  const hook = await ok(c, 'POST', '/v1/webhooks', { url: `${rx.url}${path}`, events: SUBSCRIBED });
  secrets.set(path, hook.secret);
  const admin = `/admin/collection/${c.id}`;
  for (const id of ['view', 'buy'])
    await ok(c, 'POST', `${admin}/interactions`, { id, appId: 'shop', permissions: { allowPublicSubmit: false } });
  const journey = await ok(c, 'POST', `${admin}/journeys`, {
    name: 'Checkout',
    journeyType: 'event_triggered',
    appId: 'shop',
    data: {
      steps: [
        { id: 'look', config: { interactionId: 'view' } },
        { id: 'pay', config: { interactionId: 'buy', outcome: 'paid' } },
      ],
    },
  });
  await waitFor(async () => {
    const { rows } = await t.testDb.db.query<{ ready: boolean }>(
      'SELECT ready FROM journey_progress_state WHERE collection_id = $1 AND journey_id = $2',
      [c.id, journey.id],
    );
    return rows[0]?.ready ? true : undefined;
  });

  const cases = `${admin}/app/shop/cases`;
  const kase = await ok(c, 'POST', cases, { status: 'open', data: { subject: 'Lid' } });
  await ok(c, 'PATCH', `${cases}/${kase.id}`, { status: 'closed' });
  // Rolled back: the size bound refuses the UPDATE inside its transaction.
  const refused = await t.inject({
    method: 'PATCH',
    url: `${cases}/${kase.id}`,
    headers: c.auth,
    payload: { status: 'reopened', data: { big: 'x'.repeat(1_100_000) } },
  });
  expect(refused.statusCode, refused.body).toBe(413);
  await ok(c, 'DELETE', `${cases}/${kase.id}`);

  const records = `${admin}/app/shop/records`;
  const record = await ok(c, 'POST', records, { recordType: 'note', ref: 'r-1', data: { n: 1 } });
  await ok(c, 'PATCH', `${records}/${record.id}`, { data: { n: 2 } });
  await ok(c, 'DELETE', `${records}/${record.id}`);

  const at = Date.now();
  const append = (interactionId: string, userId: string, outcome: string, dt: number) =>
    ok(c, 'POST', `${admin}/interactions/append`, {
      appId: 'shop',
      interactionId,
      userId,
      outcome,
      journeyId: journey.id,
      timestamp: new Date(at + dt).toISOString(),
    });
  await append('view', 'u1', 'success', 0);
  await append('buy', 'u1', 'paid', 1000);
  await append('view', 'u2', 'success', 2000);

  const job = await enqueue(t, c, { task: 'records.import', payload: { appId: 'shop', items: [{ ref: 'imp-1' }] } });
  await waitForStatus(t, c, job.id, ['completed']);
  return { kase, record, journey, job };
}

/** What each change above sends: one event each. */
const EXPECTED = {
  'case.created': 1,
  'case.updated': 1,
  'case.deleted': 1,
  'record.created': 2, // the POST and the import's item
  'record.updated': 1,
  'record.deleted': 1,
  'interaction.recorded': 3,
  'journey.step.completed': 3, // u1 both steps, u2 the first
  'journey.completed': 1,
  'job.completed': 1,
};
const total = Object.values(EXPECTED).reduce((x, y) => x + y, 0);

const counts = (list: Received[]) => {
  const n: Record<string, number> = {};
  for (const r of list) n[r.body.type] = (n[r.body.type] ?? 0) + 1;
  return n;
};

describe('events from every module', () => {
  it('reach a receiver subscribed by family once per change, signed, valid; a rollback and another collection send nothing', async () => {
    const mine = await story(a, '/a');
    const theirs = await story(b, '/b');
    for (const path of ['/a', '/b'])
      await waitFor(
        async () => (rx.on(path).length >= total ? true : undefined),
        20_000,
        `${total} events at ${path} (so far ${JSON.stringify(counts(rx.on(path)))})`,
      );
    await sleep(500); // a duplicate would have arrived by now

    const catalogue = (await t.inject({ method: 'GET', url: '/v1/webhooks/event-types' })).json() as {
      items: { type: string; schema: object }[];
    };
    const validators = new Map(catalogue.items.map((i) => [i.type, Compile(i.schema as never)]));
    for (const [path, own, other] of [
      ['/a', mine, theirs],
      ['/b', theirs, mine],
    ] as const) {
      const got = rx.on(path);
      expect(counts(got)).toEqual(EXPECTED);
      expect(new Set(got.map((r) => r.body.id)).size).toBe(got.length);
      for (const r of got) {
        const event = await verifyWebhook({
          rawBody: r.raw,
          headers: r.headers as Record<string, string>,
          secret: secrets.get(path) as string,
        });
        expect(event.id).toBe(r.body.id);
        const check = validators.get(r.body.type);
        expect(check?.Check(r.body.data), `${r.body.type}: ${JSON.stringify(r.body.data)}`).toBe(true);
      }
      // The case events are its own case's; the rolled-back status never shows.
      const caseEvents = got.filter((r) => r.body.type.startsWith('case.'));
      expect(new Set(caseEvents.map((r) => r.body.data.case_id))).toEqual(new Set([own.kase.id]));
      expect(caseEvents.map((r) => r.body.data.status)).not.toContain('reopened');
      expect(got.filter((r) => r.body.type === 'job.completed')[0].body.data.job_id).toBe(own.job.id);
      const ids = JSON.stringify(got.map((r) => r.body.data));
      for (const id of [other.kase.id, other.record.id, other.journey.id]) expect(ids).not.toContain(id);
    }
  });
});
