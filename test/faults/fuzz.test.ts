/**
 * Property-based fuzz of every operation in /openapi.json: path parameters, query strings and
 * JSON bodies generated from the operation's own schemas (mostly valid, with wrong types,
 * unknown fields, names of Object.prototype, control characters, edge numbers and dates mixed
 * in), sent with a valid credential of the operation's zone. Real ids of seeded objects are
 * used often, so that calls get past the 404s into the services. Any 5xx fails the test and
 * prints the request, the answer and what the service logged; every other error must carry
 * the one error body.
 *
 * FUZZ_RUNS (default 10) sets the runs per operation and credential, FUZZ_SEED replays a
 * failure (fast-check prints the seed and path of a counterexample), FUZZ_VERBOSE=1 prints how
 * many calls of each operation ended with each status (how deep the fuzz got).
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, SUPER_KEY, superAuth, type TestApp, type TestCollection } from '../helpers/app.ts';
import { type Operation, readOperations, resolver, type Schema } from './openapi-schemas.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 10);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const PROTOTYPE_NAMES = [...Object.getOwnPropertyNames(Object.prototype), '__proto__'];
/** Strings that mean something to some parser of ours. */
const TRICKY = [
  '',
  ' ',
  '\u0000',
  '%',
  '_',
  "'; DROP TABLE x; --",
  'in:a,b',
  'in:',
  'gte:2024-01-01T00:00:00Z',
  'lte:x',
  'null',
  'notnull',
  '__null__',
  '__notnull__',
  'createdAt:asc',
  'createdAt:sideways',
  'metadata.x',
  '9999-12-31T23:59:59.999Z',
  '0000-01-01T00:00:00Z',
  '2024-02-30T00:00:00Z',
  '1e308',
  '-0',
  'NaN',
  '\ud800',
  '💩',
];

// What the service logs at level error (a 5xx's cause), to print with a failing request.
const logged: string[] = [];
const logStream = new Writable({
  write(chunk, _encoding, done) {
    logged.push(String(chunk));
    if (logged.length > 50) logged.shift();
    done();
  },
});

let t: TestApp;
let a: TestCollection;
let userToken: string;
let spec: Schema;
let operations: Operation[];
const ids: Record<string, string[]> = {};

async function seed(method: 'POST', url: string, headers: Record<string, string>, payload: unknown) {
  const res = await t.inject({ method, url, headers, payload: payload as Record<string, unknown> });
  if (res.statusCode >= 300) throw new Error(`seed ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
}

beforeAll(async () => {
  // ROLE=api: no workers, so jobs and webhook deliveries the fuzz causes are only stored.
  t = await createTestApp({ ROLE: 'api' }, { logger: { level: 'error', stream: logStream } });
  a = await t.createCollection();
  userToken = await t.userToken(a.id, 'alice', 'contact-alice');
  ({ spec, operations } = await readOperations(t));

  const admin = `/admin/collection/${a.id}`;
  const user = bearer(userToken);
  const app = (zone: string, kind: string) => `/${zone}/collection/${a.id}/app/app1/${kind}`;
  const objects = async (kind: string) => [
    (await seed('POST', app('admin', kind), a.auth, { visibility: 'public', status: 'open' })).id,
    (await seed('POST', app('public', kind), user, { visibility: 'owner' })).id,
  ];
  ids.caseId = await objects('cases');
  ids.threadId = await objects('threads');
  ids.recordId = await objects('records');
  await seed('POST', `${admin}/interactions`, a.auth, {
    id: 'it1',
    appId: 'app1',
    permissions: { allowPublicSubmit: true, allowOwnRead: true, allowPublicSummary: true, uniquePerUser: true },
  });
  ids.eventId = [
    (await seed('POST', `${admin}/interactions/append`, a.auth, { interactionId: 'it1', userId: 'alice' })).eventId,
  ];
  const journey = await seed('POST', `${admin}/journeys`, a.auth, {
    name: 'J',
    journeyType: 'event_triggered',
    data: { steps: [{ id: 's1', config: { interactionId: 'it1' } }, { id: 's2' }] },
  });
  ids.journeyId = [journey.id];
  ids.stepId = ['s1', 's2'];
  const link = await seed('POST', `${admin}/links`, a.auth, { url: 'https://example.com/x', tags: ['t'] });
  ids.linkId = [link.id];
  ids.code = [link.code];
  const own = await seed('POST', `${admin}/location`, a.auth, { name: 'Own place' });
  const global = await seed('POST', '/platform/location', superAuth, { name: 'Global place' });
  ids.locationId = [own.locationId, global.locationId];
  const webhook = await seed('POST', '/v1/webhooks', a.auth, {
    url: 'https://receiver.example/hook',
    events: ['link.created'],
  });
  ids.deliveryId = [(await seed('POST', `/v1/webhooks/${webhook.id}/test`, a.auth, {})).id];
  const job = await seed('POST', `${admin}/async/jobs`, a.auth, { task: 'interactions.export', payload: {} });
  ids.jobId = [String(job.id)];
  // A spare key for DELETE api-keys/{id}: the fuzz must not revoke the key it calls with.
  const spare = await seed('POST', `${admin}/api-keys`, superAuth, { name: 'spare' });
  ids['api-keys.id'] = [spare.id];
  ids['interactions.id'] = ['it1'];
  ids['journeys.id'] = [journey.id];
  ids['webhooks.id'] = [webhook.id];
  ids.appId = ['app1'];
}, 120_000);
afterAll(() => t.close());

/** Real ids a path parameter may take, by name (an `id` by the collection it names). */
function realIds(path: string, name: string): string[] {
  if (name === 'collectionId') return [a.id];
  if (name === 'id') {
    for (const family of ['api-keys', 'interactions', 'journeys', 'webhooks']) {
      if (path.includes(`/${family}/`)) return ids[`${family}.id`];
    }
  }
  return ids[name] ?? [];
}

// ------------------------------------------------------------------ schema → arbitrary
/*
 * Two kinds of value per schema. Valid ones stay inside the schema (so that calls reach the
 * services, where the rules and the SQL are), with the strings that mean something to our
 * parsers mixed in where they fit. Hostile ones break it: any JSON in place of a field,
 * unknown keys, strings at and past their limit, numbers at and past their bounds.
 */
const anyJson = fc.jsonValue({ maxDepth: 3 });
/** Strings some parser of ours reads: names of Object.prototype (also as sort fields) and TRICKY. */
const MEANINGFUL = [...PROTOTYPE_NAMES, ...PROTOTYPE_NAMES.map((n) => `${n}:asc`), ...TRICKY];
/** JSON whose keys the parser accepts (jsonValue makes `__proto__` keys now and then). */
const safeJson = anyJson.filter((v) => !JSON.stringify(v).includes('"__proto__"'));
const typesOf = (s: Schema): string[] => (Array.isArray(s.type) ? s.type : s.type ? [s.type as string] : []);

function stringArb(s: Schema, hostile: boolean): fc.Arbitrary<string> {
  const limit = s.maxLength as number | undefined;
  const max = Math.min(limit ?? 40, 40);
  const min = Math.min((s.minLength as number | undefined) ?? 0, max);
  const fits = (x: string) => x.length >= min && x.length <= (limit ?? Number.POSITIVE_INFINITY);
  const options: fc.WeightedArbitrary<string>[] = [];
  const add = (weight: number, arbitrary: fc.Arbitrary<string>) => options.push({ weight, arbitrary });
  if (s['x-instant'] !== undefined) {
    // An instant field takes ISO 8601 dates and date-times in several spellings.
    const date = fc.date({
      min: new Date('1900-01-01T00:00:00Z'),
      max: new Date('2200-01-01T00:00:00Z'),
      noInvalidDate: true,
    });
    add(
      1,
      fc
        .tuple(date, fc.constantFrom(24, 10, 16, 19))
        .map(([d, n]) => (n === 24 ? d.toISOString() : `${d.toISOString().slice(0, n)}${n === 10 ? '' : 'Z'}`)),
    );
  } else if (s.format === 'uri') add(1, fc.webUrl());
  else if (s.format === 'email') add(1, fc.emailAddress());
  else if (typeof s.pattern === 'string') add(1, fc.stringMatching(new RegExp(s.pattern as string)).filter(fits));
  else {
    add(2, fc.string({ minLength: min, maxLength: max }));
    add(1, fc.string({ minLength: min, maxLength: max, unit: 'binary' }));
    // Not the NUL of TRICKY: PostgreSQL refuses it in text (a 400), so valid calls avoid it.
    const meaningful = MEANINGFUL.filter((x) => x !== '\u0000' && fits(x));
    if (meaningful.length) add(3, fc.constantFrom(...meaningful));
  }
  if (!hostile) return fc.oneof(...options);
  add(1, fc.string({ maxLength: 40, unit: 'binary' }));
  add(3, fc.constantFrom(...MEANINGFUL));
  if (limit !== undefined && limit <= 5000) add(1, fc.constantFrom('x'.repeat(limit), 'x'.repeat(limit + 1)));
  return fc.oneof(...options);
}

function numberArb(s: Schema, integer: boolean, hostile: boolean): fc.Arbitrary<number> {
  const min = (s.minimum as number | undefined) ?? -1e6;
  const max = (s.maximum as number | undefined) ?? 1e6;
  const inRange = integer ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  if (!hostile) return fc.oneof(inRange, fc.constantFrom(min, max));
  const edges = [min - 1, max + 1, 0, -1, 0.5, 2 ** 31, -(2 ** 63), Number.MAX_SAFE_INTEGER, 1e308];
  return fc.oneof(inRange, fc.constantFrom(...edges), fc.double({ noNaN: true, noDefaultInfinity: true }));
}

/** Values that the seeded data or the service's rules give a meaning to, by field name. */
const hints = (): Record<string, unknown[]> => ({
  url: ['https://example.com/a', 'http://example.org/b?c=d'],
  interactionId: ['it1'],
  interactionIds: [['it1']],
  appId: ['app1'],
  journeyId: ids.journeyId,
  stepId: ids.stepId,
  task: ['interactions.export', 'records.import', 'cases.bulkStatus'],
  events: [['link.created'], ['link.clicked', 'link.deleted']],
  userId: ['alice'],
  contactId: ['contact-alice'],
  sort: ['createdAt:asc', 'updatedAt:desc', 'status:asc', 'name', 'countryCode'],
  status: ['open', 'closed', 'active', 'in:open,closed'],
  createdAt: ['gte:2024-01-01T00:00:00Z', 'lte:2030-01-01T00:00:00Z,gte:2020-01-01T00:00:00Z'],
  groupBy: [['status'], ['record_type', 'status'], 'outcome', 'metadata.x', 'day'],
  metrics: [['count'], ['avg_close_time', 'p95_close_time_seconds'], ['reply_count']],
  timeSeriesField: ['created_at', 'closedAt', 'last_reply_at', 'starts_at'],
  filters: [{ status: 'open' }, { created_at: { gte: '2024-01-01T00:00:00Z' } }, { priority: 2 }],
  ids: [ids.recordId],
  refs: [['r1', 'r2']],
  ref: ['r1'],
});

/** A value for the schema; when hostile, now and then any JSON at all in its place. */
function arb(spec: Schema, raw: Schema, hostile: boolean, depth = 0): fc.Arbitrary<unknown> {
  const value = shaped(spec, raw, hostile, depth);
  return hostile ? fc.oneof({ weight: 5, arbitrary: value }, { weight: 1, arbitrary: anyJson }) : value;
}

function shaped(spec: Schema, raw: Schema, hostile: boolean, depth: number): fc.Arbitrary<unknown> {
  const s = resolver(spec)(raw);
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const branches = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (branches) return fc.oneof(...branches.map((b) => shaped(spec, b, hostile, depth)));
  const types = typesOf(s);
  if (types.length > 1) return fc.oneof(...types.map((type) => shaped(spec, { ...s, type }, hostile, depth)));
  if (depth > 4) return anyJson;
  switch (types[0]) {
    case 'string':
      return stringArb(s, hostile);
    case 'integer':
      return numberArb(s, true, hostile);
    case 'number':
      return numberArb(s, false, hostile);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const item = s.items ? arb(spec, s.items as Schema, hostile, depth + 1) : anyJson;
      const maxItems = Math.min((s.maxItems as number | undefined) ?? 4, 4);
      const minItems = Math.min((s.minItems as number | undefined) ?? 0, maxItems);
      return fc.array(item, { minLength: hostile ? 0 : minItems, maxLength: maxItems + (hostile ? 2 : 0) });
    }
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const required = ((s.required ?? []) as string[]).filter((k) => k in props);
      const named = hints();
      const model = Object.fromEntries(
        Object.entries(props).map(([k, p]) => {
          const value = arb(spec, p, hostile, depth + 1);
          const hinted = named[k]?.filter((v) => v !== undefined);
          return [k, hinted?.length ? fc.oneof(value, { weight: 2, arbitrary: fc.constantFrom(...hinted) }) : value];
        }),
      );
      const known = fc.record(model, { requiredKeys: required });
      const open = s.additionalProperties !== false && s.additionalProperties !== undefined;
      const openOnly = Object.keys(props).length === 0;
      if (!hostile && !open && !openOnly) return known;
      // Valid keys avoid `__proto__`, which the JSON parser refuses (see platform/json-body.ts).
      const extraKey = hostile
        ? fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom(...PROTOTYPE_NAMES, ...TRICKY))
        : fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('constructor', 'toString', 'status', 'priority'));
      const extra = fc.dictionary(extraKey, hostile ? anyJson : safeJson, { maxKeys: 3 });
      return fc.oneof(
        known,
        fc.tuple(known, extra).map(([k, e]) => ({ ...e, ...k })),
      );
    }
    default:
      return anyJson;
  }
}

// ------------------------------------------------------------------ requests
interface FuzzRequest {
  method: string;
  url: string;
  body?: string;
}

const credentials = (path: string): { zone?: string; name: string; headers: Record<string, string> }[] => {
  const user = { name: 'user token', headers: bearer(userToken) };
  const admin = { name: 'admin key', headers: a.auth };
  const superKey = { name: 'super key', headers: bearer(SUPER_KEY) };
  if (path.startsWith('/{zone}/'))
    return [
      { zone: 'admin', ...admin },
      { zone: 'public', ...user },
    ];
  if (path.startsWith('/platform/')) return [superKey];
  if (path.startsWith('/admin/')) return [admin, superKey];
  if (path.startsWith('/public/')) return [user];
  if (path.startsWith('/v1/')) return [admin];
  return [{ name: 'none', headers: {} }];
};

/** A path segment, percent-encoded; a lone surrogate cannot be, so it goes as U+FFFD. */
const encodeSegment = (s: string) => encodeURIComponent(s.replace(/[\ud800-\udfff]/gu, '\ufffd'));

function requestArb(o: Operation, zone: string | undefined): fc.Arbitrary<FuzzRequest> {
  const pathParams = o.params.filter((p) => p.in === 'path');
  const queryParams = o.params.filter((p) => p.in === 'query');
  const pathArb = fc.record(
    Object.fromEntries(
      pathParams.map((p) => {
        if (p.name === 'zone') return [p.name, fc.constant(zone as string)];
        const real = realIds(o.path, p.name);
        const generated = arb(spec, p.schema, true).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
        return [
          p.name,
          real.length ? fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...real) }, generated) : generated,
        ];
      }),
    ),
  );
  // Valid calls name one or two query parameters. One-off calls add one hostile parameter to a
  // valid query and body, so that it is the one thing wrong when the service reads it. Hostile
  // calls may break every parameter and the body, plus a stray parameter.
  const validQuery = fc
    .subarray(queryParams, { maxLength: Math.min(2, queryParams.length) })
    .chain((ps) => fc.record(Object.fromEntries(ps.map((p) => [p.name, arb(spec, p.schema, false)]))));
  const oneOff = queryParams.length
    ? fc
        .tuple(validQuery, fc.constantFrom(...queryParams))
        .chain(([q, p]) => shaped(spec, p.schema, true, 0).map((v) => ({ ...q, [p.name]: v })))
    : validQuery;
  const hostileQuery = fc.record(Object.fromEntries(queryParams.map((p) => [p.name, arb(spec, p.schema, true)])), {
    requiredKeys: [],
  });
  const stray = fc.tuple(fc.constantFrom(...PROTOTYPE_NAMES, 'x'), fc.string({ maxLength: 10 }));
  const body = (hostile: boolean) => (o.body ? arb(spec, o.body, hostile) : fc.constant(undefined));
  const call = fc.oneof(
    fc.record({ query: validQuery, stray: fc.constant(null), body: body(false) }),
    fc.record({ query: oneOff, stray: fc.constant(null), body: body(false) }),
    fc.record({ query: hostileQuery, stray: fc.option(stray, { freq: 3 }), body: body(true) }),
  );
  return fc.tuple(pathArb, call).map(([path, { query, stray, body }]) => {
    const url = o.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeSegment(String(path[name])));
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined) continue;
      for (const item of Array.isArray(v) ? v : [v]) {
        qs.append(k, typeof item === 'object' && item !== null ? JSON.stringify(item) : String(item));
      }
    }
    if (stray) qs.append(stray[0], stray[1]);
    const search = qs.toString();
    return {
      method: o.method,
      url: `${t.config.basePath}${url}${search ? `?${search}` : ''}`,
      body: o.body && body !== undefined ? JSON.stringify(body) : undefined,
    };
  });
}

describe('fuzz of every operation in /openapi.json', () => {
  it('never answers 5xx, and every refusal carries the error body', async () => {
    // Deletes last, so that the other operations meet the seeded objects.
    const ordered = [...operations].sort((x, y) => Number(x.method === 'DELETE') - Number(y.method === 'DELETE'));
    let requests = 0;
    const statuses = new Map<string, number>();
    for (const o of ordered) {
      for (const cred of credentials(o.path)) {
        const property = fc.asyncProperty(requestArb(o, cred.zone), async (req) => {
          requests++;
          logged.length = 0;
          const headers: Record<string, string> = { ...cred.headers };
          if (req.body !== undefined) headers['content-type'] = 'application/json';
          const res = await t.inject({ method: req.method as 'GET', url: req.url, headers, payload: req.body });
          const key = `${o.method} ${o.path} ${cred.name} ${res.statusCode}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
          const shown = `${req.method} ${req.url} (${cred.name})\nbody: ${(req.body ?? '').slice(0, 2000)}`;
          if (res.statusCode >= 500) {
            throw new Error(
              `${shown}\n→ ${res.statusCode} ${res.body.slice(0, 500)}\nlogged: ${logged.join('').slice(0, 3000)}`,
            );
          }
          if (res.statusCode >= 400) {
            const body = res.json();
            if (
              typeof body.errorCode !== 'string' ||
              body.code !== res.statusCode ||
              typeof body.requestId !== 'string'
            ) {
              throw new Error(`${shown}\n→ ${res.statusCode} without the error body: ${res.body.slice(0, 500)}`);
            }
          }
        });
        await fc.assert(property, { numRuns: RUNS, seed: SEED, endOnFailure: false });
      }
    }
    if (process.env.FUZZ_VERBOSE) console.log([...statuses].map(([k, n]) => `${k}: ${n}`).join('\n'));
    expect(requests).toBeGreaterThanOrEqual(operations.length * RUNS);
  });
});
