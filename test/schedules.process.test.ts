/**
 * A schedule across real processes: one `ROLE=api` and two `ROLE=worker` service processes on
 * one PostgreSQL schema (PGlite has one owner process). An every-minute schedule (`* * * * *`)
 * of `http` jobs to a receiver on loopback runs exactly twice in two minutes: two jobs, one
 * per minute, each completed once (two requests received), and each tick taken by one worker
 * (a trigger records every move of the schedule's next tick, and which process made it). This
 * suite takes two to three minutes by nature: the ticks are the wall clock's (a third tick,
 * as before 2026-11-28, proved nothing the second does not, and cost CI a minute).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProcess, spawnTs } from '../support/service-process.ts';
import { SUPER_KEY } from './helpers/app.ts';
import { type ChildStorage, childStorage, onPostgres } from './helpers/db.ts';
import { sleep, waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

const running: RunningProcess[] = [];
let storage: ChildStorage | undefined;
let db: pg.Pool | undefined;
let rx: Receiver | undefined;

function databaseUrl(name: string): string {
  const url = new URL(storage?.env.DATABASE_URL as string);
  url.searchParams.set('application_name', name);
  return url.toString();
}

async function start(name: string, role: 'api' | 'worker'): Promise<RunningProcess> {
  const p = await spawnTs('src/server.ts', {
    env: {
      DATABASE_URL: databaseUrl(name),
      ROLE: role,
      SUPER_ADMIN_KEY: SUPER_KEY,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: role === 'worker' ? 'info' : 'warn',
    },
    ...(role === 'worker' ? { readyLine: 'worker started' } : { readyPath: '/readyz' }),
    capture: true,
  });
  running.push(p);
  return p;
}

async function ok(p: RunningProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(`${p.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${SUPER_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

describe.skipIf(!onPostgres)('a schedule with two worker processes', () => {
  let api: RunningProcess;

  beforeAll(async () => {
    rx = await startReceiver();
    storage = await childStorage('schedules');
    api = await start('sch-api', 'api');
    await Promise.all([start('sch-worker1', 'worker'), start('sch-worker2', 'worker')]);
    db = new pg.Pool({ connectionString: databaseUrl('sch-test'), max: 2 });
    // Every move of a schedule's next tick, and which process made it: a tick taken twice
    // would show the same `from` twice.
    await db.query(`
      CREATE TABLE test_schedule_moves (id text NOT NULL, from_tick timestamptz, to_tick timestamptz, writer text NOT NULL);
      CREATE FUNCTION test_schedule_move() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO test_schedule_moves VALUES (NEW.id, OLD.next_run_at, NEW.next_run_at, current_setting('application_name'));
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_schedule_move AFTER UPDATE ON schedules FOR EACH ROW
        WHEN (OLD.next_run_at IS DISTINCT FROM NEW.next_run_at) EXECUTE FUNCTION test_schedule_move();`);
    await ok(api, 'POST', '/platform/collections', { id: 'sched', name: 'sched' });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(running.splice(0).map((p) => p.kill()));
    await db?.end();
    await rx?.close();
    await storage?.release();
  });

  it('runs an every-minute schedule exactly twice in two minutes, each job once', async () => {
    rx?.answer('/tick', { status: 200, body: 'ok' });
    const made = await ok(api, 'POST', '/admin/collection/sched/schedules', {
      name: 'every-minute',
      cron: '* * * * *',
      task: 'http',
      payload: { url: `${rx?.url}/tick`, method: 'POST', body: { from: 'schedule' } },
    });
    const id = made.id as string;
    const first = Date.parse(made.nextRunAt as string);
    const last = first + 60_000;
    const jobs = async () =>
      (
        await (db as pg.Pool).query<{ id: number; key: string; status: string; attempts: number }>(
          `SELECT id, key, status, attempts FROM jobs WHERE collection_id = 'sched' AND key LIKE $1 ORDER BY id`,
          [`schedule:${id}:%`],
        )
      ).rows;
    // The second tick's job, completed; then a while longer, still well before a third tick.
    await waitFor(
      async () => {
        const now = await jobs();
        return now.length >= 2 && now.every((j) => j.status === 'completed') ? true : undefined;
      },
      last - Date.now() + 30_000,
      'two completed jobs',
    );
    await sleep(Math.max(0, last + 15_000 - Date.now()));
    await ok(api, 'PATCH', `/admin/collection/sched/schedules/${id}`, { enabled: false });

    const done = await jobs();
    expect(done.map((j) => j.key)).toEqual(
      [0, 1].map((i) => `schedule:${id}:${new Date(first + i * 60_000).toISOString()}`),
    );
    expect(done.map((j) => [j.status, j.attempts])).toEqual([
      ['completed', 1],
      ['completed', 1],
    ]);
    // Each job's request received once (webhook-id is the job's id).
    const got = rx?.on('/tick') ?? [];
    expect(got.map((r) => r.headers['webhook-id']).sort()).toEqual(done.map((j) => `job_${j.id}`).sort());
    // Each tick moved on once, by a worker.
    const { rows: moves } = await (db as pg.Pool).query<{ from_tick: Date; writer: string }>(
      `SELECT from_tick, writer FROM test_schedule_moves WHERE id = $1 AND writer LIKE 'sch-worker%' ORDER BY from_tick`,
      [id],
    );
    expect(moves.map((m) => m.from_tick.toISOString())).toEqual(
      [0, 1].map((i) => new Date(first + i * 60_000).toISOString()),
    );
    const schedule = await ok(api, 'GET', `/admin/collection/sched/schedules/${id}`);
    expect(schedule).toMatchObject({ lastJobId: done[1].id, lastError: null, enabled: false, nextRunAt: null });
  }, 300_000);
});
