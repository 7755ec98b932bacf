/**
 * job.completed and job.failed (src/modules/jobs/jobs.events.ts) at a real receiver subscribed
 * to `job.*`: one event per final state of a visible task's job, published with the write that
 * records it; nothing for retried attempts, cancelled jobs, internal tasks' jobs or the webhook
 * deliveries themselves; nothing for another collection's jobs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../clients/typescript/src/webhooks.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, subscribe, twoCollections } from './helpers/fixtures.ts';
import { enqueue, getJob, sleep, waitFor, waitForStatus } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;
let rx: Receiver;
const secrets = new Map<string, string>();

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    JOBS_BACKOFF_BASE_MS: '10',
    JOBS_POLL_INTERVAL_MS: '200',
  });
  // Until buildApp does it (the jobs module is built before the webhooks module).
  t.app.services.jobs.publishEventsTo(t.app.services.webhooks);
  const engine = t.app.services.jobs.engine;
  engine.registerTask({ name: 'test.ev.ok', visible: true, handler: async (ctx) => ({ echo: ctx.job.payload }) });
  engine.registerTask({
    name: 'test.ev.big',
    visible: true,
    handler: async () => ({ text: 'x'.repeat(20_000) }),
  });
  engine.registerTask({
    name: 'test.ev.boom',
    visible: true,
    handler: async (ctx) => {
      throw new Error(`boom on attempt ${ctx.job.attempt}`);
    },
  });
  engine.registerTask({ name: 'test.ev.internal', visible: false, handler: async () => 'hidden' });
  engine.registerTask({
    name: 'test.ev.internalBoom',
    visible: false,
    handler: async () => {
      throw new Error('internal boom');
    },
  });
  ({ a, b } = await twoCollections(t));
  rx = await startReceiver();
  for (const [c, path] of [
    [a, '/a'],
    [b, '/b'],
  ] as const)
    secrets.set(path, await subscribe(t, c, `${rx.url}${path}`, ['job.*']));
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

/** The job events at `path` about job `id`. */
const eventsOf = (path: string, id: number) => rx.on(path).filter((r) => r.body.data.job_id === id);

async function settled(c: TestCollection, id: number) {
  return waitForStatus(t, c, id, ['completed', 'failed', 'cancelled']);
}

describe('job events', () => {
  it('a visible task’s job sends one job.completed with its result, signed, to its collection only', async () => {
    const { id } = await enqueue(t, a, { task: 'test.ev.ok', payload: { n: 1 } });
    const job = await settled(a, id);
    expect(job.status).toBe('completed');
    const [got] = await waitFor(async () => (eventsOf('/a', id).length ? eventsOf('/a', id) : undefined));
    expect(got.body.type).toBe('job.completed');
    expect(got.body.data).toEqual({
      job_id: id,
      task: 'test.ev.ok',
      queue_name: null,
      attempts: 1,
      max_attempts: job.maxAttempts,
      result: { echo: { n: 1 } },
      result_truncated: false,
      completed_at: expect.any(String),
    });
    // Recorded in the completion's transaction: within moments of the job's finishedAt.
    expect(Math.abs(Date.parse(got.body.data.completed_at as string) - Date.parse(job.finishedAt))).toBeLessThan(1000);
    const verified = await verifyWebhook({
      rawBody: got.raw,
      headers: got.headers as Record<string, string>,
      secret: secrets.get('/a') as string,
    });
    expect(verified.type).toBe('job.completed');
    await sleep(300);
    expect(eventsOf('/a', id)).toHaveLength(1);
    expect(eventsOf('/b', id)).toHaveLength(0);
  });

  it('a result over 8 KB is left out of the event', async () => {
    const { id } = await enqueue(t, a, { task: 'test.ev.big' });
    await settled(a, id);
    const [got] = await waitFor(async () => (eventsOf('/a', id).length ? eventsOf('/a', id) : undefined));
    expect(got.body.data).toMatchObject({ result: null, result_truncated: true, task: 'test.ev.big' });
    expect((await getJob(t, a, id)).result.text).toHaveLength(20_000);
  });

  it('job.failed once, after the last attempt; the retried attempts send nothing', async () => {
    const { id } = await enqueue(t, b, { task: 'test.ev.boom', maxAttempts: 3, queueName: 'q1' });
    const job = await settled(b, id);
    expect(job.status).toBe('failed');
    const [got] = await waitFor(async () => (eventsOf('/b', id).length ? eventsOf('/b', id) : undefined));
    expect(got.body).toMatchObject({
      type: 'job.failed',
      data: {
        job_id: id,
        task: 'test.ev.boom',
        queue_name: 'q1',
        attempts: 3,
        max_attempts: 3,
        error: 'boom on attempt 3',
        failed_at: expect.any(String),
      },
    });
    await sleep(300);
    expect(eventsOf('/b', id)).toHaveLength(1);
    expect(eventsOf('/a', id)).toHaveLength(0);
  });

  it('a job whose worker stopped responding on its last attempt sends job.failed from the sweep', async () => {
    const { id } = await enqueue(t, a, { task: 'test.ev.ok', runAt: new Date(Date.now() + 3_600_000).toISOString() });
    // As a worker that died would leave it: running, its last attempt claimed, its lock expired.
    await t.testDb.db.query(
      `UPDATE jobs SET status = 'running', attempts = max_attempts, locked_by = 'w_dead', locked_at = now() - interval '1 hour',
        lock_expires_at = now() - interval '1 minute' WHERE collection_id = $1 AND id = $2`,
      [a.id, id],
    );
    await t.app.services.jobs.engine.sweep();
    // The engine's own reclaim (each poll round) may have taken the job first and not yet
    // committed when this sweep looked (it skips locked rows): either one fails it.
    await waitForStatus(t, a, id, ['failed'], 10_000);
    const [got] = await waitFor(async () => (eventsOf('/a', id).length ? eventsOf('/a', id) : undefined));
    expect(got.body.data).toMatchObject({
      job_id: id,
      error: 'The worker running this job stopped responding (lock timeout)',
    });
  });

  it('nothing for a cancelled job, internal tasks’ jobs, or the deliveries of these events', async () => {
    const before = rx.received.length;
    const engine = t.app.services.jobs.engine;
    const future = await enqueue(t, a, { task: 'test.ev.ok', runAt: new Date(Date.now() + 3_600_000).toISOString() });
    const cancel = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/jobs/${future.id}/cancel`,
      headers: a.auth,
    });
    expect(cancel.statusCode, cancel.body).toBe(200);
    const internal = await engine.enqueue(t.testDb.db, a.id, { task: 'test.ev.internal' });
    const internalBoom = await engine.enqueue(t.testDb.db, a.id, { task: 'test.ev.internalBoom', maxAttempts: 1 });
    const marker = await enqueue(t, a, { task: 'test.ev.ok', payload: { marker: true } });
    const done = async (id: number) => {
      const rows = await t.testDb.db.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [id]);
      return ['completed', 'failed'].includes(rows.rows[0]?.status) ? true : undefined;
    };
    // An internal task's job is deleted by its completion (migration 0504); its failure stays.
    const gone = async (id: number) =>
      (await t.testDb.db.query('SELECT 1 FROM jobs WHERE id = $1', [id])).rows.length === 0 ? true : undefined;
    await waitFor(() => gone(internal.id));
    await waitFor(() => done(internalBoom.id));
    await waitFor(async () => (eventsOf('/a', marker.id).length ? true : undefined));
    // Every delivery job so far has completed (each is an internal task's job): none made an event.
    await waitFor(async () => {
      const { rows } = await t.testDb.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs WHERE task = 'webhooks.deliver' AND status NOT IN ('completed', 'failed')`,
      );
      return rows[0].n === 0 ? true : undefined;
    });
    await sleep(300);
    const since = rx.received.slice(before);
    expect(since.map((r) => [r.body.type, r.body.data.job_id])).toEqual([['job.completed', marker.id]]);
    // The marker's event came through a delivery job (an internal task's), whose completion
    // deleted its row.
    const { rows } = await t.testDb.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE task = 'webhooks.deliver' AND collection_id = $1`,
      [a.id],
    );
    expect(rows[0].n).toBe(0);
  });
});
