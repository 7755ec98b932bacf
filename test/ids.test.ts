/**
 * Ids that sort by their creation time (`newTimeOrderedId`, webhook events and deliveries): in
 * the database's own order of a text column (the backend's collation), not only in JavaScript's,
 * since what they are for is the B-tree of the primary key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/index.ts';
import { newId, newTimeOrderedId } from '../src/platform/ids.ts';
import { createTestDb, type TestDb } from './helpers/db.ts';

let testDb: TestDb;
let db: Db;

beforeAll(async () => {
  testDb = await createTestDb({ migrate: false });
  db = testDb.db;
});
afterAll(async () => {
  await testDb?.drop();
});

describe('newTimeOrderedId', () => {
  it('is the prefix, 9 base-36 digits of the time, and 96 random bits', () => {
    const at = Date.UTC(2026, 10, 28, 12, 0, 0, 123);
    const id = newTimeOrderedId('dlv', at);
    expect(id).toMatch(/^dlv_[0-9a-z]{9}[A-Za-z0-9_-]{16}$/);
    expect(Number.parseInt(id.slice(4, 13), 36)).toBe(at);
    // The random part is as unguessable as newId's: never repeated, even within one millisecond.
    const same = new Set(Array.from({ length: 1000 }, () => newTimeOrderedId('dlv', at)));
    expect(same.size).toBe(1000);
    expect(newId('evt')).toMatch(/^evt_[A-Za-z0-9_-]{16}$/);
  });

  it('sorts by time in the database, across digits that carry and over centuries', async () => {
    // Times that differ in every base-36 position, and neighbours a millisecond apart.
    const base = Date.UTC(2026, 0, 1);
    const times = [
      0,
      1,
      35,
      36,
      base - 1,
      base,
      base + 1,
      base + 35,
      base + 36,
      base + 36 ** 2,
      base + 36 ** 3 - 1,
      base + 36 ** 5,
      Date.UTC(2100, 0, 1),
      Date.UTC(3000, 0, 1),
    ];
    const made = times.map((t) => newTimeOrderedId('evt', t));
    // Shuffled into the table, read back in the column's order.
    const shuffled = [...made].sort(() => Math.random() - 0.5);
    await db.query('CREATE TABLE ids_order (id text PRIMARY KEY)');
    await db.query('INSERT INTO ids_order (id) SELECT unnest($1::text[])', [shuffled]);
    const { rows } = await db.query<{ id: string }>('SELECT id FROM ids_order ORDER BY id');
    expect(rows.map((r) => r.id)).toEqual(made);
    expect([...shuffled].sort()).toEqual(made);
  });
});
