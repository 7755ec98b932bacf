/**
 * The event catalogue (issue 24): `GET /v1/webhooks/event-types` and the OpenAPI `webhooks`
 * section list every type with a schema and an example that fits it; subscriptions take
 * types, family wildcards and `*`, narrowed by `filters`, and refuse what the catalogue does
 * not hold; an event outside the catalogue fails its change in strict mode; link click
 * milestones are sent once per threshold. Real receivers on loopback, both backends.
 */
import { Compile } from 'typebox/compile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteBatch } from '../src/modules/links/click-events.ts';
import { ClickRecorder } from '../src/modules/links/click-recorder.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { sleep, waitFor } from './helpers/jobs.ts';
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

interface EntryShape {
  type: string;
  family: string;
  description: string;
  schema: Record<string, unknown>;
  example: Record<string, unknown>;
  filterable: string[];
  subscribable: boolean;
}

const api = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });

async function register(c: TestCollection, path: string, events: string[], extra: Record<string, unknown> = {}) {
  const res = await api(c, 'POST', '/v1/webhooks', { url: `${rx.url}${path}`, events, ...extra });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string; events: string[]; filters: unknown };
}

async function link(c: TestCollection, extra: Record<string, unknown> = {}) {
  const res = await api(c, 'POST', `/admin/collection/${c.id}/links`, { url: 'https://dest.example/x', ...extra });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: string; code: string; clickMilestones: number[] | null };
}

/** Waits until every delivery of the collection has ended, then a moment for stragglers. */
async function settled(c: TestCollection) {
  await waitFor(
    async () => {
      const { rows } = await t.testDb.db.query<{ n: number }>(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE collection_id = $1 AND status = 'pending'",
        [c.id],
      );
      return rows[0].n === 0 ? true : undefined;
    },
    10_000,
    'deliveries to end',
  );
  await sleep(50);
}

describe('GET /v1/webhooks/event-types', () => {
  it('answers every type, without a credential, each example valid against its schema', async () => {
    const res = await t.inject({ method: 'GET', url: '/v1/webhooks/event-types' });
    expect(res.statusCode, res.body).toBe(200);
    const items = (res.json() as { items: EntryShape[] }).items;
    const types = items.map((i) => i.type);
    for (const type of [
      'link.created',
      'link.updated',
      'link.deleted',
      'link.clicked',
      'link.clicks.milestone',
      'webhook.disabled',
      'webhook.test',
    ])
      expect(types).toContain(type);
    expect(new Set(types).size).toBe(types.length);
    for (const item of items) {
      expect(item.description.length, item.type).toBeGreaterThan(10);
      expect(item.family).toBe(item.type.split('.')[0]);
      const check = Compile(item.schema as never);
      expect(check.Check(item.example), `${item.type}: ${JSON.stringify([...check.Errors(item.example)])}`).toBe(true);
      // The schema is closed: a receiver can rely on it naming every field.
      expect(item.schema.additionalProperties, item.type).toBe(false);
    }
    expect(items.find((i) => i.type === 'webhook.test')?.subscribable).toBe(false);
    expect(items.find((i) => i.type === 'link.clicked')?.filterable).toEqual(['linkIds']);
  });

  it('is the OpenAPI document’s webhooks section, one POST per type with the envelope', async () => {
    const doc = (await t.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      openapi: string;
      webhooks: Record<
        string,
        { post: { requestBody: { content: Record<string, { schema: Record<string, unknown> }> } } }
      >;
    };
    const items = (
      (await t.inject({ method: 'GET', url: '/v1/webhooks/event-types' })).json() as { items: EntryShape[] }
    ).items;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.webhooks).sort()).toEqual(items.map((i) => i.type).sort());
    const clicked = doc.webhooks['link.clicked'].post.requestBody.content['application/json'].schema as {
      required: string[];
      properties: { type: { const: string }; data: unknown };
    };
    expect(clicked.required).toEqual(['type', 'id', 'created_at', 'data']);
    expect(clicked.properties.type.const).toBe('link.clicked');
    expect(clicked.properties.data).toEqual(items.find((i) => i.type === 'link.clicked')?.schema);
  });
});

describe('subscriptions', () => {
  it('refuses a type, family or test type the catalogue does not offer, naming it, and changes nothing', async () => {
    for (const events of [['link.exploded'], ['nothing.*'], ['webhook.test'], ['link.created', 'Link.Created']]) {
      const res = await api(a, 'POST', '/v1/webhooks', { url: `${rx.url}/refused`, events });
      expect(res.statusCode, JSON.stringify(events)).toBe(400);
      expect(res.body).toMatch(/events/);
    }
    const unknown = await api(a, 'POST', '/v1/webhooks', { url: `${rx.url}/refused`, events: ['link.exploded'] });
    expect(unknown.json().message).toContain('"link.exploded"');
    const hook = await register(a, '/patch-refused', ['link.created']);
    const patched = await api(a, 'PATCH', `/v1/webhooks/${hook.id}`, { events: ['link.*', 'case.exploded'] });
    expect(patched.statusCode).toBe(400);
    expect(patched.json().message).toContain('case.exploded');
    expect((await api(a, 'GET', `/v1/webhooks/${hook.id}`)).json().events).toEqual(['link.created']);
    const badFilter = await api(a, 'POST', '/v1/webhooks', {
      url: `${rx.url}/refused`,
      events: ['*'],
      filters: { linkIds: [] },
    });
    expect(badFilter.statusCode).toBe(400);
    const unknownFilter = await api(a, 'POST', '/v1/webhooks', {
      url: `${rx.url}/refused`,
      events: ['*'],
      filters: { caseIds: ['x'] },
    });
    expect(unknownFilter.statusCode).toBe(400);
    // A repeated id is refused whatever it spells, "__proto__" included (it once passed the
    // check and failed the answer's serializer: a 500, found by the fuzz test).
    const before = (await api(a, 'GET', '/v1/webhooks')).json().items.length;
    for (const ids of [
      ['__proto__', '__proto__'],
      ['j1', 'j1'],
    ]) {
      const repeated = await api(a, 'POST', '/v1/webhooks', {
        url: `${rx.url}/refused`,
        events: ['*'],
        filters: { journeyIds: ids },
      });
      expect(repeated.statusCode, repeated.body).toBe(400);
      expect(repeated.json().details.errors, repeated.body).toEqual([
        { path: 'body.filters.journeyIds', message: 'must NOT have duplicate items' },
      ]);
    }
    const proto = await api(a, 'POST', '/v1/webhooks', {
      url: `${rx.url}/proto`,
      events: ['*'],
      filters: { journeyIds: ['__proto__', 'constructor'] },
    });
    expect(proto.statusCode, proto.body).toBe(200);
    expect(proto.json().filters).toEqual({ journeyIds: ['__proto__', 'constructor'] });
    expect((await api(a, 'GET', '/v1/webhooks')).json().items.length).toBe(before + 1);
    await api(a, 'DELETE', `/v1/webhooks/${proto.json().id}`);
    await api(a, 'DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('delivers by type, family and *, narrowed by linkIds; another collection hears nothing', async () => {
    const first = await link(a);
    const second = await link(a);
    const hooks = {
      star: await register(a, '/star', ['*']),
      family: await register(a, '/family', ['link.*']),
      deleted: await register(a, '/deleted', ['link.deleted']),
      narrowed: await register(a, '/narrowed', ['link.*'], { filters: { linkIds: [first.id] } }),
      other: await register(b, '/other', ['*']),
    };
    expect(hooks.narrowed.filters).toEqual({ linkIds: [first.id] });
    // B has changes of its own, sent to its registration: proof that it is listening.
    await link(b);
    for (const l of [first, second])
      expect((await api(a, 'PATCH', `/admin/collection/${a.id}/links/${l.id}`, { title: 'changed' })).statusCode).toBe(
        200,
      );
    expect((await api(a, 'DELETE', `/admin/collection/${a.id}/links/${second.id}`)).statusCode).toBe(200);
    await settled(a);
    await settled(b);
    const seen = (path: string) =>
      rx
        .on(path)
        .map(
          (r) =>
            `${r.body.type} ${r.body.data.link_id === first.id ? 'first' : r.body.data.link_id === second.id ? 'second' : 'other'}`,
        )
        .sort();
    expect(seen('/star')).toEqual(['link.deleted second', 'link.updated first', 'link.updated second']);
    expect(seen('/family')).toEqual(seen('/star'));
    expect(seen('/deleted')).toEqual(['link.deleted second']);
    expect(seen('/narrowed')).toEqual(['link.updated first']);
    expect(seen('/other')).toEqual(['link.created other']);

    // null removes the filters: every link event again.
    const cleared = await api(a, 'PATCH', `/v1/webhooks/${hooks.narrowed.id}`, { filters: null });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(cleared.json().filters).toBeNull();
    const third = await link(a);
    await settled(a);
    expect(
      rx
        .on('/narrowed')
        .filter((r) => r.body.data.link_id === third.id)
        .map((r) => r.body.type),
    ).toEqual(['link.created']);
    for (const h of Object.values(hooks)) await api(h === hooks.other ? b : a, 'DELETE', `/v1/webhooks/${h.id}`);
  });
});

describe('a collection with no registration', () => {
  it('costs a change no lookup while nobody subscribes, and its first registration hears the very next change', async () => {
    const c = await t.createCollection();
    const first = await link(c); // found nobody: remembered for a moment (outbox SILENT_MEMORY_MS)
    expect(t.app.services.webhooks.hasNoSubscribers(c.id)).toBe(true);
    const hook = await register(c, '/first-registration', ['link.*']);
    expect(t.app.services.webhooks.hasNoSubscribers(c.id)).toBe(false);
    const second = await link(c);
    await settled(c);
    expect(rx.on('/first-registration').map((r) => r.body.data.link_id)).toEqual([second.id]);
    expect(first.id).not.toBe(second.id);
    await api(c, 'DELETE', `/v1/webhooks/${hook.id}`);
  });
});

describe('link.clicked off the redirect path', () => {
  /** A recorder of its own (another process's, in effect) that flushes only when asked. */
  const ownRecorder = () =>
    new ClickRecorder(
      t.testDb.db,
      { clickFlushMs: 3_600_000, clickBatchSize: 100, clickBufferMax: 1000, geoipDb: undefined },
      { warn: () => undefined, error: () => undefined },
      t.app.services.webhooks,
      (code) => `http://short.test/l/${code}`,
    );
  const rawClick = (
    c: TestCollection,
    l: { id: string; code: string },
    click: { destinationUrl?: string; ip: string; at?: Date },
  ) => ({
    collectionId: c.id,
    linkId: l.id,
    code: l.code,
    destinationUrl: click.destinationUrl ?? 'https://dest.example/x',
    at: click.at ?? new Date(),
    ip: click.ip,
    userAgent: 'test-agent',
    referer: '',
    proxyCountry: '',
    proxyCity: '',
  });

  const noted = async (c: TestCollection) =>
    (
      await t.testDb.db.query<{ n: number }>('SELECT count(*) AS n FROM link_click_events WHERE collection_id = $1', [
        c.id,
      ])
    ).rows[0].n;

  it('notes nothing where nobody subscribes to it; elsewhere notes the batch, and a worker sends each click once', async () => {
    const quiet = await t.createCollection();
    const loud = await t.createCollection();
    await register(quiet, '/not-clicks', ['link.created']);
    await register(loud, '/clicks', ['link.clicked']);
    const [q, l] = [await link(quiet), await link(loud)];
    for (const code of [q.code, l.code])
      await Promise.all(Array.from({ length: 5 }, () => t.inject({ method: 'GET', url: `/l/${code}` })));
    await t.app.services.links.redirects.flush();
    expect(await noted(quiet)).toBe(0);
    await waitFor(async () => (rx.on('/clicks').length >= 5 ? true : undefined), 10_000, 'five clicks');
    await settled(loud);
    expect(rx.on('/clicks').map((r) => r.body.data.link_id)).toEqual(Array(5).fill(l.id));
    expect(new Set(rx.on('/clicks').map((r) => r.body.id)).size).toBe(5);
    expect(await noted(loud)).toBe(0); // published and removed
    expect(rx.on('/not-clicks').filter((r) => r.body.type === 'link.clicked')).toHaveLength(0);
  });

  it('a link changed while its clicks wait: each event names the destination its own click went to', async () => {
    const c = await t.createCollection();
    await register(c, '/moved', ['link.clicked']);
    const l = await link(c);
    // A recorder of its own that flushes only when asked, so that both destinations wait in one buffer.
    const recorder = ownRecorder();
    const click = (destinationUrl: string, ip: string) => recorder.record(rawClick(c, l, { destinationUrl, ip }));
    click('https://dest.example/x', '203.0.113.1');
    click('https://dest.example/x', '203.0.113.2');
    click('https://dest.example/moved', '203.0.113.3');
    click('https://dest.example/x', '203.0.113.4');
    await recorder.flush();
    await waitFor(async () => (rx.on('/moved').length >= 4 ? true : undefined), 10_000, 'four clicks');
    await settled(c);
    const went = rx
      .on('/moved')
      .map((r) => [(r.body.data.click as { ip_address: string }).ip_address, r.body.data.destination_url])
      .sort();
    expect(went).toEqual([
      ['203.0.113.1', 'https://dest.example/x'],
      ['203.0.113.2', 'https://dest.example/x'],
      ['203.0.113.3', 'https://dest.example/moved'],
      ['203.0.113.4', 'https://dest.example/x'],
    ]);
    expect(await noted(c)).toBe(0);
  });

  it('notes a batch as its links and time span; two batches over the same link and instants send each click once', async () => {
    const c = await t.createCollection();
    await register(c, '/same-instant', ['link.clicked']);
    const l = await link(c);
    const at = new Date(Date.now() - 1000);
    const plain = noteBatch(
      [1, 2].map((i) => ({
        raw: rawClick(c, l, { ip: `192.0.2.${i}`, at }),
        stored: {} as Parameters<typeof noteBatch>[0][number]['stored'],
      })),
    );
    expect(plain).toEqual({
      v: 3,
      links: [[l.id, l.code, 'https://dest.example/x']],
      from: at.getTime(),
      to: at.getTime(),
    });
    // Two recorders (two API processes) store clicks of one link at one instant, at once: each
    // note spans the other's clicks too, and only the transaction tells them apart.
    const [one, two] = [ownRecorder(), ownRecorder()];
    for (let i = 0; i < 3; i++) {
      one.record(rawClick(c, l, { ip: `198.51.100.${i}`, at }));
      two.record(rawClick(c, l, { ip: `203.0.113.${i}`, at }));
    }
    await Promise.all([one.flush(), two.flush()]);
    await waitFor(async () => (rx.on('/same-instant').length >= 6 ? true : undefined), 10_000, 'six clicks');
    await settled(c);
    const ips = rx.on('/same-instant').map((r) => (r.body.data.click as { ip_address: string }).ip_address);
    expect(ips.sort()).toEqual([0, 1, 2].flatMap((i) => [`198.51.100.${i}`, `203.0.113.${i}`]).sort());
    expect(rx.on('/same-instant').every((r) => r.body.data.clicked_at === at.toISOString())).toBe(true);
  });

  it('publishes the clicks of a batch noted in the second format (each link and user agent once, 2026-11-27)', async () => {
    const c = await t.createCollection();
    await register(c, '/compact', ['link.clicked']);
    const l = await link(c);
    const t0 = Date.now();
    const note = {
      v: 2,
      links: [[l.id, l.code, 'https://dest.example/x']],
      agents: [['compact-agent', 'mobile']],
      t0,
      clicks: [
        [0, 0, '198.51.100.8', 0, 'https://ref.example/', 'NZ', 'Auckland'],
        [0, 5, '198.51.100.9', 0, '', '', ''],
      ],
    };
    await t.testDb.db.query('INSERT INTO link_click_events (collection_id, clicks) VALUES ($1, $2::json)', [
      c.id,
      JSON.stringify(note),
    ]);
    await t.testDb.db.query('SELECT pg_notify($1, $2)', ['link_click_events', c.id]);
    await waitFor(async () => (rx.on('/compact').length >= 2 ? true : undefined), 10_000, 'the noted clicks');
    await settled(c);
    const sent = rx.on('/compact').map((r) => r.body.data);
    expect(sent.map((d) => d.clicked_at).sort()).toEqual([new Date(t0).toISOString(), new Date(t0 + 5).toISOString()]);
    expect(sent.find((d) => d.clicked_at === new Date(t0).toISOString())).toMatchObject({
      link_id: l.id,
      click: {
        ip_address: '198.51.100.8',
        user_agent: 'compact-agent',
        referer: 'https://ref.example/',
        city: 'Auckland',
        device_type: 'mobile',
      },
    });
  });

  it('publishes the clicks of a batch noted in the first format (a tuple per click, before 2026-11-27)', async () => {
    const c = await t.createCollection();
    await register(c, '/legacy', ['link.clicked']);
    const l = await link(c);
    const at = new Date().toISOString();
    const tuple = [l.id, l.code, 'https://dest.example/x', at, '198.51.100.7', 'old-agent', '', 'NZ', '', 'desktop'];
    await t.testDb.db.query('INSERT INTO link_click_events (collection_id, clicks) VALUES ($1, $2::json)', [
      c.id,
      JSON.stringify([tuple]),
    ]);
    await t.testDb.db.query('SELECT pg_notify($1, $2)', ['link_click_events', c.id]);
    await waitFor(async () => (rx.on('/legacy').length >= 1 ? true : undefined), 10_000, 'the noted click');
    await settled(c);
    expect(rx.on('/legacy')).toHaveLength(1);
    expect(rx.on('/legacy')[0].body.data).toMatchObject({
      link_id: l.id,
      destination_url: 'https://dest.example/x',
      clicked_at: at,
      click: { ip_address: '198.51.100.7', user_agent: 'old-agent', country: 'NZ', device_type: 'desktop' },
    });
    expect(await noted(c)).toBe(0);
  });
});

describe('a large publish', () => {
  it('writes 2,000 events to ten registrations in one transaction (20,000 deliveries: past 65,535 parameters as VALUES lists)', async () => {
    const c = await t.createCollection();
    const hooks = [];
    for (let i = 0; i < 10; i++) hooks.push(await register(c, `/large-${i}`, ['link.clicked']));
    const events = Array.from({ length: 2000 }, (_, i) => ({
      type: 'link.clicked',
      data: {
        link_id: `lnk_${i}`,
        short_url: 'http://short.test/l/x',
        destination_url: 'https://dest.example/',
        clicked_at: new Date().toISOString(),
        click: { ip_address: null, user_agent: null, referer: null, country: null, city: null, device_type: null },
      },
    }));
    let written: { events: number; deliveries: number } | undefined;
    // Rolled back at the end, so that nothing is sent: what counts is that the statements ran.
    await expect(
      t.testDb.db.transaction(async (tx) => {
        const ids = await t.app.services.webhooks.publish(tx, c.id, events);
        const { rows } = await tx.query<{ n: number }>(
          'SELECT count(*) AS n FROM webhook_deliveries WHERE collection_id = $1',
          [c.id],
        );
        written = { events: ids.length, deliveries: Number(rows[0].n) };
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(written).toEqual({ events: 2000, deliveries: 20_000 });
    for (const h of hooks) await api(c, 'DELETE', `/v1/webhooks/${h.id}`);
  });
});

describe('strict catalogue', () => {
  it('fails the change that publishes an unknown type or data outside the schema, and stores nothing', async () => {
    const hook = await register(a, '/strict', ['*']);
    const publish = (type: string, data: Record<string, unknown>) =>
      t.testDb.db.transaction((tx) => t.app.services.webhooks.publish(tx, a.id, [{ type, data }]));
    await expect(publish('link.exploded', {})).rejects.toThrow(/not in the catalogue: unknown type/);
    await expect(publish('link.clicks.milestone', { link_id: 'lnk_1', milestone: 'ten' })).rejects.toThrow(
      /not in the catalogue/,
    );
    const { rows } = await t.testDb.db.query<{ n: number }>(
      "SELECT count(*) AS n FROM webhook_events WHERE collection_id = $1 AND type IN ('link.exploded', 'link.clicks.milestone')",
      [a.id],
    );
    expect(rows[0].n).toBe(0);
    await api(a, 'DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('outside strict mode, sends the event and logs it once', async () => {
    const lines: string[] = [];
    const loose = await createTestApp(
      { WEBHOOK_EVENTS_STRICT: 'false' },
      { logger: { level: 'error', stream: { write: (l: string) => lines.push(l) } } as never },
    );
    try {
      const c = await loose.createCollection('loose');
      const hook = await loose.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: c.auth,
        payload: { url: 'https://hooks.example.com/in', events: ['*'], active: false },
      });
      expect(hook.statusCode, hook.body).toBe(200);
      const ids = await loose.testDb.db.transaction((tx) =>
        loose.app.services.webhooks.publish(tx, c.id, [
          { type: 'link.exploded', data: {} },
          { type: 'link.exploded', data: {} },
        ]),
      );
      expect(ids).toEqual([]); // the only registration is inactive: nothing to store
      expect(lines.filter((l) => l.includes('does not match the catalogue'))).toHaveLength(1);
    } finally {
      await loose.close();
    }
  });
});

describe('link.clicks.milestone', () => {
  const clicks = async (code: string, n: number) => {
    await Promise.all(
      Array.from({ length: n }, () =>
        t.inject({ method: 'GET', url: `/l/${code}`, headers: { 'user-agent': 'Mozilla/5.0' } }),
      ),
    );
    await t.app.services.links.redirects.flush();
  };

  it('sends each default threshold once, however the clicks fall into batches', async () => {
    const hook = await register(a, '/milestones', ['link.clicks.milestone']);
    const l = await link(a);
    expect(l.clickMilestones).toBeNull();
    for (let i = 0; i < 5; i++) await clicks(l.code, 5); // 25 clicks in several batches
    await clicks(l.code, 80); // 105
    await settled(a);
    const got = rx.on('/milestones').filter((r) => r.body.data.link_id === l.id);
    expect(got.map((r) => r.body.data.milestone)).toEqual([10, 100]);
    for (const r of got) expect(r.body.data.clicks as number).toBeGreaterThanOrEqual(r.body.data.milestone as number);
    await api(a, 'DELETE', `/v1/webhooks/${hook.id}`);
  });

  it('follows a link’s own list, kept in order; null goes back to the default; bad lists are refused', async () => {
    const hook = await register(a, '/own', ['link.clicks.milestone'], { filters: { linkIds: ['placeholder'] } });
    const l = await link(a, { clickMilestones: [3, 2] });
    expect(l.clickMilestones).toEqual([2, 3]);
    await api(a, 'PATCH', `/v1/webhooks/${hook.id}`, { filters: { linkIds: [l.id] } });
    await clicks(l.code, 1);
    await clicks(l.code, 1);
    await clicks(l.code, 1);
    await clicks(l.code, 8); // 11: past 10, which is not in its own list
    await settled(a);
    expect(rx.on('/own').map((r) => r.body.data.milestone)).toEqual([2, 3]);
    for (const bad of [[0], [1.5], ['10'], Array.from({ length: 21 }, (_, i) => i + 1), [5, 5]]) {
      const res = await api(a, 'PATCH', `/admin/collection/${a.id}/links/${l.id}`, { clickMilestones: bad });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
    }
    const reset = await api(a, 'PATCH', `/admin/collection/${a.id}/links/${l.id}`, { clickMilestones: null });
    expect(reset.json().clickMilestones).toBeNull();
    await api(a, 'DELETE', `/v1/webhooks/${hook.id}`);
  });
});
