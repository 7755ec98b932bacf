import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

const admin = (c: TestCollection) => `/admin/collection/${c.id}/interactions`;

beforeAll(async () => {
  t = await createTestApp();
  ({ a, b } = await twoCollections(t));
  for (const c of [a, b]) {
    for (const id of ['signup', 'bulk']) {
      const res = await t.inject({ method: 'POST', url: admin(c), headers: c.auth, payload: { id, appId: 'app' } });
      expect(res.statusCode).toBe(200);
    }
  }
  const events = [
    {
      interactionId: 'signup',
      userId: 'u1',
      outcome: 'success',
      timestamp: '2026-06-01T00:00:00.000Z',
      metadata: { note: 'plain' },
      productId: 'p1',
      source: 'mobile',
      campaign: 'spring',
    },
    {
      interactionId: 'signup',
      userId: 'u2',
      outcome: '=HYPERLINK("x")',
      timestamp: '2026-06-02T00:00:00.000Z',
      metadata: { note: 'comma, "quote"\nnewline' },
    },
    { interactionId: 'signup', userId: 'u3', outcome: 'late', timestamp: '2026-07-01T00:00:00.000Z' },
  ];
  for (const payload of events) {
    expect((await t.inject({ method: 'POST', url: `${admin(a)}/append`, headers: a.auth, payload })).statusCode).toBe(
      200,
    );
  }
  await t.inject({
    method: 'POST',
    url: `${admin(b)}/append`,
    headers: b.auth,
    payload: { interactionId: 'signup', userId: 'other', timestamp: '2026-06-01T12:00:00.000Z' },
  });
  // More than one export page (5,000 rows) and more than one 1 MiB chunk, loaded in one statement.
  await t.testDb.db.query(
    `INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, occurred_at, user_id, outcome, metadata)
     SELECT $1, 'bulk-' || g, 'bulk', 'app', timestamptz '2026-08-01' + g * interval '1 second', 'user-' || (g % 100),
       CASE WHEN g % 3 = 0 THEN 'success' ELSE 'fail' END, jsonb_build_object('pad', repeat('x', 200))
     FROM generate_series(1, 6000) g`,
    [a.id],
  );
});
afterAll(() => t.close());

const download = (c: TestCollection, jobId: number, headers: Record<string, string> = c.auth) =>
  t.inject({ method: 'GET', url: `${admin(c)}/exports/${jobId}/download`, headers });

describe('interactions.export task', () => {
  it('exports a window to NDJSON through POST .../async/jobs and streams the file to an admin', async () => {
    const job = await enqueue(t, a, {
      task: 'interactions.export',
      payload: { format: 'ndjson', interactionId: 'signup', from: '2026-06-01T00:00:00Z', to: '2026-07-01T00:00:00Z' },
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.status, JSON.stringify(done)).toBe('completed');
    expect(done.result).toMatchObject({ format: 'ndjson', rows: 2 });
    const res = await download(a, job.id);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/x-ndjson');
    expect(res.headers['content-disposition']).toContain(`interactions-${a.id}-${job.id}.ndjson`);
    const lines = res.body
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      userId: 'u1',
      outcome: 'success',
      timestamp: '2026-06-01T00:00:00.000Z',
      metadata: { note: 'plain' },
      collectionId: a.id,
      productId: 'p1',
      source: 'mobile',
      channel: 'admin',
      campaign: 'spring',
    });
    expect(lines[1]).toMatchObject({ userId: 'u2', metadata: { note: 'comma, "quote"\nnewline' } });
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
  });

  it('exports CSV with a header, quoting, and formula cells neutralised', async () => {
    const job = await enqueue(t, a, {
      task: 'interactions.export',
      payload: { format: 'csv', interactionId: 'signup', to: '2026-07-01T00:00:00Z' },
    });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 30_000);
    expect(done.status).toBe('completed');
    const res = await download(a, job.id);
    expect(res.headers['content-type']).toContain('text/csv');
    const [header, ...rest] = res.body.split('\n');
    expect(header).toBe(
      'eventId,timestamp,interactionId,appId,outcome,userId,contactId,anonId,scope,broadcastId,journeyId,productId,proofId,variantId,batchId,eventType,source,channel,deleted,metadata,extra',
    );
    expect(rest[0]).toContain(
      ',signup,app,success,u1,,,,,,p1,,,,,mobile,admin,false,"{""note"":""plain""}","{""campaign"":""spring""}"',
    );
    // The outcome cell starts with '=' and is prefixed with a quote; the metadata cell keeps its newline quoted.
    expect(res.body).toContain(`,"'=HYPERLINK(""x"")",u2,`);
    expect(res.body).toContain('"{""note"":""comma, \\""quote\\""\\nnewline""}"');
  });

  it('pages through many events and many chunks, reporting progress', async () => {
    const job = await enqueue(t, a, { task: 'interactions.export', payload: { interactionId: 'bulk' } });
    const done = await waitForStatus(t, a, job.id, ['completed', 'failed'], 60_000);
    expect(done.status).toBe('completed');
    expect(done.result.rows).toBe(6000);
    expect(done.progress).toMatchObject({ done: 6000, total: 6000 });
    const res = await download(a, job.id);
    const lines = res.body.trimEnd().split('\n');
    expect(lines).toHaveLength(6000);
    const ids = lines.map((l) => JSON.parse(l).eventId as string);
    expect(new Set(ids).size).toBe(6000);
    expect(ids[0]).toBe('bulk-1');
    expect(ids[5999]).toBe('bulk-6000');
    const chunks = await t.testDb.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM interaction_export_chunks WHERE collection_id = $1 AND job_id = $2',
      [a.id, job.id],
    );
    expect(chunks.rows[0].n).toBeGreaterThan(1);
  });

  it('removes a file with its job when the jobs’ retention removes the job', async () => {
    const job = await enqueue(t, a, { task: 'interactions.export', payload: { interactionId: 'signup' } });
    await waitForStatus(t, a, job.id, ['completed'], 30_000);
    expect((await download(a, job.id)).statusCode).toBe(200);
    const stored = async () =>
      (
        await t.testDb.db.query<{ files: number; chunks: number }>(
          `SELECT (SELECT count(*)::int FROM interaction_exports WHERE collection_id = $1 AND job_id = $2) AS files,
             (SELECT count(*)::int FROM interaction_export_chunks WHERE collection_id = $1 AND job_id = $2) AS chunks`,
          [a.id, job.id],
        )
      ).rows[0];
    expect(await stored()).toEqual({ files: 1, chunks: 1 });
    // Older than the retention (JOBS_RETENTION_HOURS, 7 days by default): the next sweep removes it.
    await t.testDb.db.query(
      `UPDATE jobs SET finished_at = now() - interval '8 days' WHERE collection_id = $1 AND id = $2`,
      [a.id, job.id],
    );
    expect((await t.app.services.jobs.engine.sweep()).deleted).toBeGreaterThanOrEqual(1);
    expect(await stored()).toEqual({ files: 0, chunks: 0 });
    expect((await download(a, job.id)).statusCode).toBe(404);
  });

  it('refuses a bad payload with 400 at enqueue', async () => {
    for (const payload of [
      { format: 'xml' },
      { from: 'yesterday' },
      { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' },
      { extra: true },
      'string',
    ]) {
      const res = await t.inject({
        method: 'POST',
        url: `/admin/collection/${a.id}/async/jobs`,
        headers: a.auth,
        payload: { task: 'interactions.export', payload },
      });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
  });

  it('serves the file only to an admin of its collection', async () => {
    const job = await enqueue(t, a, { task: 'interactions.export', payload: { interactionId: 'signup' } });
    await waitForStatus(t, a, job.id, ['completed'], 30_000);
    for (const headers of [{}, b.auth, a.userAuth]) {
      expect((await download(a, job.id, headers)).statusCode).toBe(401);
    }
    // Another collection asking for the same job id under its own path: not found.
    expect((await download(b, job.id)).statusCode).toBe(404);
    expect((await download(a, 999_999)).statusCode).toBe(404);
    expect(
      (await t.inject({ method: 'GET', url: `${admin(a)}/exports/abc/download`, headers: a.auth })).statusCode,
    ).toBe(400);
  });
});
