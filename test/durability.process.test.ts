/**
 * Data survives restarts, and a kill -9 of the server under write load loses no write that
 * was answered 200. Real processes, real storage: PGlite in a data directory by default, the
 * test's PostgreSQL schema when TEST_DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnTs } from '../support/service-process.ts';
import { callService as call, SUPER_KEY } from './helpers/app.ts';
import { type ChildStorage, childStorage } from './helpers/db.ts';

let storage: ChildStorage | undefined;

beforeAll(async () => {
  storage = await childStorage('durability');
});
afterAll(async () => {
  await storage?.release();
});

const start = () =>
  spawnTs('src/server.ts', {
    env: { ...storage?.env, SUPER_ADMIN_KEY: SUPER_KEY, RATE_LIMIT_MAX: '1000000' },
    readyPath: '/readyz',
  });

describe('durability with real processes', () => {
  let key = '';
  const collection = 'durable';

  it('keeps data across a graceful restart', async () => {
    const first = await start();
    expect((await call(first.url, 'POST', '/platform/collections', { id: collection, name: 'Durable' })).status).toBe(
      200,
    );
    const created = await call(first.url, 'POST', `/admin/collection/${collection}/api-keys`, { name: 'k' });
    key = created.body.key as string;
    const loc = await call(
      first.url,
      'POST',
      `/admin/collection/${collection}/location`,
      { name: 'Before restart' },
      key,
    );
    expect(loc.status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await start();
    try {
      const read = await call(second.url, 'GET', `/public/collection/${collection}/location/${loc.body.locationId}`);
      expect(read.status).toBe(200);
      expect(read.body.name).toBe('Before restart');
      // The admin key, hashed at rest, still works after the restart.
      expect((await call(second.url, 'GET', `/admin/collection/${collection}/api-keys`, undefined, key)).status).toBe(
        200,
      );
    } finally {
      await second.stop();
    }
  });

  it('loses no acknowledged write when the server is killed with SIGKILL under write load', async () => {
    const server = await start();
    const acknowledged: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await call(
            server.url,
            'POST',
            `/admin/collection/${collection}/location`,
            { name: `w${w}-${i}` },
            key,
          );
          if (res.status === 200) acknowledged.push(res.body.locationId as string);
        } catch {
          return; // the connection died with the server: this write was never acknowledged
        }
      }
    };
    const writers = Array.from({ length: 8 }, (_, w) => writer(w));
    while (acknowledged.length < 300) await new Promise((r) => setTimeout(r, 10));
    await server.kill();
    stop = true;
    await Promise.all(writers);
    expect(acknowledged.length).toBeGreaterThanOrEqual(300);

    const restarted = await start();
    try {
      const missing: string[] = [];
      for (const id of acknowledged) {
        const res = await fetch(`${restarted.url}/public/collection/${collection}/location/${id}`);
        if (res.status !== 200) missing.push(id);
      }
      expect(missing).toEqual([]);
    } finally {
      await restarted.stop();
    }
  });
});
