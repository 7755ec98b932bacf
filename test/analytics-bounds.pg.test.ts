/**
 * Analytics reads bounded in time (src/platform/analytics-slots.ts, db/stoppable.ts): a read that
 * runs past ANALYTICS_TIMEOUT_MS is stopped in the database and answered 503 naming the
 * setting; a read whose client hangs up is cancelled in the database (running) or leaves the
 * line (waiting), so it holds no slot and no connection for nobody. The reads are made slow for
 * real: another connection holds a lock on the events they read, and stays holding it, so only
 * a timeout or a cancel can end them. Real HTTP for the hang-up: the client's connection is
 * closed mid-request. PostgreSQL only (PGlite runs one statement at a time in the process and
 * cannot cancel it).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';
import { parseExposition, sampleValue } from './helpers/prometheus.ts';

const FUNNEL = { steps: [{ interactionId: 'view' }, { interactionId: 'buy' }] };

/** Another connection holding the events' table: every analytics read of them waits. */
async function lockEvents(t: TestApp) {
  const holder = new pg.Client({ connectionString: t.testDb.url });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE interaction_events IN ACCESS EXCLUSIVE MODE');
  const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return {
    pid: rows[0].pid,
    async release() {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    },
  };
}

/**
 * Statements waiting for the holder's lock: this file's reads, not another file's running beside
 * it (seen from the pool: inside the holder's transaction pg_stat_activity is one snapshot).
 */
async function blockedReads(t: TestApp, holderPid: number): Promise<number> {
  const { rows } = await t.testDb.db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))',
    [holderPid],
  );
  return rows[0].n;
}

async function slots(t: TestApp) {
  const metrics = parseExposition((await t.inject({ method: 'GET', url: '/metrics' })).body);
  return {
    running: sampleValue(metrics, 'analytics_reads', { state: 'running' }),
    waiting: sampleValue(metrics, 'analytics_reads', { state: 'waiting' }),
    refused: sampleValue(metrics, 'analytics_reads_refused_total', {}),
  };
}

describe.skipIf(!onPostgres)('analytics reads bounded in time (skipped unless TEST_DATABASE_URL is set)', () => {
  describe('ANALYTICS_TIMEOUT_MS', () => {
    let t: TestApp;
    let c: TestCollection;
    beforeAll(async () => {
      t = await createTestApp({ ANALYTICS_TIMEOUT_MS: '500' });
      c = await t.createCollection();
    });
    afterAll(async () => {
      await t?.close();
    });

    it('a read past the timeout is stopped in the database and answered 503 naming the setting; others go on', async () => {
      const funnel = () =>
        t.inject({ method: 'POST', url: `/admin/collection/${c.id}/funnels/query`, headers: c.auth, payload: FUNNEL });
      expect((await funnel()).statusCode).toBe(200);
      const lock = await lockEvents(t);
      try {
        const res = await funnel();
        expect(res.statusCode, res.body).toBe(503);
        expect(res.headers['retry-after']).toBeDefined();
        expect(res.json()).toMatchObject({ code: 503, errorCode: 'UNAVAILABLE' });
        expect(res.json().message).toContain('ANALYTICS_TIMEOUT_MS (500 ms)');
        // Stopped in the database, though the lock it waited for is still held.
        expect(await blockedReads(t, lock.pid)).toBe(0);
        expect((await slots(t)).running).toBe(0);
        // Other requests are answered meanwhile.
        const plain = await t.inject({ method: 'GET', url: `/admin/collection/${c.id}/links`, headers: c.auth });
        expect(plain.statusCode, plain.body).toBe(200);
      } finally {
        await lock.release();
      }
      expect((await funnel()).statusCode).toBe(200);
    });
  });

  describe('a client that hangs up', () => {
    let t: TestApp;
    let c: TestCollection;
    let base: string;
    beforeAll(async () => {
      // One slot, a long wait in line and a long timeout: only a cancel ends these reads.
      t = await createTestApp({
        ANALYTICS_CONCURRENCY: '1',
        ANALYTICS_WAIT_MS: '60000',
        ANALYTICS_TIMEOUT_MS: '60000',
      });
      c = await t.createCollection();
      base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    });
    afterAll(async () => {
      await t?.close();
    });

    it('a running read is cancelled in the database, a waiting one leaves the line; the slot serves the next', async () => {
      const send = (controller: AbortController) =>
        fetch(`${base}/admin/collection/${c.id}/funnels/query`, {
          method: 'POST',
          headers: { ...c.auth, 'content-type': 'application/json' },
          body: JSON.stringify(FUNNEL),
          signal: controller.signal,
        }).catch((err: Error) => err);
      const lock = await lockEvents(t);
      try {
        const first = new AbortController();
        const second = new AbortController();
        const running = send(first);
        await waitFor(
          async () => ((await blockedReads(t, lock.pid)) === 1 ? true : undefined),
          10_000,
          'the read blocked',
        );
        const waiting = send(second);
        await waitFor(async () => ((await slots(t)).waiting === 1 ? true : undefined), 10_000, 'a read in line');

        // The waiting one hangs up: it leaves the line, refused by nobody.
        second.abort();
        expect(((await waiting) as Error).name).toBe('AbortError');
        await waitFor(async () => ((await slots(t)).waiting === 0 ? true : undefined), 10_000, 'the line empty');
        expect(await slots(t)).toEqual({ running: 1, waiting: 0, refused: 0 });

        // The running one hangs up: its statement is cancelled while the lock is still held.
        first.abort();
        expect(((await running) as Error).name).toBe('AbortError');
        await waitFor(
          async () => ((await blockedReads(t, lock.pid)) === 0 ? true : undefined),
          10_000,
          'the statement gone',
        );
        await waitFor(async () => ((await slots(t)).running === 0 ? true : undefined), 10_000, 'the slot free');
      } finally {
        await lock.release();
      }
      // The one slot serves the next read.
      const next = (await send(new AbortController())) as Response;
      expect(next.status).toBe(200);
    });
  });
});
