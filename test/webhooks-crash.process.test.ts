/**
 * Crash safety of delivery with real processes: the process running the workers is killed
 * with `kill -9` while deliveries are in flight (the receiver holds them open) and queued;
 * after a restart every event reaches the receiver at least once. On PostgreSQL the API and
 * the worker are separate processes and only the worker dies; on PGlite (one process per
 * data directory) the one process serving both dies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProcess, spawnTs } from '../support/service-process.ts';
import { callService as call, SUPER_KEY } from './helpers/app.ts';
import { type ChildStorage, childStorage, onPostgres } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

const EVENTS = 20;
let storage: ChildStorage | undefined;
let rx: Receiver;
const running: RunningProcess[] = [];

beforeAll(async () => {
  rx = await startReceiver();
  storage = await childStorage('webhooks-crash');
});
afterAll(async () => {
  for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) await p.kill();
  await rx.close();
  await storage?.release();
});

async function start(role: 'all' | 'api'): Promise<RunningProcess> {
  const p = await spawnTs('src/server.ts', {
    env: {
      ...storage?.env,
      ROLE: role,
      SUPER_ADMIN_KEY: SUPER_KEY,
      RATE_LIMIT_MAX: '1000000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_TIMEOUT_MS: '60000',
      WEBHOOK_RETRY_BASE_MS: '50',
      JOBS_LOCK_TIMEOUT_MS: '1500',
      JOBS_POLL_INTERVAL_MS: '200',
      JOBS_CONCURRENCY: '4',
      LOG_LEVEL: 'error',
    },
    readyPath: '/readyz',
  });
  running.push(p);
  return p;
}

describe('webhook delivery survives kill -9 of the worker', () => {
  it('delivers every event at least once after a restart', { timeout: 180_000 }, async () => {
    let worker = await start('all');
    let api = onPostgres ? await start('api') : worker;
    expect((await call(api.url, 'POST', '/platform/collections', { id: 'crashhooks', name: 'C' })).status).toBe(200);
    const key = (await call(api.url, 'POST', '/admin/collection/crashhooks/api-keys', { name: 'k' })).body
      .key as string;
    rx.answer('/crash', { hang: true });
    const hook = await call(api.url, 'POST', '/v1/webhooks', { url: `${rx.url}/crash`, events: ['link.created'] }, key);
    expect(hook.status).toBe(200);

    const linkIds: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const res = await call(
        api.url,
        'POST',
        '/admin/collection/crashhooks/links',
        { url: `https://e.example/${i}` },
        key,
      );
      expect(res.status).toBe(200);
      linkIds.push(res.body.id as string);
    }
    // Deliveries are in flight (held open by the receiver) and the rest are queued.
    await waitFor(async () => (rx.on('/crash').length >= 2 ? true : undefined), 30_000, 'deliveries in flight');
    await worker.kill();
    const killedAt = Date.now();
    rx.answer('/crash', { status: 200 });

    worker = await start('all');
    if (!onPostgres) api = worker;
    const delivered = await waitFor(
      async () => {
        const ids = new Set(
          rx
            .on('/crash')
            .filter((r) => r.at > killedAt)
            .map((r) => r.body.data.link_id as string),
        );
        return linkIds.every((id) => ids.has(id)) ? ids : undefined;
      },
      60_000,
      'every event to reach the receiver after the restart',
    );
    expect(delivered.size).toBe(EVENTS);
    // Event ids are stable across the crash: a receiver deduplicating on id sees EVENTS events.
    expect(new Set(rx.on('/crash').map((r) => r.body.id)).size).toBe(EVENTS);
    await waitFor(
      async () => {
        const again = await call(api.url, 'GET', `/v1/webhooks/${hook.body.id}/deliveries?limit=100`, undefined, key);
        const list = again.body.items as { status: string }[];
        return list.length === EVENTS && list.every((d) => d.status === 'succeeded') ? true : undefined;
      },
      30_000,
      'every delivery to be recorded as succeeded',
    );
    await worker.stop();
    if (api !== worker) await api.stop();
  });
});
