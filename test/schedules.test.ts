/**
 * Schedules (issue 27, item 4) on the real app and database: every route's happy path, its
 * refusals and the other collection out of reach; the next tick in a time zone and across
 * daylight-saving changes; what a tick does (catch-up after downtime, a schedule that can no
 * longer enqueue, two schedulers at once on one database); and the service's housekeeping on
 * system schedules (retention deleting an old finished job when its tick runs).
 *
 * Ticks are made due by moving `next_run_at` into the past in the database, then a round is
 * played (`runDue`); the app's own scheduler runs beside it, so what is counted is what is in
 * the database, whichever of them handled the tick.
 */
import type { InjectOptions } from 'fastify';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCron, latestTick, nextTick } from '../src/modules/schedules/cron.ts';
import { Scheduler } from '../src/modules/schedules/index.ts';
import { defineTask } from '../src/platform/tasks.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { createTestDb } from './helpers/db.ts';
import { twoCollections } from './helpers/fixtures.ts';
import { getJob, waitFor, waitForStatus } from './helpers/jobs.ts';

let t: TestApp;
let a: TestCollection;
let b: TestCollection;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

beforeAll(async () => {
  t = await createTestApp({ JOBS_POLL_INTERVAL_MS: '200' });
  t.app.services.jobs.engine.registerTask(
    defineTask({
      name: 'sched.echo',
      payload: Type.Object({ n: Type.Integer() }, { additionalProperties: false }),
      visible: true,
      description: 'A test task: answers its payload',
      handler: async (p) => p,
    }),
  );
  ({ a, b } = await twoCollections(t));
});
afterAll(async () => {
  await t?.close();
});

const url = (c: TestCollection, rest = '') => `/admin/collection/${c.id}/schedules${rest}`;
const call = (
  c: TestCollection,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  rest = '',
  payload?: InjectOptions['payload'],
) => t.inject({ method, url: url(c, rest), headers: c.auth, ...(payload !== undefined && { payload }) });

let named = 0;
async function create(c: TestCollection, body: Record<string, unknown> = {}) {
  const res = await call(c, 'POST', '', {
    name: `s${++named}`,
    cron: '0 0 1 1 *',
    task: 'sched.echo',
    payload: { n: 1 },
    ...body,
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

/** Makes a schedule due: its next tick `agoMs` in the past. */
async function makeDue(id: string, agoMs: number) {
  await t.testDb.db.query(
    `UPDATE schedules SET next_run_at = now() - make_interval(secs => $2::float8 / 1000) WHERE id = $1`,
    [id, agoMs],
  );
}

/** The jobs a schedule has enqueued (its ticks' and its runs'), oldest first. */
async function jobsOf(id: string) {
  const { rows } = await t.testDb.db.query<{ id: number; key: string; payload: unknown; priority: number }>(
    `SELECT id, key, payload, priority FROM jobs WHERE key LIKE $1 ORDER BY id`,
    [`schedule:${id}:%`],
  );
  return rows;
}

const round = () => t.app.services.schedules.scheduler.runDue();

describe('the routes', () => {
  it('create, list, get, change, run now and delete a schedule', async () => {
    const before = Date.now();
    const made = await create(a, {
      name: 'nightly',
      cron: '30 2 * * *',
      payload: { n: 7 },
      priority: 5,
      maxAttempts: 2,
    });
    expect(made).toMatchObject({
      name: 'nightly',
      cron: '30 2 * * *',
      timezone: 'UTC',
      task: 'sched.echo',
      payload: { n: 7 },
      priority: 5,
      maxAttempts: 2,
      queueName: null,
      catchUp: 'latest',
      enabled: true,
      lastRunAt: null,
      lastJobId: null,
      lastError: null,
    });
    expect(made.id).toMatch(/^sch_/);
    const next = Date.parse(made.nextRunAt);
    expect(next).toBeGreaterThan(before);
    expect(next - before).toBeLessThanOrEqual(86_400_000);
    expect(new Date(next).toISOString().slice(11)).toBe('02:30:00.000Z');

    const list = await call(a, 'GET');
    expect(list.statusCode).toBe(200);
    expect(list.json().items.map((s: { id: string }) => s.id)).toContain(made.id);
    expect((await call(a, 'GET', `/${made.id}`)).json()).toEqual(made);

    const changed = await call(a, 'PATCH', `/${made.id}`, {
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      queueName: 'nightly',
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      queueName: 'nightly',
      payload: { n: 7 },
    });
    const berlin = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      hour: '2-digit',
      minute: '2-digit',
      weekday: 'short',
    }).format(new Date(changed.json().nextRunAt));
    expect(berlin).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);

    const off = await call(a, 'PATCH', `/${made.id}`, { enabled: false, maxAttempts: null });
    expect(off.json()).toMatchObject({ enabled: false, nextRunAt: null, maxAttempts: null });
    const on = await call(a, 'PATCH', `/${made.id}`, { enabled: true });
    expect(on.json().nextRunAt).toBe(changed.json().nextRunAt);

    const run = await call(a, 'POST', `/${made.id}/run`);
    expect(run.statusCode, run.body).toBe(202);
    expect(run.json()).toMatchObject({ task: 'sched.echo', key: expect.stringMatching(`^schedule:${made.id}:run:`) });
    const job = await waitForStatus(t, a, run.json().id, ['completed']);
    expect(job).toMatchObject({ payload: { n: 7 }, priority: 5, queueName: 'nightly', result: { n: 7 } });
    const after = (await call(a, 'GET', `/${made.id}`)).json();
    expect(after).toMatchObject({ lastJobId: run.json().id, lastError: null, nextRunAt: on.json().nextRunAt });

    const gone = await call(a, 'DELETE', `/${made.id}`);
    expect(gone.statusCode).toBe(200);
    expect(gone.json()).toEqual({ success: true });
    expect((await call(a, 'GET', `/${made.id}`)).statusCode).toBe(404);
    expect((await call(a, 'DELETE', `/${made.id}`)).statusCode).toBe(404);
    // The job it enqueued stays.
    expect((await getJob(t, a, run.json().id)).status).toBe('completed');
  });

  it('refuses what could not run, naming the problem', async () => {
    const refused = async (body: Record<string, unknown>, status = 400) => {
      const res = await call(a, 'POST', '', {
        name: 'bad',
        cron: '0 * * * *',
        task: 'sched.echo',
        payload: { n: 1 },
        ...body,
      });
      expect(res.statusCode, res.body).toBe(status);
      return res.json().message as string;
    };
    expect(await refused({ cron: '0 12 1 1,2' })).toMatch(/five fields/);
    expect(await refused({ cron: '0 0 * * * *' })).toMatch(/five fields/);
    expect(await refused({ cron: 'H * * * *' })).toMatch(/five fields/);
    expect(await refused({ cron: '61 * * * *' })).toMatch(/cron "61 \* \* \* \*"/);
    expect(await refused({ cron: '0 0 31 2 *' })).toMatch(/cron/);
    expect(await refused({ timezone: 'Mars/Olympus' })).toMatch(/timezone "Mars\/Olympus" is not an IANA time zone/);
    const unknown = await call(a, 'POST', '', { name: 'bad', cron: '0 * * * *', task: 'no.such' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().message).toMatch(/Unknown task "no.such"; known tasks: .*sched\.echo/);
    expect(unknown.json().details.knownTasks).toContain('http');
    expect(await refused({ payload: { n: 'one' } })).toMatch(/Invalid payload for sched.echo/);
    expect(await refused({ payload: { n: 1, extra: true } })).toMatch(/Invalid payload for sched.echo/);
    expect(await refused({ queueName: 'a:b' })).toMatch(/queueName "a:b" contains ':'/);
    await refused({ name: 'x'.repeat(101) });
    await refused({ priority: 1001 });
    await refused({ maxAttempts: 0 });
    await refused({ catchUp: 'all' });
    await refused({ unknownField: 1 });
    await refused({ cron: undefined });
    // Nothing was stored by any of them.
    expect((await call(a, 'GET')).json().items.filter((s: { name: string }) => s.name === 'bad')).toEqual([]);
    // A change is checked as a creation is.
    const s = await create(a);
    expect((await call(a, 'PATCH', `/${s.id}`, { payload: { n: 'two' } })).statusCode).toBe(400);
    expect((await call(a, 'PATCH', `/${s.id}`, { timezone: 'Nowhere/Here' })).statusCode).toBe(400);
    expect((await call(a, 'PATCH', `/${s.id}`, { task: 'no.such' })).statusCode).toBe(400);
    expect((await call(a, 'GET', `/${s.id}`)).json()).toEqual(s);
  });

  it('keeps names unique in a collection (409 naming the existing one), not across collections', async () => {
    const first = await create(a, { name: 'unique-name' });
    const again = await call(a, 'POST', '', {
      name: 'unique-name',
      cron: '0 * * * *',
      task: 'sched.echo',
      payload: { n: 1 },
    });
    expect(again.statusCode).toBe(409);
    expect(again.json().message).toContain(first.id);
    expect(again.json().details).toEqual({ existingId: first.id });
    await create(b, { name: 'unique-name' });
    const other = await create(a);
    const rename = await call(a, 'PATCH', `/${other.id}`, { name: 'unique-name' });
    expect(rename.statusCode).toBe(409);
    expect(rename.json().details).toEqual({ existingId: first.id });
    // Its own name again is no conflict.
    expect((await call(a, 'PATCH', `/${first.id}`, { name: 'unique-name' })).statusCode).toBe(200);
  });

  it('holds a collection to 100 schedules', async () => {
    const c = await t.createCollection();
    for (let i = 0; i < 100; i++) await create(c, { name: `n${i}` });
    const over = await call(c, 'POST', '', { name: 'n100', cron: '0 * * * *', task: 'sched.echo', payload: { n: 1 } });
    expect(over.statusCode).toBe(400);
    expect(over.json().message).toMatch(/at most 100 schedules/);
    expect((await call(c, 'GET')).json().items).toHaveLength(100);
  });
});

describe('another collection’s schedule', () => {
  it('is out of reach: 404 by its id under one’s own collection, 401 under its own', async () => {
    const mine = await create(a, { name: 'mine' });
    const theirs = await create(b, { name: 'theirs' });
    for (const [method, rest, payload] of [
      ['GET', `/${theirs.id}`, undefined],
      ['PATCH', `/${theirs.id}`, { enabled: false }],
      ['POST', `/${theirs.id}/run`, undefined],
      ['DELETE', `/${theirs.id}`, undefined],
    ] as const) {
      const res = await call(a, method, rest, payload);
      expect(res.statusCode, `${method} ${rest}`).toBe(404);
      const foreign = await t.inject({ method, url: url(b, rest), headers: a.auth, ...(payload && { payload }) });
      expect(foreign.statusCode, `${method} ${rest} under b`).toBe(401);
      const anonymous = await t.inject({ method, url: url(b, rest), ...(payload && { payload }) });
      expect(anonymous.statusCode).toBe(401);
    }
    expect((await t.inject({ method: 'GET', url: url(b), headers: a.auth })).statusCode).toBe(401);
    const listed = (await call(a, 'GET')).json().items.map((s: { id: string }) => s.id);
    expect(listed).toContain(mine.id);
    expect(listed).not.toContain(theirs.id);
    expect((await call(b, 'GET', `/${theirs.id}`)).json()).toEqual(theirs);
    expect(await jobsOf(theirs.id)).toEqual([]);
  });
});

describe('the next tick', () => {
  it('is read in the schedule’s time zone, daylight saving included', () => {
    const ny = checkCron('0 9 * * *', 'America/New_York');
    expect(nextTick(ny, new Date('2026-01-15T12:00:00Z')).toISOString()).toBe('2026-01-15T14:00:00.000Z');
    expect(nextTick(ny, new Date('2026-07-15T12:00:00Z')).toISOString()).toBe('2026-07-15T13:00:00.000Z');
    // Spring (Europe/Berlin, 29 March 2026): 02:30 does not exist; it runs once, at 03:30.
    const berlin = checkCron('30 2 * * *', 'Europe/Berlin');
    expect(nextTick(berlin, new Date('2026-03-28T12:00:00Z')).toISOString()).toBe('2026-03-29T01:30:00.000Z');
    expect(latestTick(berlin, new Date('2026-03-29T02:00:00Z')).toISOString()).toBe('2026-03-29T01:30:00.000Z');
    // Autumn (25 October 2026): 02:30 happens twice; it runs once, at the first.
    const autumn = [nextTick(berlin, new Date('2026-10-24T12:00:00Z'))];
    autumn.push(nextTick(berlin, autumn[0]));
    expect(autumn.map((d) => d.toISOString())).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    // A step in the hour field keeps its real-time cadence through the repeated hour.
    const every30 = checkCron('*/30 * * * *', 'Europe/Berlin');
    const ticks = [new Date('2026-10-25T00:00:00Z')];
    for (let i = 0; i < 4; i++) ticks.push(nextTick(every30, ticks[ticks.length - 1]));
    expect(ticks.slice(1).map((d) => d.toISOString().slice(11, 16))).toEqual(['00:30', '01:00', '01:30', '02:00']);
  });
});

describe('a tick', () => {
  it('after downtime enqueues one job, for the most recent missed tick (catchUp latest)', async () => {
    const s = await create(a, { cron: '0 0 * * *', payload: { n: 3 } });
    await makeDue(s.id, 3 * 86_400_000);
    await round();
    const jobs = await waitFor(async () => ((await jobsOf(s.id)).length ? jobsOf(s.id) : undefined));
    const lastMidnight = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`);
    expect(jobs).toEqual([
      expect.objectContaining({ key: `schedule:${s.id}:${lastMidnight.toISOString()}`, payload: { n: 3 } }),
    ]);
    const after = (await call(a, 'GET', `/${s.id}`)).json();
    expect(after).toMatchObject({ lastJobId: jobs[0].id, lastRunAt: lastMidnight.toISOString(), lastError: null });
    expect(after.nextRunAt).toBe(new Date(lastMidnight.getTime() + 86_400_000).toISOString());
    // Handled: the next round has nothing of it.
    await round();
    expect(await jobsOf(s.id)).toHaveLength(1);
    expect((await waitForStatus(t, a, jobs[0].id, ['completed'])).result).toEqual({ n: 3 });
  });

  it('skips missed ticks with catchUp none, and runs one that is on time', async () => {
    const s = await create(a, { cron: '0 0 * * *', catchUp: 'none' });
    await makeDue(s.id, 3 * 86_400_000);
    await round();
    await waitFor(async () =>
      (await call(a, 'GET', `/${s.id}`)).json().nextRunAt > new Date().toISOString() ? true : undefined,
    );
    expect(await jobsOf(s.id)).toEqual([]);
    expect((await call(a, 'GET', `/${s.id}`)).json()).toMatchObject({ lastJobId: null, lastError: null });
    const late = await create(a, { cron: '* * * * *', catchUp: 'none' });
    await makeDue(late.id, 1000);
    await round();
    await waitFor(async () => ((await jobsOf(late.id)).length ? true : undefined));
    // An every-minute schedule left enabled would tick in the tests after this one.
    expect((await call(a, 'DELETE', `/${late.id}`)).statusCode).toBe(200);
  });

  it('of a schedule that can no longer enqueue records why, moves on, and does not try again', async () => {
    const s = await create(a, { cron: '0 0 * * *' });
    await t.testDb.db.query(`UPDATE schedules SET payload = '{"n": "no longer a number"}' WHERE id = $1`, [s.id]);
    const gone = await create(a, { cron: '0 0 * * *' });
    await t.testDb.db.query(`UPDATE schedules SET task = 'task.removed' WHERE id = $1`, [gone.id]);
    const fine = await create(a, { cron: '0 0 * * *' });
    for (const x of [s, gone, fine]) await makeDue(x.id, 60_000);
    await round();
    const read = (id: string) => call(a, 'GET', `/${id}`).then((r) => r.json());
    const bad = await waitFor(async () => ((await read(s.id)).lastError ? read(s.id) : undefined));
    expect(bad.lastError).toMatch(/Invalid payload for sched.echo/);
    expect(Date.parse(bad.nextRunAt)).toBeGreaterThan(Date.now());
    expect(bad.lastJobId).toBeNull();
    expect((await read(gone.id)).lastError).toMatch(/Unknown task "task.removed"/);
    // The schedule beside them in the same round still got its job.
    expect(await jobsOf(fine.id)).toHaveLength(1);
    await round();
    expect(await jobsOf(s.id)).toEqual([]);
    expect((await read(s.id)).nextRunAt).toBe(bad.nextRunAt);
    // Fixed, it runs again and the error is cleared.
    await call(a, 'PATCH', `/${s.id}`, { payload: { n: 2 } });
    await makeDue(s.id, 1000);
    await round();
    await waitFor(async () => ((await read(s.id)).lastJobId ? true : undefined));
    expect((await read(s.id)).lastError).toBeNull();
  });

  it('is taken by the running scheduler on time, woken by a change', async () => {
    const s = await create(a, { cron: '0 0 1 1 *' });
    await t.testDb.db.query(`UPDATE schedules SET next_run_at = now() + interval '1 second' WHERE id = $1`, [s.id]);
    await t.testDb.db.notify('schedules_changed', '');
    await waitFor(async () => ((await jobsOf(s.id)).length ? true : undefined), 10_000, 'the scheduler’s tick');
  });
});

describe('system schedules', () => {
  it('are the modules’ housekeeping, without a collection', async () => {
    // Written by the scheduler's first round.
    const rows = await waitFor(async () => {
      const { rows } = await t.testDb.db.query<{
        id: string;
        name: string;
        cron: string | null;
        every_ms: number | null;
      }>(`SELECT id, name, cron, every_ms FROM schedules WHERE collection_id IS NULL ORDER BY name`);
      return rows.length ? rows : undefined;
    });
    expect(rows).toEqual([
      {
        id: 'system:interactions.compactCounters',
        name: 'interactions.compactCounters',
        cron: null,
        every_ms: 600_000,
      },
      {
        id: 'system:interactions.maintainPartitions',
        name: 'interactions.maintainPartitions',
        cron: '23 * * * *',
        every_ms: null,
      },
      { id: 'system:jobs.retention', name: 'jobs.retention', cron: '* * * * *', every_ms: null },
      { id: 'system:links.forgetVisitors', name: 'links.forgetVisitors', cron: '7 * * * *', every_ms: null },
      { id: 'system:links.maintainPartitions', name: 'links.maintainPartitions', cron: '27 * * * *', every_ms: null },
      {
        id: 'system:webhooks.forgetRetiredSecrets',
        name: 'webhooks.forgetRetiredSecrets',
        cron: '17 * * * *',
        every_ms: null,
      },
      { id: 'system:webhooks.prune', name: 'webhooks.prune', cron: '17 * * * *', every_ms: null },
    ]);
    // Not in any collection's list.
    expect((await call(a, 'GET')).json().items.some((s: { id: string }) => s.id.startsWith('system:'))).toBe(false);
    expect((await call(a, 'GET', '/system:jobs.retention')).statusCode).toBe(404);
  });

  it('run the jobs’ retention when its tick comes: an old finished job is deleted', async () => {
    const run = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/async/jobs`,
      headers: a.auth,
      payload: { task: 'sched.echo', payload: { n: 9 } },
    });
    const id = run.json().id as number;
    await waitForStatus(t, a, id, ['completed']);
    await t.testDb.db.query(`UPDATE jobs SET finished_at = now() - interval '8 days' WHERE id = $1`, [id]);
    const { rows: before } = await t.testDb.db.query<{ last_run_at: Date | null }>(
      `SELECT last_run_at FROM schedules WHERE id = 'system:jobs.retention'`,
    );
    await makeDue('system:jobs.retention', 1000);
    await round();
    await waitFor(async () => {
      const res = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/jobs/${id}`, headers: a.auth });
      return res.statusCode === 404 ? true : undefined;
    });
    const { rows } = await t.testDb.db.query<{ last_run_at: Date; last_error: string | null; next_run_at: Date }>(
      `SELECT last_run_at, last_error, next_run_at FROM schedules WHERE id = 'system:jobs.retention'`,
    );
    expect(rows[0].last_error).toBeNull();
    expect(rows[0].last_run_at.getTime()).toBeGreaterThan(before[0].last_run_at?.getTime() ?? 0);
    expect(rows[0].next_run_at.getTime()).toBeGreaterThan(Date.now() - 1000);
  });
});

describe('schedulers of their own on the database (the app’s loop stopped)', () => {
  it('three handle each due tick once between them, in concurrent rounds', async () => {
    // The app's own loop is stopped, so that every tick is handled by one of the three here
    // and their counts add up to the ticks.
    await t.app.services.schedules.scheduler.stop();
    // Only this test's schedules may come due meanwhile: an earlier test's schedule reaching its
    // tick during a round would add one to the count (it did, at a minute's turn, in CI).
    await t.testDb.db.query('UPDATE schedules SET enabled = false WHERE collection_id IS NOT NULL');
    const schedulers = [0, 1, 2].map(() => new Scheduler(t.testDb.db, t.app.services.jobs, quiet));
    for (let r = 0; r < 3; r++) {
      const schedules = [];
      for (let i = 0; i < 8; i++) schedules.push(await create(a, { cron: '0 0 * * *' }));
      for (const s of schedules) await makeDue(s.id, 86_400_000);
      const handled = await Promise.all(schedulers.map((x) => x.runDue()));
      expect(handled.reduce((x, y) => x + y, 0)).toBe(schedules.length);
      for (const s of schedules) expect(await jobsOf(s.id), s.id).toHaveLength(1);
      const { rows } = await t.testDb.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM schedules WHERE id = ANY($1) AND next_run_at > now()`,
        [schedules.map((s) => s.id)],
      );
      expect(rows[0].n).toBe(schedules.length);
    }
  });

  it('warns when housekeeping gave way (its answer lists what it postponed), and not when it did all', async () => {
    // A database of its own: this scheduler declares only the chore below, and its first round
    // removes the other system schedules of the database it runs on.
    const testDb = await createTestDb();
    const warned: { obj: { name?: string; postponed?: string[] }; msg: string }[] = [];
    const log = { ...quiet, warn: (obj: object, msg?: string) => void warned.push({ obj, msg: msg ?? '' }) };
    const scheduler = new Scheduler(testDb.db, t.app.services.jobs, log, { maxSleepMs: 200 });
    const answers = [{ postponed: ['drop link_clicks_y2020m01'] }, { postponed: [] }, { postponed: [] }];
    let runs = 0;
    scheduler.register([
      {
        name: 'test.givesWay',
        everyMs: 50,
        description: 'answers a postponed step once, then none',
        run: async () => answers[Math.min(runs++, answers.length - 1)],
      },
    ]);
    await scheduler.start();
    try {
      await waitFor(async () => (runs >= 3 ? true : undefined), 10_000, 'three runs');
    } finally {
      await scheduler.stop();
      await testDb.drop();
    }
    expect(warned).toHaveLength(1);
    expect(warned[0].obj).toMatchObject({ name: 'test.givesWay', postponed: ['drop link_clicks_y2020m01'] });
    expect(warned[0].msg).toMatch(/gave way.*next tick/);
  });

  it('one rides out a database that fails: the round is logged and tried again, then the tick is handled', async () => {
    let down = true;
    const warned: string[] = [];
    // The real database behind a switch: while down, every statement fails as a lost connection does.
    const flaky = new Proxy(t.testDb.db, {
      get(target, prop) {
        if (down && (prop === 'query' || prop === 'transaction'))
          return async () => {
            throw new Error('Connection terminated unexpectedly');
          };
        const value = Reflect.get(target, prop);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const log = { ...quiet, warn: (_: object, msg?: string) => void warned.push(msg ?? '') };
    const scheduler = new Scheduler(flaky, t.app.services.jobs, log, { maxSleepMs: 200 });
    const s = await create(a, { cron: '0 0 * * *' });
    await makeDue(s.id, 1000);
    await scheduler.start();
    try {
      await waitFor(async () => (warned.length >= 2 ? true : undefined), 10_000, 'two failed rounds');
      expect(warned[0]).toMatch(/a round failed on the database; trying again/);
      expect(await jobsOf(s.id)).toEqual([]);
      down = false;
      await waitFor(async () => ((await jobsOf(s.id)).length === 1 ? true : undefined), 10_000, 'the tick');
    } finally {
      await scheduler.stop();
    }
  });
});
