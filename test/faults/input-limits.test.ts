/**
 * Bounded, safe input: names of Object.prototype never select a column or a rule; JSON too
 * deep is a 400; huge arrays and keys are refused cheaply with a small error body; and the
 * OpenAPI document states a limit on every request field.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonTooDeep } from '../../src/platform/json-body.ts';
import { bearer, createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';
import { type Operation, readOperations, type Schema, unboundedFields } from './openapi-schemas.ts';

const ERROR_BODY_MAX_BYTES = 16 * 1024;
/** Every name an object literal answers without owning it, and the prototype accessor itself. */
const PROTOTYPE_NAMES = [...Object.getOwnPropertyNames(Object.prototype), '__proto__'];
const KINDS = ['cases', 'threads', 'records'] as const;

let t: TestApp;
let a: TestCollection;
let user: { authorization: string };
let spec: Schema;
let operations: Operation[];

beforeAll(async () => {
  t = await createTestApp();
  a = await t.createCollection();
  user = bearer(await t.userToken(a.id, 'alice', 'contact-alice'));
  ({ spec, operations } = await readOperations(t));
});
afterAll(() => t.close());

/** Both zones: the admin key on /admin, a user token on /public. */
const zones = () => [
  { zone: 'admin', headers: a.auth },
  { zone: 'public', headers: user },
];
const base = (zone: string, kind: string) => `/${zone}/collection/${a.id}/app/app1/${kind}`;

function expectErrorBody(res: LightMyRequestResponse, where: string) {
  expect(res.statusCode, `${where}: ${res.body.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(res.statusCode, `${where}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
  expect(Buffer.byteLength(res.body), where).toBeLessThan(ERROR_BODY_MAX_BYTES);
  expect(res.json(), where).toMatchObject({
    code: res.statusCode,
    errorCode: expect.any(String),
    message: expect.any(String),
    requestId: expect.any(String),
  });
}

/** A JSON body whose keys may include `__proto__` as an own key (JSON.stringify keeps it). */
const withKey = (name: string, value: unknown) => Object.fromEntries([[name, value]]);

describe('names of Object.prototype select nothing', () => {
  it('is the list the test feeds', () => {
    expect(PROTOTYPE_NAMES).toEqual(expect.arrayContaining(['constructor', 'toString', 'hasOwnProperty', '__proto__']));
  });

  it('sort=<name> on every list, on both zones: 400', async () => {
    for (const { zone, headers } of zones()) {
      for (const kind of KINDS) {
        for (const name of PROTOTYPE_NAMES) {
          for (const sort of [`${name}:asc`, name]) {
            const url = `${base(zone, kind)}?sort=${encodeURIComponent(sort)}`;
            expectErrorBody(await t.inject({ method: 'GET', url, headers }), `GET ${url}`);
          }
        }
      }
    }
  });

  it('a list filter named so in the query string: 400', async () => {
    for (const { zone, headers } of zones()) {
      for (const kind of KINDS) {
        for (const name of PROTOTYPE_NAMES) {
          const url = `${base(zone, kind)}?${encodeURIComponent(name)}=x`;
          expectErrorBody(await t.inject({ method: 'GET', url, headers }), `GET ${url}`);
        }
      }
    }
  });

  it('aggregate groupBy, metrics, filters, top-level filters and timeSeriesField, on both zones: 400', async () => {
    for (const { zone, headers } of zones()) {
      for (const kind of KINDS) {
        const url = `${base(zone, kind)}/aggregate`;
        for (const name of PROTOTYPE_NAMES) {
          const bodies = [
            { groupBy: [name] },
            { metrics: [name] },
            { filters: withKey(name, 'x') },
            { filters: withKey(name, ['x']) },
            withKey(name, 'x'),
            { timeSeriesField: name },
            { timeSeriesField: name, timeSeriesInterval: 'day' },
          ];
          for (const body of bodies) {
            const res = await t.inject({
              method: 'POST',
              url,
              headers: { ...headers, 'content-type': 'application/json' },
              payload: JSON.stringify(body),
            });
            expectErrorBody(res, `POST ${url} ${JSON.stringify(body)}`);
          }
        }
      }
    }
  });

  it('elsewhere: interaction aggregates, journeys, locations, jobs and their task filters: 4xx', async () => {
    const admin = `/admin/collection/${a.id}`;
    const json = { ...a.auth, 'content-type': 'application/json' };
    for (const name of PROTOTYPE_NAMES) {
      const calls: { method: 'GET' | 'POST'; url: string; body?: unknown }[] = [
        { method: 'GET', url: `${admin}/location/search?sort=${encodeURIComponent(name)}` },
        { method: 'GET', url: `${admin}/location?sort=${encodeURIComponent(name)}` },
        {
          method: 'POST',
          url: `${admin}/interactions/aggregate`,
          body: { groupBy: name, aggregate: {}, field: '*', ops: ['count'] },
        },
        {
          method: 'POST',
          url: `${admin}/interactions/aggregate`,
          body: { groupBy: 'outcome', aggregate: {}, field: name, ops: [name] },
        },
        { method: 'POST', url: `${admin}/interactions/counts-by-outcome`, body: { idField: name, dedupeLatest: true } },
        { method: 'POST', url: `${admin}/journeys.analytics/j1/stats`, body: { idField: name } },
        { method: 'POST', url: `${admin}/async/jobs`, body: { task: name } },
        {
          method: 'POST',
          url: `${admin}/async/jobs`,
          body: { task: 'cases.bulkStatus', payload: { appId: 'app1', status: 'closed', filter: withKey(name, 'x') } },
        },
        { method: 'GET', url: `${admin}/jobs?state=${encodeURIComponent(name)}` },
      ];
      for (const c of calls) {
        const res = await t.inject({
          method: c.method,
          url: c.url,
          headers: c.body === undefined ? a.auth : json,
          payload: c.body === undefined ? undefined : JSON.stringify(c.body),
        });
        expectErrorBody(res, `${c.method} ${c.url} ${JSON.stringify(c.body ?? '')}`);
      }
    }
  });

  it('free text that happens to be such a name is stored as text (scopeType, status)', async () => {
    for (const name of PROTOTYPE_NAMES) {
      const res = await t.inject({
        method: 'POST',
        url: base('admin', 'records'),
        headers: a.auth,
        payload: { scopeType: name, status: name, recordType: name },
      });
      expect(res.statusCode, `${name}: ${res.body}`).toBe(200);
      expect(res.json()).toMatchObject({ scopeType: name, status: name, specificity: 0 });
    }
  });

  it('a case status named __proto__ is counted in the summary, not swallowed', async () => {
    for (const status of ['__proto__', 'constructor', 'open']) {
      const res = await t.inject({ method: 'POST', url: base('admin', 'cases'), headers: a.auth, payload: { status } });
      expect(res.statusCode, res.body).toBe(200);
    }
    const res = await t.inject({
      method: 'POST',
      url: `${base('admin', 'cases')}/summary`,
      headers: a.auth,
      payload: {},
    });
    expect(res.statusCode, res.body).toBe(200);
    const byStatus = res.json().byStatus as Record<string, number>;
    expect(Object.hasOwn(byStatus, '__proto__')).toBe(true);
    expect(byStatus.constructor).toBe(1);
    expect(byStatus.open).toBe(1);
  });
});

describe('JSON nesting depth', () => {
  const nested = (depth: number, leaf = '1') => {
    let s = leaf;
    // Objects and arrays alternate; the outermost level is an object.
    for (let i = depth - 1; i >= 0; i--) s = i % 2 ? `[${s}]` : `{"k":${s}}`;
    return s;
  };

  it('counts brackets outside strings only', () => {
    expect(jsonTooDeep(nested(64), 64)).toBe(false);
    expect(jsonTooDeep(nested(65), 64)).toBe(true);
    expect(jsonTooDeep(`{"s":"${'['.repeat(1000)}"}`, 64)).toBe(false);
    expect(jsonTooDeep(`{"s":"\\"${'{'.repeat(100)}\\\\"}`, 64)).toBe(false);
    expect(jsonTooDeep(`{"s\\\\":${nested(70)}}`, 64)).toBe(true);
    expect(jsonTooDeep('{"unterminated', 64)).toBe(false);
  });

  it('10,000 deep is a 400 on record create and update, thread reply, and any other body', async () => {
    const deep = nested(10_000);
    const record = await t.inject({ method: 'POST', url: base('admin', 'records'), headers: a.auth, payload: {} });
    const thread = await t.inject({ method: 'POST', url: base('public', 'threads'), headers: user, payload: {} });
    expect(record.statusCode, record.body).toBe(200);
    expect(thread.statusCode, thread.body).toBe(200);
    const calls: { method: 'POST' | 'PATCH'; url: string; headers: Record<string, string> }[] = [
      { method: 'POST', url: base('admin', 'records'), headers: a.auth },
      { method: 'POST', url: base('public', 'records'), headers: user },
      { method: 'PATCH', url: `${base('admin', 'records')}/${record.json().id}`, headers: a.auth },
      { method: 'POST', url: `${base('public', 'threads')}/${thread.json().id}/reply`, headers: user },
      { method: 'POST', url: `${base('admin', 'threads')}/${thread.json().id}/reply`, headers: a.auth },
      { method: 'POST', url: base('public', 'cases'), headers: user },
      { method: 'POST', url: `/admin/collection/${a.id}/location`, headers: a.auth },
      { method: 'POST', url: '/v1/webhooks', headers: a.auth },
    ];
    for (const c of calls) {
      for (const payload of [`{"data":${deep}}`, deep, `[${deep}]`]) {
        const res = await t.inject({ ...c, headers: { ...c.headers, 'content-type': 'application/json' }, payload });
        expectErrorBody(res, `${c.method} ${c.url}`);
        expect(res.statusCode).toBe(400);
        expect(res.json().message).toContain('deeper than 64');
      }
    }
    // Nothing was written by the refused calls.
    const after = await t.inject({
      method: 'GET',
      url: `${base('admin', 'records')}/${record.json().id}`,
      headers: a.auth,
    });
    expect(after.json().data).toEqual({});
  });

  it('up to the limit is accepted and stored whole', async () => {
    // The body is level 1: `data` nested 63 deep makes 64.
    const data = JSON.parse(nested(63));
    const res = await t.inject({ method: 'POST', url: base('admin', 'records'), headers: a.auth, payload: { data } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual(data);
    const over = await t.inject({
      method: 'POST',
      url: base('admin', 'records'),
      headers: a.auth,
      payload: { data: JSON.parse(nested(64)) },
    });
    expect(over.statusCode).toBe(400);
  });
});

describe('huge input is refused cheaply, with a small error body', () => {
  const events = JSON.stringify({
    url: 'https://receiver.example/hook',
    events: Array.from({ length: 50_000 }, (_, i) => `link.bogus${i}`),
  });
  const tags = (items: unknown[]) => JSON.stringify({ title: 't', tags: items });

  it('0.5 MB of invalid webhook events (admin key): 400 under 16 KB', async () => {
    expect(events.length).toBeGreaterThan(500_000);
    const res = await t.inject({
      method: 'POST',
      url: `${t.config.basePath}/v1/webhooks`,
      headers: { ...a.auth, 'content-type': 'application/json' },
      payload: events,
    });
    expectErrorBody(res, 'POST /v1/webhooks');
    expect(res.json().errorCode).toBe('VALIDATION_FAILED');
    // The same valid event 50,000 times: the item count is what is refused.
    const repeated = JSON.stringify({
      url: 'https://receiver.example/hook',
      events: Array(50_000).fill('link.created'),
    });
    const again = await t.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { ...a.auth, 'content-type': 'application/json' },
      payload: repeated,
    });
    expectErrorBody(again, 'POST /v1/webhooks (repeated)');
  });

  it('a 350 KB tags array from a user token: 400 under 16 KB, whatever the items', async () => {
    const url = base('public', 'threads');
    for (const items of [
      Array.from({ length: 35_000 }, (_, i) => `tag-${i}`),
      Array.from({ length: 60_000 }, (_, i) => i),
      Array.from({ length: 3_500 }, () => 'x'.repeat(100)),
    ]) {
      const payload = tags(items);
      expect(payload.length).toBeGreaterThan(300_000);
      const res = await t.inject({
        method: 'POST',
        url,
        headers: { ...user, 'content-type': 'application/json' },
        payload,
      });
      expectErrorBody(res, `POST ${url}`);
    }
  });

  it('a 900 KB unknown field name, or a thousand unknown query parameters: small error bodies', async () => {
    const key = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/location`,
      headers: { ...a.auth, 'content-type': 'application/json' },
      payload: `{"name":"x","${'k'.repeat(900_000)}":1}`,
    });
    expectErrorBody(key, 'unknown long key');
    const filter = await t.inject({
      method: 'POST',
      url: `${base('admin', 'cases')}/aggregate`,
      headers: { ...a.auth, 'content-type': 'application/json' },
      payload: JSON.stringify({ filters: { [`\u0001${'\u0002'.repeat(500_000)}`]: 'x' } }),
    });
    expectErrorBody(filter, 'aggregate filter with a long control-character name');
    const query = Array.from({ length: 1000 }, (_, i) => `p${i}=${i}`).join('&');
    const many = await t.inject({ method: 'GET', url: `${base('admin', 'cases')}?${query}`, headers: a.auth });
    expectErrorBody(many, 'many unknown query parameters');
    expect(many.json().details.errors.length).toBeLessThanOrEqual(10);
  });

  it('over real HTTP, /healthz answers while such requests are being processed', async () => {
    // Listening on a port of its own; afterAll's app.close() stops it.
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const big = [
      fetch(`${address}/v1/webhooks`, {
        method: 'POST',
        headers: { ...a.auth, 'content-type': 'application/json' },
        body: events,
        signal: AbortSignal.timeout(30_000),
      }),
      fetch(`${address}${base('public', 'threads')}`, {
        method: 'POST',
        headers: { ...user, 'content-type': 'application/json' },
        body: tags(Array.from({ length: 60_000 }, (_, i) => i)),
        signal: AbortSignal.timeout(30_000),
      }),
    ];
    const health = fetch(`${address}/healthz`, { signal: AbortSignal.timeout(30_000) });
    const [h, ...answers] = await Promise.all([health, ...big]);
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: 'ok' });
    for (const res of answers) {
      const text = await res.text();
      expect(res.status, text.slice(0, 200)).toBe(400);
      expect(Buffer.byteLength(text)).toBeLessThan(ERROR_BODY_MAX_BYTES);
    }
  });
});

describe('the OpenAPI document states a limit for every request field', () => {
  it('every string has maxLength, every array maxItems, every open object maxProperties', () => {
    const problems: string[] = [];
    for (const o of operations) {
      const where = `${o.method} ${o.path}`;
      if (o.body) problems.push(...unboundedFields(spec, o.body, `${where} body`));
      for (const p of o.params) problems.push(...unboundedFields(spec, p.schema, `${where} ${p.in} ${p.name}`));
    }
    expect(problems).toEqual([]);
  });
});
