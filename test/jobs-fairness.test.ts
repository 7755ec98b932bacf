/**
 * Fair work between collections (jobs engine.ts, "Fairness"): a claim takes turns between
 * collections, a collection holds at most its share of a lane's slots, a priority orders its
 * own collection's jobs only, and internal queue names are refused. Real engine, real
 * database (PGlite, or PostgreSQL with TEST_DATABASE_URL).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { type CollectionWithUser, twoCollections } from './helpers/fixtures.ts';
import { enqueue, sleep, waitFor, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

/** A gate a task's jobs wait on until the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

beforeAll(async () => {
  t = await createTestApp({
    JOBS_CONCURRENCY: '4',
    // Turns are what is measured: one claim for free slots at a time, none ahead of them.
    JOBS_PREFETCH: '0',
    JOBS_POLL_INTERVAL_MS: '200',
    JOBS_STOP_TIMEOUT_MS: '200',
  });
  ({ a, b } = await twoCollections(t));
});
afterAll(async () => {
  await t.close();
});

describe('fair claims', () => {
  it('takes turns: a collection enqueuing after another’s backlog runs within the next claims', async () => {
    const started: string[] = [];
    const g = gate();
    t.app.services.jobs.engine.registerTask({
      name: 'fair.turns',
      visible: true,
      handler: async (ctx) => {
        started.push(ctx.job.collectionId);
        await g.opened;
        return null;
      },
    });
    const backlog = [];
    for (let i = 0; i < 40; i++) backlog.push(await enqueue(t, a, { task: 'fair.turns' }));
    // A's jobs take its share of the slots (3 of 4) and wait on the gate; B's come after all 40.
    await waitFor(async () => (started.length >= 3 ? true : undefined), 10_000, 'A to start');
    const mine = [];
    for (let i = 0; i < 5; i++) mine.push(await enqueue(t, b, { task: 'fair.turns' }));
    // The slot A may not take is B's at once, before any of A's jobs has finished.
    await waitFor(async () => (started.includes(b.id) ? true : undefined), 10_000, 'B to start');
    expect(started.filter((c) => c === a.id).length).toBe(3);
    g.open();
    for (const j of mine) await waitForStatus(t, b, j.id, ['completed']);
    for (const j of backlog) await waitForStatus(t, a, j.id, ['completed']);
    // Every one of B's jobs started before A's backlog was half done: first come, first
    // served would have run all 40 of A's first.
    const lastOfB = started.lastIndexOf(b.id);
    expect(lastOfB, started.join(' ')).toBeLessThan(20);
    expect(started.filter((c) => c === b.id).length).toBe(5);
  });

  it('a priority orders its own collection’s jobs only: A’s jobs at 1000 do not hold B’s back', async () => {
    const g = gate();
    const ran: { collection: string; priority: string }[] = [];
    t.app.services.jobs.engine.registerTask({
      name: 'fair.priority',
      visible: true,
      handler: async (ctx) => {
        const p = (ctx.job.payload as { p: string }).p;
        ran.push({ collection: ctx.job.collectionId, priority: p });
        if (ctx.job.collectionId === a.id) await g.opened;
        return null;
      },
    });
    const high = [];
    for (let i = 0; i < 16; i++)
      high.push(await enqueue(t, a, { task: 'fair.priority', priority: 1000, payload: { p: 'high' } }));
    await waitFor(async () => (ran.length >= 3 ? true : undefined), 10_000, 'A to start');
    const low = await enqueue(t, b, { task: 'fair.priority', priority: 0, payload: { p: 'low' } });
    // B's job runs and completes while every one of A's jobs still waits or runs.
    await waitForStatus(t, b, low.id, ['completed']);
    const aDone = await Promise.all(
      high.map(async (j) => {
        const res = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs/${j.id}`, headers: a.auth });
        return res.json().status as string;
      }),
    );
    expect(aDone.filter((s) => s === 'completed')).toEqual([]);
    // Within A, priority still orders: a job at 0 enqueued now runs after A's jobs at 1000.
    const aLow = await enqueue(t, a, { task: 'fair.priority', priority: 0, payload: { p: 'low' } });
    g.open();
    await waitForStatus(t, a, aLow.id, ['completed']);
    for (const j of high) await waitForStatus(t, a, j.id, ['completed']);
    const ofA = ran.filter((r) => r.collection === a.id).map((r) => r.priority);
    expect(ofA.indexOf('low')).toBe(ofA.length - 1);
  });
});

describe('queue names', () => {
  it('refuses a queue name of the service’s own (with a colon) and names the rule; nothing is queued', async () => {
    t.app.services.jobs.engine.registerTask({ name: 'fair.queued', visible: true, handler: async () => null });
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/async/jobs`,
      headers: a.auth,
      payload: { task: 'fair.queued', queueName: 'journeys.progress:jrn_1' },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().message).toMatch(/queueName/);
    const list = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs?limit=100`, headers: a.auth });
    expect(list.json().items.filter((j: { task: string }) => j.task === 'fair.queued')).toEqual([]);
    // An ordinary name is fine.
    const ok = await enqueue(t, a, { task: 'fair.queued', queueName: 'imports' });
    await waitForStatus(t, a, ok.id, ['completed']);
  });
});

describe('one thread shared (PGlite runs statements on the event loop’s thread)', () => {
  it('another collection’s read is answered while a long import of one collection runs', async () => {
    const items = Array.from({ length: 8000 }, (_, i) => ({ ref: `r${i}`, recordType: 'import', data: { i } }));
    const job = await enqueue(t, a, { task: 'records.import', payload: { appId: 'desk', items } });
    // Started and part done: the import's statements are running back to back now.
    await waitFor(
      async () => {
        const res = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs/${job.id}`, headers: a.auth });
        const j = res.json();
        return j.status === 'running' && (j.progress?.done ?? 0) > 0 ? j : undefined;
      },
      30_000,
      'the import to be under way',
    );
    // Ten reads of another collection, each after a timer: a timer and a socket get their turn
    // between the import's statements.
    for (let i = 0; i < 10; i++) {
      const read = await t.inject({
        method: 'GET',
        url: `/admin/collection/${b.id}/app/desk/records?limit=20`,
        headers: b.auth,
      });
      expect(read.statusCode).toBe(200);
      await sleep(10);
    }
    // Answered in between, not after: before, timers and sockets had a turn about once a
    // second while the import ran (3 reads in a 4.4 s import), so these came after it.
    const res = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs/${job.id}`, headers: a.auth });
    expect(res.json().status).toBe('running');
    await waitForStatus(t, a, job.id, ['completed'], 60_000);
  });
});
