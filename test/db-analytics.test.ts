/**
 * The analytics transaction's settings (db/client.ts `analyticsSettings`): a read for a request
 * and a job's work on the primary both run with the configured work_mem and without JIT
 * compilation, and leave the connection as it was (SET LOCAL), on each backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyticsRunner, type Db } from '../src/db/index.ts';
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

const settings = async (q: { query: Db['query'] }) => {
  const { rows } = await q.query<{ jit: string; work_mem: string }>(
    `SELECT current_setting('jit') AS jit, current_setting('work_mem') AS work_mem`,
  );
  return rows[0];
};

describe('analytics transactions', () => {
  it('read and work with the configured work_mem and without JIT, inside the transaction only', async () => {
    const runner = analyticsRunner(db, 37);
    const outside = await settings(db);
    // Something else than the analytics settings, or the test could not fail.
    expect(outside.work_mem).not.toBe('37MB');
    expect(await runner.read('c1', settings)).toEqual({ jit: 'off', work_mem: '37MB' });
    expect(await runner((q) => settings(q))).toEqual({ jit: 'off', work_mem: '37MB' });
    // SET LOCAL: a pooled connection goes back as it was.
    for (let i = 0; i < 4; i++) expect(await settings(db)).toEqual(outside);
  });
});
