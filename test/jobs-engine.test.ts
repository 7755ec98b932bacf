/**
 * The engine through its in-process interface: outbox enqueue, priorities, progress while
 * running, heartbeats versus the lock timeout, graceful stop, retention.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../src/config.ts';
import { type EngineLogger, JobEngine, jobsSettings } from '../src/modules/jobs/index.ts';
import { badRequest } from '../src/platform/errors.ts';
import type { TaskContext } from '../src/platform/tasks.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { getJob, sleep, waitFor, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: TestCollection;
const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as EngineLogger;
const engines: JobEngine[] = [];

/** A second engine on the test database with its own tasks (the app's engine does not know them). */
function engineWith(env: Record<string, string> = {}): JobEngine {
  const e = new JobEngine(
    t.testDb.db,
    jobsSettings({ JOBS_POLL_INTERVAL_MS: '100', JOBS_BACKOFF_BASE_MS: '10', ...env }),
    quiet,
  );
  engines.push(e);
  return e;
}

beforeAll(async () => {
  t = await createTestApp({ JOBS_POLL_INTERVAL_MS: '100' });
  a = await t.createCollection();
});
afterAll(async () => {
  for (const e of engines) await e.stop(100);
  await t.close();
});

describe('settings', () => {
  it('heartbeat: a third of the lock timeout by default; JOBS_HEARTBEAT_MS at most half of it', () => {
    expect(jobsSettings({}).heartbeatMs).toBe(20_000);
    expect(jobsSettings({ JOBS_LOCK_TIMEOUT_MS: '3000' }).heartbeatMs).toBe(1000);
    expect(jobsSettings({ JOBS_LOCK_TIMEOUT_MS: '3000', JOBS_HEARTBEAT_MS: '100' }).heartbeatMs).toBe(100);
    for (const beat of ['1501', '0', 'often']) {
      const env = { JOBS_LOCK_TIMEOUT_MS: '3000', JOBS_HEARTBEAT_MS: beat };
      expect(() => jobsSettings(env)).toThrow(ConfigError);
      expect(() => jobsSettings(env)).toThrow('JOBS_HEARTBEAT_MS');
    }
  });
});

describe('enqueue', () => {
  it('inside a transaction: nothing if it rolls back; runs once it commits', async () => {
    const ran: number[] = [];
    const e = engineWith();
    e.registerTask({ name: 'outbox.one', visible: true, handler: async (ctx) => void ran.push(ctx.job.id) });
    await e.start();
    const db = t.testDb.db;
    let rolledBack = 0;
    await db
      .transaction(async (tx) => {
        rolledBack = (await e.enqueue(tx, a.id, { task: 'outbox.one' })).id;
        throw new Error('abort the business change');
      })
      .catch(() => {});
    const committed = await db.transaction(async (tx) => (await e.enqueue(tx, a.id, { task: 'outbox.one' })).id);
    await waitForStatus(t, a, committed, ['completed']);
    expect(ran).toEqual([committed]);
    const rows = await db.query('SELECT id FROM jobs WHERE id = $1', [rolledBack]);
    expect(rows.rows).toEqual([]);
  });

  it('tx.afterCommit callbacks (the wake-up signal) run after a commit, never after a rollback', async () => {
    const calls: string[] = [];
    const db = t.testDb.db;
    await db.transaction(async (tx) => {
      tx.afterCommit(() => calls.push('committed'));
      await tx.query('SELECT 1');
      expect(calls).toEqual([]);
    });
    expect(calls).toEqual(['committed']);
    await db
      .transaction(async (tx) => {
        tx.afterCommit(() => calls.push('rolled back'));
        throw new Error('rollback');
      })
      .catch(() => {});
    expect(calls).toEqual(['committed']);
  });

  it('enqueueMany: one statement, answers in order; a repeated key is one job; a pending key is replaced', async () => {
    const ran: number[] = [];
    const e = engineWith();
    e.registerTask({ name: 'bulk.one', visible: true, handler: async (ctx) => void ran.push(ctx.job.id) });
    const db = t.testDb.db;
    const pending = await e.enqueue(db, a.id, { task: 'bulk.one', key: 'k0', runAt: new Date(Date.now() + 600_000) });
    // Rolled back with the transaction: nothing stays.
    await db
      .transaction(async (tx) => {
        await e.enqueueMany(tx, a.id, [{ task: 'bulk.one' }, { task: 'bulk.one' }]);
        throw new Error('abort');
      })
      .catch(() => {});
    const later = new Date(Date.now() + 60_000);
    const res = await db.transaction((tx) =>
      e.enqueueMany(tx, a.id, [
        { task: 'bulk.one', payload: { n: 1 } },
        { task: 'bulk.one', key: 'k1', payload: { n: 2 } },
        { task: 'bulk.one', key: 'k0', payload: { n: 3 } },
        { task: 'bulk.one', key: 'k1', payload: { n: 4 }, priority: 5 },
        { task: 'bulk.one', runAt: later },
      ]),
    );
    expect(res.map((r) => r.key)).toEqual([null, 'k1', 'k0', 'k1', null]);
    expect(res[1].id).toBe(res[3].id);
    expect(res[2].id).toBe(pending.id);
    expect(new Set(res.map((r) => r.id)).size).toBe(4);
    expect(res[4].runAt.getTime()).toBe(later.getTime());
    const k1 = await getJob(t, a, res[1].id);
    expect(k1).toMatchObject({ payload: { n: 4 }, priority: 5, key: 'k1' });
    expect(await getJob(t, a, pending.id)).toMatchObject({ payload: { n: 3 }, status: 'queued' });
    expect(await e.enqueueMany(db, a.id, [])).toEqual([]);
    await expect(e.enqueueMany(db, a.id, [{ task: 'bulk.one' }, { task: 'nope' }])).rejects.toMatchObject({
      statusCode: 400,
    });
    const { rows } = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM jobs WHERE collection_id = $1 AND task = 'bulk.one'",
      [a.id],
    );
    expect(rows[0].n).toBe(4);
    await e.start();
    for (const id of [res[0].id, res[1].id, res[2].id]) await waitForStatus(t, a, id, ['completed']);
    expect(ran.sort()).toEqual([res[0].id, res[1].id, res[2].id].sort());
    expect((await getJob(t, a, res[4].id)).status).toBe('queued');
  });

  it('an enqueue from another engine wakes a worker through the NOTIFY its INSERT sends (no poll)', async () => {
    // Ten minutes of poll: only the wake-up can start these. The enqueuing engine is not
    // started and alone, so its enqueue carries the NOTIFY in the INSERT; one job is in a
    // named queue (the payload's ":q").
    const ran: number[] = [];
    const worker = engineWith({ JOBS_POLL_INTERVAL_MS: '600000' });
    const enqueuer = engineWith();
    for (const e of [worker, enqueuer])
      e.registerTask({ name: 'notified.one', visible: true, handler: async (ctx) => void ran.push(ctx.job.id) });
    await worker.start();
    await sleep(50);
    const free = await enqueuer.enqueue(t.testDb.db, a.id, { task: 'notified.one' });
    await waitForStatus(t, a, free.id, ['completed'], 5000);
    const queued = await enqueuer.enqueue(t.testDb.db, a.id, { task: 'notified.one', queueName: 'notified' });
    await waitForStatus(t, a, queued.id, ['completed'], 5000);
    expect(ran).toEqual([free.id, queued.id]);
  });

  it('refuses an unknown task naming the known ones; refuses bad task names and duplicates', async () => {
    const e = engineWith();
    e.registerTask({ name: 'known.task', visible: false, handler: async () => null });
    await expect(e.enqueue(t.testDb.db, a.id, { task: 'nope' })).rejects.toMatchObject({
      statusCode: 400,
      details: { knownTasks: ['known.task'] },
    });
    expect(() => e.registerTask({ name: 'known.task', visible: false, handler: async () => null })).toThrow(/already/);
    expect(() => e.registerTask({ name: 'Bad Name', visible: false, handler: async () => null })).toThrow();
  });
});

describe('claiming', () => {
  it('runs higher priority first, then earlier runAt', async () => {
    const order: number[] = [];
    const e = engineWith({ JOBS_CONCURRENCY: '1' });
    e.registerTask({ name: 'prio.task', visible: true, handler: async (ctx) => void order.push(ctx.job.id) });
    const db = t.testDb.db;
    const low = (await e.enqueue(db, a.id, { task: 'prio.task', priority: 0 })).id;
    const high = (await e.enqueue(db, a.id, { task: 'prio.task', priority: 10 })).id;
    const mid = (await e.enqueue(db, a.id, { task: 'prio.task', priority: 5 })).id;
    const midEarlier = (
      await e.enqueue(db, a.id, { task: 'prio.task', priority: 5, runAt: new Date(Date.now() - 60_000) })
    ).id;
    await e.start();
    await waitForStatus(t, a, low, ['completed']);
    expect(order).toEqual([high, midEarlier, mid, low]);
  });

  it('the claim and the completion batch find their rows by index, never by scanning the jobs table', async () => {
    // A scan's cost grows with every job the table keeps: a plan that scans, kept by a worker
    // from when the table was small, slowed each claim as jobs went through (migration 0304).
    // Counted by PostgreSQL for this transaction alone; the table is small here, so a planner
    // free to choose would scan it.
    const repo = await import('../src/modules/jobs/claims.repository.ts');
    const e = engineWith(); // not started: the statements below are the worker's, by hand
    const task = 'scan.free';
    e.registerTask({ name: task, visible: true, handler: async () => null });
    const lockTimeoutMs = 60_000;
    const claim = {
      lane: 'default',
      tasks: [task],
      limit: 4,
      after: '',
      held: { collections: [], counts: [] },
      budget: 4,
      maxVisits: 16,
    };
    const scans = await t.testDb.db
      .transaction(async (tx) => {
        await e.enqueueMany(
          tx,
          a.id,
          Array.from({ length: 30 }, () => ({ task })),
        );
        const seqScans = async () =>
          (
            await tx.query<{ n: number }>(
              "SELECT coalesce(sum(seq_scan), 0)::int AS n FROM pg_stat_xact_user_tables WHERE relid = 'jobs'::regclass",
            )
          ).rows[0].n;
        const before = await seqScans();
        const done = (rows: { collection_id: string; id: number }[]) =>
          rows.map((r) => ({ collectionId: r.collection_id, id: r.id, result: null, progress: null }));
        let claimed = await repo.claimFree(tx, e.workerId, lockTimeoutMs, claim, {
          asyncCommit: repo.claimsCommitAsync(t.testDb.db),
        });
        // More rounds than PostgreSQL's five custom plans before it keeps a generic one.
        for (let round = 0; round < 6; round++) {
          const next = await repo.completeAndClaim(tx, e.workerId, done(claimed), lockTimeoutMs, claim);
          expect(next.completed.size).toBe(claimed.length);
          claimed = next.claimed;
        }
        expect(claimed.length).toBeGreaterThan(0);
        expect((await repo.completeMany(tx, e.workerId, done(claimed))).size).toBe(claimed.length);
        const after = await seqScans();
        throw Object.assign(new Error('roll back'), { scans: after - before });
      })
      .catch((err: { scans?: number }) => {
        if (err.scans === undefined) throw err;
        return err.scans;
      });
    expect(scans).toBe(0);
  });

  it('on a PostgreSQL server a claim commits without waiting for the WAL flush; a completion batch waits', async () => {
    // A claim is not an acknowledged write: lost in a crash of the server, its job is queued
    // again and runs (at least once). A completion is a job's outcome and must survive one. On
    // PGlite the database dies with the worker, so claims wait too: a worker killed mid-job
    // must have its attempt counted (jobs-crash.process.test.ts). See "Claims commit
    // asynchronously" in docs/jobs.md.
    const repo = await import('../src/modules/jobs/claims.repository.ts');
    const e = engineWith(); // not started: the statements below are the worker's, by hand
    const task = 'commit.mode';
    e.registerTask({ name: task, visible: true, handler: async () => null });
    const claim = {
      lane: 'default',
      tasks: [task],
      limit: 2,
      after: '',
      held: { collections: [], counts: [] },
      budget: 2,
      maxVisits: 16,
    };
    const mode = async (q: { query: typeof t.testDb.db.query }) =>
      (await q.query<{ m: string }>('SELECT current_setting($1) AS m', ['synchronous_commit'])).rows[0].m;
    const modes = await t.testDb.db
      .transaction(async (tx) => {
        await e.enqueueMany(tx, a.id, [{ task }, { task }, { task }]);
        const before = await mode(tx);
        const claimed = await repo.claimFree(tx, e.workerId, 60_000, claim, {
          asyncCommit: repo.claimsCommitAsync(t.testDb.db),
        });
        expect(claimed).toHaveLength(2);
        const afterClaim = await mode(tx);
        throw Object.assign(new Error('roll back'), { modes: [before, afterClaim] });
      })
      .catch((err: { modes?: string[] }) => {
        if (err.modes === undefined) throw err;
        return err.modes;
      });
    expect(modes).toEqual(['on', onPostgres ? 'off' : 'on']);
    const batch = await t.testDb.db
      .transaction(async (tx) => {
        const [first] = await e.enqueueMany(tx, a.id, [{ task }, { task }, { task }]);
        await tx.query("UPDATE jobs SET status = 'running', locked_by = $1 WHERE collection_id = $2 AND id = $3", [
          e.workerId,
          a.id,
          first.id,
        ]);
        const done = [{ collectionId: a.id, id: first.id, result: null, progress: null }];
        const next = await repo.completeAndClaim(tx, e.workerId, done, 60_000, claim);
        expect(next.completed.size).toBe(1);
        expect(next.claimed).toHaveLength(2);
        throw Object.assign(new Error('roll back'), { batch: await mode(tx) });
      })
      .catch((err: { batch?: string }) => {
        if (err.batch === undefined) throw err;
        return err.batch;
      });
    expect(batch).toBe('on');
  });

  it('reports progress while running; a running job cannot be cancelled', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const e = engineWith();
    e.registerTask({
      name: 'progress.task',
      visible: true,
      async handler(ctx: TaskContext) {
        await ctx.progress({ done: 1, total: 3, message: 'first of three' });
        await gate;
        await ctx.progress({ done: 3, total: 3 });
        return { ok: true };
      },
    });
    await e.start();
    const { id } = await e.enqueue(t.testDb.db, a.id, { task: 'progress.task' });
    const running = await waitFor(async () => {
      const job = await getJob(t, a, id);
      return job.progress ? job : undefined;
    });
    expect(running).toMatchObject({
      status: 'running',
      attempts: 1,
      progress: { done: 1, total: 3, message: 'first of three' },
    });
    expect(running.lockedAt).not.toBeNull();
    const cancel = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/jobs/${id}/cancel`,
      headers: a.auth,
    });
    expect(cancel.statusCode).toBe(409);
    release();
    const done = await waitForStatus(t, a, id, ['completed']);
    expect(done).toMatchObject({ progress: { done: 3, total: 3 }, result: { ok: true }, lockedAt: null });
  });

  it('a live worker keeps a job longer than the lock timeout (heartbeat): it runs once', async () => {
    let runs = 0;
    const e = engineWith({ JOBS_LOCK_TIMEOUT_MS: '600' });
    const other = engineWith({ JOBS_LOCK_TIMEOUT_MS: '600' });
    for (const engine of [e, other])
      engine.registerTask({
        name: 'slow.task',
        visible: true,
        async handler() {
          runs++;
          await sleep(1500);
          return runs;
        },
      });
    await e.start();
    const { id } = await e.enqueue(t.testDb.db, a.id, { task: 'slow.task' });
    await waitForStatus(t, a, id, ['running']);
    await other.start();
    const job = await waitForStatus(t, a, id, ['completed', 'errored', 'failed']);
    expect(job).toMatchObject({ status: 'completed', attempts: 1, result: 1 });
    expect(runs).toBe(1);
  });

  it('future jobs each run at their time without the poll, however close together they fall due', async () => {
    // Ten minutes of poll: only the engine's timer can start these in time. One timer stands
    // for the earliest job; firing, it must find the next ones (two due within milliseconds of
    // each other, then a later one).
    const e = engineWith({ JOBS_POLL_INTERVAL_MS: '600000' });
    const ranAt = new Map<number, number>();
    e.registerTask({
      name: 'timed.one',
      visible: true,
      handler: async (ctx) => void ranAt.set(ctx.job.id, Date.now()),
    });
    await e.start();
    const base = Date.now();
    const offsets = [300, 302, 900];
    const ids: number[] = [];
    for (const ms of offsets)
      ids.push((await e.enqueue(t.testDb.db, a.id, { task: 'timed.one', runAt: new Date(base + ms) })).id);
    await waitFor(async () => (ranAt.size === ids.length ? true : undefined), 10_000);
    for (const [i, id] of ids.entries()) expect(ranAt.get(id)).toBeGreaterThanOrEqual(base + offsets[i] - 5);
  });

  /**
   * One job at a time, each due `dueInMs(round)` after its enqueue, on a worker whose poll is
   * ten minutes away: each must run without it, and no later job's timer can rescue it.
   */
  async function aloneWithoutPoll(task: string, rounds: number, dueInMs: (round: number) => number) {
    const e = engineWith({ JOBS_POLL_INTERVAL_MS: '600000' });
    const ran = new Set<number>();
    e.registerTask({ name: task, visible: true, handler: async (ctx) => void ran.add(ctx.job.id) });
    await e.start();
    for (let round = 0; round < rounds; round++) {
      const runAt = new Date(Date.now() + dueInMs(round));
      const { id } = await e.enqueue(t.testDb.db, a.id, { task, runAt });
      await waitFor(async () => (ran.has(id) ? true : undefined), 5000, `round ${round}'s job`);
    }
  }

  it('a future job alone runs at its time, even when its timer fires before the database sees it due', async () => {
    // Node's timers may fire a millisecond early, and a claim sent then does not take the job
    // yet; the timer must then be armed again for it. 80 rounds, about 2 s (4 runs of 5
    // failed before the fix).
    await aloneWithoutPoll('alone.one', 80, (round) => 20 + (round % 7));
  });

  it('a job due a few milliseconds after its enqueue runs without the poll', async () => {
    // Due too soon for a timer to seem worth it, too late for a claim sent at once to take it.
    await aloneWithoutPoll('soon.one', 20, (round) => 1 + (round % 5));
  });

  it('a claim this worker holds without knowing it (its answer lost) is not kept alive by its heartbeat', async () => {
    // Lock timeout 600 ms, heartbeat every 200 ms. The engine is busy with a long job the
    // whole time, so it beats. A job marked claimed by it, which it never received, must
    // expire and be run; the old heartbeat extended every claim of its id for ever.
    const e = engineWith({ JOBS_LOCK_TIMEOUT_MS: '600' });
    let finishLong: () => void = () => {};
    const long = new Promise<void>((resolve) => {
      finishLong = resolve;
    });
    const ran: number[] = [];
    e.registerTask({ name: 'busy.long', visible: true, handler: () => long });
    e.registerTask({ name: 'lost.claim', visible: true, handler: async (ctx) => void ran.push(ctx.job.id) });
    await e.start();
    const busy = await e.enqueue(t.testDb.db, a.id, { task: 'busy.long' });
    await waitForStatus(t, a, busy.id, ['running']);
    const lost = await e.enqueue(t.testDb.db, a.id, { task: 'lost.claim', runAt: new Date(Date.now() + 3_600_000) });
    // What a claim statement that committed while its connection died leaves behind.
    await t.testDb.db.query(
      `UPDATE jobs SET status = 'running', attempts = 1, locked_by = $2, locked_at = now(),
         lock_expires_at = now() + interval '600 milliseconds', run_at = now()
       WHERE collection_id = $1 AND id = $3`,
      [a.id, e.workerId, lost.id],
    );
    const done = await waitForStatus(t, a, lost.id, ['completed'], 10_000);
    expect(ran).toEqual([lost.id]);
    expect(done.attempts).toBe(2);
    expect((await getJob(t, a, busy.id)).status).toBe('running');
    finishLong();
    await waitForStatus(t, a, busy.id, ['completed']);
  });

  it('an attempt that throws leaves the job errored until its backoff has passed, then retried', async () => {
    const e = engineWith({ JOBS_BACKOFF_BASE_MS: '600' });
    let calls = 0;
    e.registerTask({
      name: 'retry.once',
      visible: true,
      async handler() {
        calls++;
        if (calls === 1) throw new Error('first attempt fails');
        return { calls };
      },
    });
    await e.start();
    const { id } = await e.enqueue(t.testDb.db, a.id, { task: 'retry.once' });
    const errored = await waitForStatus(t, a, id, ['errored', 'completed']);
    expect(errored).toMatchObject({ status: 'errored', attempts: 1, lastError: 'first attempt fails', lockedAt: null });
    expect(Date.parse(errored.runAt)).toBeGreaterThan(Date.parse(errored.createdAt));
    const done = await waitForStatus(t, a, id, ['completed']);
    expect(done).toMatchObject({ attempts: 2, result: { calls: 2 } });
  });

  it('a result that is not JSON fails the attempt; a task error keeps its message', async () => {
    const e = engineWith();
    e.registerTask({ name: 'bad.result', visible: true, maxAttempts: 1, handler: async () => 10n });
    e.registerTask({
      name: 'bad.input',
      visible: true,
      maxAttempts: 1,
      handler: async () => {
        throw badRequest('row 3 has no id');
      },
    });
    await e.start();
    const x = await e.enqueue(t.testDb.db, a.id, { task: 'bad.result' });
    const y = await e.enqueue(t.testDb.db, a.id, { task: 'bad.input' });
    expect((await waitForStatus(t, a, x.id, ['failed'])).lastError).toMatch(/BigInt/);
    expect((await waitForStatus(t, a, y.id, ['failed'])).lastError).toBe('BAD_REQUEST: row 3 has no id');
  });
});

describe('prefetch', () => {
  /** Runs 40 short jobs; reports the most handlers at once and the most claims held at once. */
  async function shortJobs(env: Record<string, string>, task: string) {
    const e = engineWith({ JOBS_CONCURRENCY: '2', ...env });
    let executing = 0;
    let maxExecuting = 0;
    let maxHeld = 0;
    const ran: number[] = [];
    e.registerTask({
      name: task,
      visible: true,
      async handler(ctx) {
        maxExecuting = Math.max(maxExecuting, ++executing);
        const { rows } = await t.testDb.db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobs WHERE locked_by = $1 AND status = 'running'",
          [e.workerId],
        );
        maxHeld = Math.max(maxHeld, rows[0].n);
        executing--;
        ran.push(ctx.job.id);
        return null;
      },
    });
    const jobs = await e.enqueueMany(
      t.testDb.db,
      a.id,
      Array.from({ length: 40 }, () => ({ task })),
    );
    await e.start();
    await waitFor(async () => (ran.length >= 40 ? true : undefined), 15_000, 'the 40 jobs');
    for (const j of jobs) expect((await waitForStatus(t, a, j.id, ['completed'])).attempts).toBe(1);
    return { maxExecuting, maxHeld, ran };
  }

  it('with short jobs claims ahead of its slots, never runs more handlers than its concurrency, runs each job once', async () => {
    const r = await shortJobs({ JOBS_PREFETCH: '2' }, 'prefetch.short');
    expect(r.maxExecuting).toBeLessThanOrEqual(2);
    expect(r.maxHeld).toBeGreaterThan(2);
    expect(new Set(r.ran).size).toBe(40);
    expect(r.ran).toHaveLength(40);
    // JOBS_PREFETCH=0: claims only for free slots.
    const off = await shortJobs({ JOBS_PREFETCH: '0' }, 'prefetch.off');
    expect(off.maxExecuting).toBeLessThanOrEqual(2);
    expect(off.maxHeld).toBeLessThanOrEqual(2);
  });

  it('hands a prefetched job that waits too long for a slot back to the queue, for another worker, attempt not counted', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let longStarted = false;
    const ranBy: string[] = [];
    const first = engineWith({ JOBS_CONCURRENCY: '1', JOBS_PREFETCH: '1', JOBS_PREFETCH_HOLD_MS: '100' });
    first.registerTask({ name: 'hold.short', visible: true, handler: async () => null });
    first.registerTask({
      name: 'hold.long',
      visible: true,
      async handler() {
        longStarted = true;
        await gate;
        return null;
      },
    });
    first.registerTask({ name: 'hold.other', visible: true, handler: async () => void ranBy.push('first') });
    const second = engineWith({ JOBS_CONCURRENCY: '1' });
    second.registerTask({ name: 'hold.other', visible: true, handler: async () => void ranBy.push('second') });
    const db = t.testDb.db;
    // In this order: the short job's completion claims the long one (its slot) and prefetches the other.
    await enqueueAt(db, 'hold.short', 3);
    const long = await enqueueAt(db, 'hold.long', 2);
    const other = await enqueueAt(db, 'hold.other', 1);
    await first.start();
    await waitFor(async () => (longStarted ? true : undefined), 5000, 'the long job');
    await second.start();
    try {
      const done = await waitForStatus(t, a, other, ['completed'], 5000);
      expect(ranBy).toEqual(['second']);
      expect(done.attempts).toBe(1);
      expect((await getJob(t, a, long)).status).toBe('running');
    } finally {
      release();
    }
    await waitForStatus(t, a, long, ['completed']);

    async function enqueueAt(q: typeof db, task: string, priority: number): Promise<number> {
      return (await first.enqueue(q, a.id, { task, priority })).id;
    }
  });
});

describe('stop', () => {
  it('lets a running job finish within the timeout', async () => {
    const e = engineWith();
    e.registerTask({
      name: 'stop.short',
      visible: true,
      async handler() {
        await sleep(300);
        return 'finished';
      },
    });
    await e.start();
    const { id } = await e.enqueue(t.testDb.db, a.id, { task: 'stop.short' });
    await waitForStatus(t, a, id, ['running']);
    await e.stop(5000);
    expect(await getJob(t, a, id)).toMatchObject({ status: 'completed', result: 'finished' });
  });

  it('releases a job it could not finish: queued again, attempt not counted, signal aborted', async () => {
    let aborted = false;
    const e = engineWith();
    e.registerTask({
      name: 'stop.long',
      visible: true,
      async handler(ctx) {
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        aborted = ctx.signal.aborted;
        throw new Error('interrupted');
      },
    });
    await e.start();
    const { id } = await e.enqueue(t.testDb.db, a.id, { task: 'stop.long' });
    await waitForStatus(t, a, id, ['running']);
    await e.stop(200);
    expect(aborted).toBe(true);
    await sleep(50);
    expect(await getJob(t, a, id)).toMatchObject({ status: 'queued', attempts: 0, lockedAt: null, lastError: null });
    // No longer claiming: stays queued.
    await sleep(300);
    expect((await getJob(t, a, id)).status).toBe('queued');
  });
});

describe('retention', () => {
  it('removes finished jobs after the retention period; reads then answer 404', async () => {
    const e = engineWith({ JOBS_RETENTION_HOURS: '0' });
    e.registerTask({ name: 'retain.me', visible: true, handler: async () => 'x' });
    await e.start();
    const { id } = await e.enqueue(t.testDb.db, a.id, { task: 'retain.me' });
    const pending = await e.enqueue(t.testDb.db, a.id, {
      task: 'retain.me',
      runAt: new Date(Date.now() + 600_000),
    });
    await waitForStatus(t, a, id, ['completed']);
    await sleep(5);
    const { deleted } = await e.sweep();
    expect(deleted).toBeGreaterThanOrEqual(1);
    const res = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs/${id}`, headers: a.auth });
    expect(res.statusCode).toBe(404);
    expect((await getJob(t, a, pending.id)).status).toBe('queued');
  });
});
