/** Links in bulk (issue 28, part B): a bulk create, the CSV export, and the `links.import` job. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importTask } from '../src/modules/links/links.import.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, getJob, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

beforeAll(async () => {
  t = await createTestApp({ JOBS_POLL_INTERVAL_MS: '100', CLICK_FLUSH_MS: '5' });
  ({ a, b } = await twoCollections(t));
  for (const c of [a, b]) {
    const res = await t.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: c.auth,
      payload: { url: 'https://receiver.example/hook', events: ['link.created'] },
    });
    expect(res.statusCode).toBe(200);
  }
});
afterAll(() => t.close());

const base = (c: TestCollection) => `/admin/collection/${c.id}/links`;
const bulk = (links: unknown[], c: TestCollection = a, headers = c.auth) =>
  t.inject({ method: 'POST', url: `${base(c)}/bulk`, headers, payload: { links } });
const total = async (c: TestCollection) =>
  (await t.inject({ method: 'GET', url: `${base(c)}?limit=1`, headers: c.auth })).json().total as number;
async function created(c: TestCollection) {
  const { rows } = await t.testDb.db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM webhook_events WHERE collection_id = $1 AND type = 'link.created'",
    [c.id],
  );
  return rows[0].n;
}

describe('bulk create', () => {
  it('creates 1,000 links in one request, each with its link.created event, answering them in order', async () => {
    const before = await created(a);
    const links = Array.from({ length: 1000 }, (_, i) => ({
      url: `https://example.com/p/${i}`,
      ...(i % 100 === 0 && { code: `bulk-${i}` }),
      tags: ['bulk'],
      ...(i === 1 && { rules: [{ when: { os: 'ios' }, url: 'myapp://p/1' }], passQuery: false }),
    }));
    const res = await bulk(links);
    expect(res.statusCode, res.body).toBe(200);
    const answered = res.json().links;
    expect(answered).toHaveLength(1000);
    expect(answered[0]).toMatchObject({ code: 'bulk-0', destinationUrl: 'https://example.com/p/0', tags: ['bulk'] });
    expect(answered[1]).toMatchObject({ passQuery: false, rules: [{ when: { os: 'ios' }, url: 'myapp://p/1' }] });
    expect(answered[999].destinationUrl).toBe('https://example.com/p/999');
    expect(await created(a)).toBe(before + 1000);
    const go = await t.inject({ method: 'GET', url: '/l/bulk-100' });
    expect(go.headers.location).toBe('https://example.com/p/100');
  });

  it('creates none when one is refused, naming links[i].field', async () => {
    const count = await total(a);
    const events = await created(a);
    const cases: [unknown[], number, string][] = [
      [[{ url: 'https://example.com/ok' }, { url: 'javascript:alert(1)' }], 400, 'links[1].url'],
      [
        [
          { url: 'https://example.com/ok' },
          { url: 'https://example.com/x', rules: [{ when: { os: 'ios' }, url: 'data:,x' }] },
        ],
        400,
        'links[1].rules[0].url',
      ],
      [
        [{ url: 'https://example.com/ok' }, { url: 'https://example.com/x', expiresAt: '2001-01-01' }],
        400,
        'links[1].expiresAt',
      ],
      [
        [
          { url: 'https://example.com/ok', code: 'bulk-dup' },
          { url: 'https://example.com/x', code: 'bulk-dup' },
        ],
        409,
        'links[1].code',
      ],
      [[{ url: 'https://example.com/ok' }, { url: 'https://example.com/x', code: 'bulk-0' }], 409, 'links[1].code'],
    ];
    for (const [links, status, field] of cases) {
      const res = await bulk(links);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json().details.field).toBe(field);
    }
    const invalid = await bulk([{ url: 'https://example.com/ok' }, { url: 'https://example.com/x', colour: 'red' }]);
    expect(invalid.statusCode).toBe(400);
    expect(JSON.stringify(invalid.json().details)).toContain('links.1.colour');
    expect(await total(a)).toBe(count);
    expect(await created(a)).toBe(events);
    expect((await t.inject({ method: 'GET', url: '/l/bulk-dup' })).statusCode).toBe(404);
  });

  it('refuses more than 1,000 links and an empty list', async () => {
    const many = Array.from({ length: 1001 }, (_, i) => ({ url: `https://example.com/${i}` }));
    expect((await bulk(many)).statusCode).toBe(400);
    expect((await bulk([])).statusCode).toBe(400);
  });

  it('creates in the path’s collection only: another collection’s key is refused, and its codes are taken', async () => {
    const res = await bulk([{ url: 'https://example.com/x' }], b, a.auth);
    expect(res.statusCode).toBe(401);
    await bulk([{ url: 'https://b.example/1', code: 'b-only' }], b);
    const taken = await bulk([{ url: 'https://example.com/x', code: 'b-only' }], a);
    expect(taken.statusCode).toBe(409);
    expect((await t.inject({ method: 'GET', url: '/l/b-only' })).headers.location).toBe('https://b.example/1');
  });
});

describe('export', () => {
  it('streams the collection’s links as CSV, its own only, with formulas defused and no password', async () => {
    const res0 = await t.inject({
      method: 'POST',
      url: base(b),
      headers: b.auth,
      payload: {
        url: 'https://b.example/exp?x=1',
        code: 'b-export',
        title: '=HYPERLINK("evil")',
        tags: ['x', 'y'],
        password: 'hunter2',
        variants: [
          { url: 'https://b.example/1', weight: 2 },
          { url: 'https://b.example/2', weight: 1 },
        ],
      },
    });
    expect(res0.statusCode).toBe(200);
    const res = await t.inject({ method: 'GET', url: `${base(b)}/export`, headers: b.auth });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toContain('attachment');
    const lines = res.body.trimEnd().split('\r\n');
    expect(lines[0]).toBe(
      'id,code,shortUrl,url,title,tags,expiresAt,clicks,createdAt,passQuery,expiredUrl,passwordProtected,rules,variants',
    );
    expect(lines).toHaveLength(1 + (await total(b)));
    const row = lines.find((l) => l.includes(',b-export,'));
    expect(row).toContain(`"'=HYPERLINK(""evil"")"`);
    expect(row).toContain(',x|y,');
    expect(row).toContain(',true,');
    expect(row).toContain('"[{""url"":""https://b.example/1"",""weight"":2}');
    expect(res.body).not.toMatch(/hunter2|scrypt/);
    expect(res.body).not.toContain('example.com/p/');
  });

  it('pages through more links than a page holds, each once (links of one bulk share their time)', async () => {
    const res = await t.inject({ method: 'GET', url: `${base(a)}/export?tag=bulk`, headers: a.auth });
    const ids = res.body
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((l) => l.split(',')[0]);
    expect(ids).toHaveLength(1000);
    expect(new Set(ids).size).toBe(1000);
  });

  it('is refused to another collection’s key, and refuses an over-long filter', async () => {
    const res = await t.inject({ method: 'GET', url: `${base(b)}/export`, headers: a.auth });
    expect(res.statusCode).toBe(401);
    const long = await t.inject({ method: 'GET', url: `${base(a)}/export?q=${'x'.repeat(201)}`, headers: a.auth });
    expect(long.statusCode).toBe(400);
    expect((await t.inject({ method: 'GET', url: `${base(a)}/export` })).statusCode).toBe(401);
  });

  it('answers a filter the database refuses (a NUL byte) as a whole answer, never a cut stream (found by the fuzz test)', async () => {
    for (const url of [`${base(a)}/export?tag=%00`, `${base(a)}/export?q=a%00b`]) {
      const res = await t.inject({ method: 'GET', url, headers: a.auth });
      // PostgreSQL refuses NUL in text (a 400 with the error body); PGlite finds no such link.
      if (res.statusCode === 400) expect(res.json()).toMatchObject({ errorCode: expect.any(String) });
      else expect(res.statusCode, res.body).toBe(200);
    }
  });
});

describe('import (links.import job)', () => {
  it('creates the good rows, reports each row, and shows progress', async () => {
    const csv = [
      'url,code,title,tags,passQuery,rules,expiresAt,clicks',
      'https://example.com/i/1,imp-1,First,a|b,false,,,7',
      'ftp://example.com/x,imp-2,,,,,,',
      'https://example.com/i/3,bulk-0,,,,,,',
      'https://example.com/i/4,,"Quoted, with comma",,,"[{""when"":{""os"":""android""},""url"":""intent://x#Intent;end""}]",,',
      'https://example.com/i/5,,,,maybe,,,',
      'https://example.com/i/6,,,,,not json,,',
      'https://example.com/i/7,,,,,,2001-01-01,',
      'https://example.com/i/8,a b,,,,,,',
    ].join('\r\n');
    const job = await enqueue(t, a, { task: 'links.import', payload: { csv } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.progress).toMatchObject({ done: 8, total: 8 });
    expect(done.result).toMatchObject({ total: 8, created: 2, failed: 6 });
    const rows = done.result.rows;
    expect(rows.map((r: { status: string }) => r.status)).toEqual([
      'created',
      'error',
      'error',
      'created',
      'error',
      'error',
      'error',
      'error',
    ]);
    expect(rows[0]).toMatchObject({ row: 1, code: 'imp-1', id: expect.stringMatching(/^lnk_/) });
    expect(rows[1]).toMatchObject({ row: 2, field: 'url' });
    expect(rows[2]).toMatchObject({ row: 3, field: 'code', message: expect.stringContaining('taken') });
    expect(rows[4]).toMatchObject({ row: 5, field: 'passQuery' });
    expect(rows[5]).toMatchObject({ row: 6, field: 'rules' });
    expect(rows[6]).toMatchObject({ row: 7, field: 'expiresAt' });
    expect(rows[7]).toMatchObject({ row: 8, field: 'code', message: expect.stringContaining('pattern') });
    const first = await t.inject({ method: 'GET', url: `${base(a)}/${rows[0].id}`, headers: a.auth });
    expect(first.json()).toMatchObject({ title: 'First', tags: ['a', 'b'], passQuery: false, clicks: 0 });
    expect(first.json().createdBy).toBe(`job:${job.id}`);
    const fourth = await t.inject({ method: 'GET', url: `${base(a)}/${rows[3].id}`, headers: a.auth });
    expect(fourth.json()).toMatchObject({ title: 'Quoted, with comma', rules: [{ when: { os: 'android' } }] });
  });

  it('re-imports an export into another collection (codes are deployment-wide, so rows with codes are reported)', async () => {
    const exported = (await t.inject({ method: 'GET', url: `${base(b)}/export`, headers: b.auth })).body;
    const job = await enqueue(t, a, { task: 'links.import', payload: { csv: exported } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.status).toBe('completed');
    expect(
      done.result.rows.every((r: { status: string; field?: string }) => r.status === 'error' && r.field === 'code'),
    ).toBe(true);
  });

  it('does not create a row twice when a job runs again (a retried attempt)', async () => {
    const task = importTask(t.app.services.links);
    const csv = 'url,title\r\nhttps://example.com/r/1,retry-one\r\nhttps://example.com/r/2,retry-two';
    const run = () =>
      task.handler({
        job: { id: 987_654, collectionId: a.id, task: 'links.import', payload: { csv }, attempt: 1, maxAttempts: 3 },
        db: t.testDb.db,
        signal: new AbortController().signal,
        progress: async () => {},
      }) as Promise<{ created: number; rows: { id: string }[] }>;
    const first = await run();
    const again = await run();
    expect(again.created).toBe(2);
    expect(again.rows.map((r) => r.id)).toEqual(first.rows.map((r) => r.id));
    const listed = await t.inject({ method: 'GET', url: `${base(a)}?q=retry-`, headers: a.auth });
    expect(listed.json().total).toBe(2);
  });

  it('refuses at enqueue a file with unknown columns, without a url column, or not CSV', async () => {
    for (const csv of ['url,colour\r\nhttps://e.x/,red', 'code\r\nabc', 'url\r\n"unterminated']) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/async/jobs`,
        headers: a.auth,
        payload: { task: 'links.import', payload: { csv } },
      });
      expect(res.statusCode, csv).toBe(400);
      expect(res.json().message).toContain('payload.csv');
    }
  });

  it('is a job of its own collection: another collection sees neither the job nor the links', async () => {
    const job = await enqueue(t, a, {
      task: 'links.import',
      payload: { csv: 'url,code\r\nhttps://example.com/mine,a-import-only' },
    });
    await waitForStatus(t, a, job.id, ['completed'], 30_000);
    await expect(getJob(t, b, job.id)).rejects.toThrow(/404/);
    const listed = await t.inject({ method: 'GET', url: `${base(b)}?q=a-import-only`, headers: b.auth });
    expect(listed.json().total).toBe(0);
  });
});
