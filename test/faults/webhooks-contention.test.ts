/**
 * Webhooks under concurrent writes on one database:
 * - disabling registrations while their deliveries are being attempted and recorded (the
 *   delivery jobs lock a delivery then its registration; a disable locks the registration
 *   then its pending deliveries): no call fails, no attempt dies of a deadlock;
 * - creating links (which publishes their events) while registrations are created and deleted:
 *   no create fails for a registration deleted under it;
 * - the per-collection registration cap holds under 30 parallel creates.
 * Deadlocks need two connections, so the first part runs on PostgreSQL only; the cap is
 * checked on both backends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';
import { waitFor } from '../helpers/jobs.ts';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.ts';

const CAP = 10;
let t: TestApp;
let rx: Receiver;

beforeAll(async () => {
  t = await createTestApp({
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_MAX_REGISTRATIONS: String(CAP),
    // Quick retries and no automatic disabling: the registrations keep failing while the
    // test switches them off and on.
    WEBHOOK_RETRY_BASE_MS: '5',
    WEBHOOK_RETRY_FACTOR: '1',
    WEBHOOK_DISABLE_AFTER_FAILURES: '1000',
    WEBHOOK_TIMEOUT_MS: '2000',
    JOBS_CONCURRENCY: '32',
    // Many attempts at once, to one registration, failing or not: the lock order under test.
    // Without the fairness limits that would otherwise spread them out (webhooks.md).
    JOBS_DELIVERIES_CONCURRENCY: '32',
    JOBS_DELIVERIES_COLLECTION_CONCURRENCY: '32',
    WEBHOOK_MAX_IN_FLIGHT: '32',
    WEBHOOK_BACKOFF_BASE_MS: '0',
    JOBS_POLL_INTERVAL_MS: '100',
  });
  rx = await startReceiver();
});
afterAll(async () => {
  await t?.close();
  await rx?.close();
});

const api = (c: TestCollection, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  t.inject({ method, url, headers: c.auth, payload: payload as Record<string, unknown> });

describe.skipIf(!onPostgres)('disabling while deliveries are written (PostgreSQL; skipped on PGlite)', () => {
  it('PATCH active=false during a burst of failing and succeeding attempts: no error, no deadlock', async () => {
    const c = await t.createCollection();
    // Failing receivers make the attempts lock their registration (failure count); every
    // fourth answer succeeds, which resets a non-zero count in the success statement.
    rx.answer(
      '/busy',
      Array.from({ length: 20_000 }, (_, i) => ({ status: i % 4 === 3 ? 200 : 500 })),
    );
    const hooks: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await api(c, 'POST', '/v1/webhooks', { url: `${rx.url}/busy`, events: ['link.created'] });
      expect(res.statusCode, res.body).toBe(200);
      hooks.push(res.json().id);
    }
    const failures: string[] = [];
    const patch = async (id: string, active: boolean) => {
      const r = await api(c, 'PATCH', `/v1/webhooks/${id}`, { active });
      if (r.statusCode !== 200) failures.push(`patch: ${r.statusCode} ${r.body}`);
    };
    for (let round = 0; round < 10; round++) {
      const links = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          api(c, 'POST', `/admin/collection/${c.id}/links`, { url: `https://r${round}-${i}.example/` }),
        ),
      );
      for (const l of links) if (l.statusCode !== 200) failures.push(`link: ${l.statusCode} ${l.body}`);
      // Once attempts are under way, switch every registration off (a user's disable) and
      // on again: both meet the attempts being recorded, and the automatic disable.
      const seen = rx.on('/busy').length;
      await waitFor(async () => (rx.on('/busy').length >= seen + 20 ? true : undefined), 30_000, 'attempts');
      await Promise.all(hooks.map((id) => patch(id, false)));
      await Promise.all(hooks.map((id) => patch(id, true)));
    }
    // Every delivery job ends; none of their attempts died of a database error.
    const db = t.testDb.db;
    await waitFor(
      async () => {
        const { rows } = await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM jobs WHERE task = 'webhooks.deliver' AND status NOT IN ('completed', 'failed', 'cancelled')",
        );
        return rows[0].n === 0 ? true : undefined;
      },
      60_000,
      'the delivery jobs to finish',
    );
    const { rows } = await db.query<{ status: string; last_error: string }>(
      "SELECT status, last_error FROM jobs WHERE task = 'webhooks.deliver' AND (attempts > 1 OR last_error IS NOT NULL)",
    );
    expect({ failures, jobErrors: rows }).toEqual({ failures: [], jobErrors: [] });
  });
});

describe.skipIf(!onPostgres)(
  'deleting registrations while events are published (PostgreSQL; skipped on PGlite)',
  () => {
    it('links created while registrations are created and deleted: every create succeeds', async () => {
      const c = await t.createCollection();
      let churning = true;
      // Two clients create and delete registrations all the while.
      const churn = async () => {
        while (churning) {
          const w = await api(c, 'POST', '/v1/webhooks', { url: `${rx.url}/churn`, events: ['link.created'] });
          expect(w.statusCode, w.body).toBe(200);
          expect((await api(c, 'DELETE', `/v1/webhooks/${w.json().id}`)).statusCode).toBe(200);
        }
      };
      const churners = [churn(), churn()];
      const failed: string[] = [];
      await Promise.all(
        Array.from({ length: 6 }, async () => {
          for (let i = 0; i < 60; i++) {
            const r = await api(c, 'POST', `/admin/collection/${c.id}/links`, { url: 'https://e.example/' });
            if (r.statusCode !== 200) failed.push(`${r.statusCode} ${r.body}`);
          }
        }),
      );
      churning = false;
      await Promise.all(churners);
      // Before the registrations were locked while read: about a third answered 400.
      expect(failed).toEqual([]);
    });
  },
);

describe('the registration cap', () => {
  it(`30 parallel creates at a cap of ${CAP}: exactly ${CAP} stored, the others refused with 409`, async () => {
    const c = await t.createCollection();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api(c, 'POST', '/v1/webhooks', { url: `https://hooks${i}.example/in`, events: ['link.created'] }),
      ),
    );
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes).toEqual([...Array(CAP).fill(200), ...Array(30 - CAP).fill(409)]);
    for (const r of results.filter((x) => x.statusCode === 409)) {
      expect(r.json()).toMatchObject({
        code: 409,
        errorCode: 'CONFLICT',
        message: expect.stringContaining(`at most ${CAP}`),
        requestId: expect.any(String),
      });
    }
    expect((await api(c, 'GET', '/v1/webhooks')).json().items).toHaveLength(CAP);
    // Deleting one frees one place, and only one.
    const first = results.find((r) => r.statusCode === 200)?.json().id;
    expect((await api(c, 'DELETE', `/v1/webhooks/${first}`)).statusCode).toBe(200);
    const again = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        api(c, 'POST', '/v1/webhooks', { url: `https://again${i}.example/in`, events: ['link.created'] }),
      ),
    );
    expect(again.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409]);
  });
});
