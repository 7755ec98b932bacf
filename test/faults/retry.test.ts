/**
 * retryOnConflict (src/db/retry.ts): a real deadlock between two transactions on PostgreSQL
 * is retried until both have committed; other errors are not retried; the number of tries is
 * bounded. The deadlock needs two connections, so that part runs on PostgreSQL only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backoffMs, isConflictError, retryOnConflict } from '../../src/db/index.ts';
import { createTestDb, onPostgres, type TestDb } from '../helpers/db.ts';

let testDb: TestDb;
beforeAll(async () => {
  testDb = await createTestDb({ migrate: false });
  await testDb.db.exec(`CREATE TABLE test_pair (id int PRIMARY KEY, n int NOT NULL);
    INSERT INTO test_pair VALUES (1, 0), (2, 0);`);
});
afterAll(async () => testDb?.drop());

describe.skipIf(!onPostgres)('a real deadlock (PostgreSQL; skipped on PGlite)', () => {
  it('two transactions locking two rows in opposite orders: one is aborted (40P01), retried, both commit', async () => {
    const db = testDb.db;
    // Both hold their first row before either asks for its second: a certain lock cycle.
    let arrived = 0;
    let release: () => void = () => {};
    const bothHoldOne = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tries = { a: 0, b: 0 };
    const retried: unknown[] = [];
    const move = (name: 'a' | 'b', first: number, second: number) =>
      retryOnConflict(
        () =>
          db.transaction(async (tx) => {
            tries[name]++;
            await tx.query('UPDATE test_pair SET n = n + 1 WHERE id = $1', [first]);
            if (tries[name] === 1) {
              if (++arrived === 2) release();
              await bothHoldOne;
            }
            await tx.query('UPDATE test_pair SET n = n + 1 WHERE id = $1', [second]);
          }),
        { onRetry: (err) => retried.push(err) },
      );
    await Promise.all([move('a', 1, 2), move('b', 2, 1)]);
    expect(retried).toHaveLength(1);
    expect(isConflictError(retried[0])).toBe(true);
    expect((retried[0] as { code: string }).code).toBe('40P01');
    expect(tries.a + tries.b).toBe(3);
    const { rows } = await db.query<{ id: number; n: number }>('SELECT id, n FROM test_pair ORDER BY id');
    expect(rows).toEqual([
      { id: 1, n: 2 },
      { id: 2, n: 2 },
    ]);
  });
});

describe('the retry rules', () => {
  it('retries only deadlocks and serialization failures, a bounded number of times', async () => {
    let calls = 0;
    const conflict = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    await expect(
      retryOnConflict(
        async () => {
          calls++;
          throw conflict;
        },
        { attempts: 3, baseMs: 1, maxMs: 2 },
      ),
    ).rejects.toBe(conflict);
    expect(calls).toBe(3);

    calls = 0;
    // A real error of the database (a unique violation) is the caller's to handle: no retry.
    const err = await retryOnConflict(async () => {
      calls++;
      await testDb.db.query('INSERT INTO test_pair VALUES (1, 0)');
    }).catch((e: unknown) => e);
    expect((err as { code: string }).code).toBe('23505');
    expect(calls).toBe(1);

    calls = 0;
    const serialization = Object.assign(new Error('could not serialize access'), { code: '40001' });
    expect(
      await retryOnConflict(async () => {
        if (++calls < 3) throw serialization;
        return 'done';
      }),
    ).toBe('done');
    expect(calls).toBe(3);
  });

  it('backs off exponentially within [ceiling/2, ceiling], capped', () => {
    expect(backoffMs(1, 10, 500, () => 0)).toBe(5);
    expect(backoffMs(1, 10, 500, () => 1)).toBe(10);
    expect(backoffMs(3, 10, 500, () => 0)).toBe(20);
    expect(backoffMs(3, 10, 500, () => 1)).toBe(40);
    expect(backoffMs(20, 10, 500, () => 1)).toBe(500);
    expect(backoffMs(200, 10, 500, () => 0)).toBe(250);
  });
});
