/**
 * Analytics reads in slots (src/platform/analytics-slots.ts): with more slow analytics reads
 * than the pool has connections, a plain request still gets a connection and its answer; the
 * reads beyond ANALYTICS_CONCURRENCY wait in line and, when their wait runs out, are answered
 * 503 with Retry-After, naming the setting; the ones running finish once unblocked. The reads
 * are made slow for real: another connection holds a lock on the events they read.
 * PostgreSQL only (PGlite has one connection, which every request shares in turn).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { onPostgres } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';
import { parseExposition, sampleValue } from './helpers/prometheus.ts';

let t: TestApp;
let c: TestCollection;

beforeAll(async () => {
  if (!onPostgres) return;
  // The test app's pool has 10 connections; 2 analytics slots, and a short wait in line.
  t = await createTestApp({ ANALYTICS_CONCURRENCY: '2', ANALYTICS_WAIT_MS: '300' });
  c = await t.createCollection();
});
afterAll(async () => {
  await t?.close();
});

describe.skipIf(!onPostgres)('analytics reads in slots (skipped unless TEST_DATABASE_URL is set)', () => {
  it('more slow analytics reads than connections: a plain request is answered, the reads beyond the slots get 503 naming the setting', async () => {
    const funnel = () =>
      t.inject({
        method: 'POST',
        url: `/admin/collection/${c.id}/funnels/query`,
        headers: c.auth,
        payload: { steps: [{ interactionId: 'view' }, { interactionId: 'buy' }] },
      });
    expect((await funnel()).statusCode).toBe(200);

    const holder = new pg.Client({ connectionString: t.testDb.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE interaction_events IN ACCESS EXCLUSIVE MODE');
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // Twelve reads, sent now (an injected request starts when awaited): more than the
      // pool's ten connections.
      let settled = 0;
      const reads = Array.from({ length: 12 }, () =>
        funnel().then((r) => {
          settled++;
          return r;
        }),
      );
      // Two of them take the slots, and are held up by the lock; the others wait for a slot,
      // holding no connection.
      await waitFor(
        async () => {
          // Not the holder's: inside its transaction pg_stat_activity is one snapshot, taken at
          // the first look. Only the statements this lock holds up: a funnel of a file running
          // beside this one, waiting on a lock of its own schema, is not one of these.
          const { rows } = await t.testDb.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE $1::int = ANY (pg_blocking_pids(pid)) AND query LIKE 'DECLARE funnel_rows%'`,
            [holderPid],
          );
          return rows[0].n >= 2 ? true : undefined;
        },
        10_000,
        'two analytics reads blocked on the lock',
      );
      const plain = await t.inject({ method: 'GET', url: `/admin/collection/${c.id}/links`, headers: c.auth });
      expect(plain.statusCode, plain.body).toBe(200);

      // The ten beyond the slots are answered while the two hold theirs, before the lock goes.
      await waitFor(async () => (settled >= 10 ? true : undefined), 10_000, 'ten reads answered');
      expect(settled).toBe(10);
      // The metrics show it: two running, none waiting any more, ten refused.
      const metrics = parseExposition((await t.inject({ method: 'GET', url: '/metrics' })).body);
      expect(sampleValue(metrics, 'analytics_reads', { state: 'running' })).toBe(2);
      expect(sampleValue(metrics, 'analytics_reads', { state: 'waiting' })).toBe(0);
      expect(sampleValue(metrics, 'analytics_reads_refused_total', {})).toBe(10);
      await holder.query('COMMIT');
      const answers = await Promise.all(reads);
      const refused = answers.filter((r) => r.statusCode === 503);
      expect(answers.filter((r) => r.statusCode === 200)).toHaveLength(2);
      expect(refused).toHaveLength(10);
      for (const r of refused) {
        expect(r.headers['retry-after']).toBeDefined();
        expect(r.json()).toMatchObject({ code: 503, errorCode: 'UNAVAILABLE' });
        expect(r.json().message).toContain('ANALYTICS_CONCURRENCY');
      }
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
    }
    // The slots are free again.
    expect((await funnel()).statusCode).toBe(200);
  });
});
