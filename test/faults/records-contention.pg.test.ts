/**
 * Two bulk upserts sharing refs, sent at the same time in opposite orders (PostgreSQL only:
 * PGlite runs one transaction at a time). Each upsert holds its ref until commit; written in
 * the callers' orders the two batches deadlocked (a 500). Both must succeed, whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';
import { onPostgres } from '../helpers/db.ts';

describe.skipIf(!onPostgres)('bulk upserts in opposite orders (PostgreSQL; skipped on PGlite)', () => {
  let t: TestApp;
  let c: TestCollection;
  beforeAll(async () => {
    t = await createTestApp();
    c = await t.createCollection();
  });
  afterAll(async () => t?.close());

  it('five rounds of two 300-item batches with the same refs, one reversed: all answered 200, nothing lost', async () => {
    const url = `/admin/collection/${c.id}/app/catalog/records/bulk-upsert`;
    for (let round = 0; round < 5; round++) {
      const items = Array.from({ length: 300 }, (_, i) => ({ ref: `R-${i}`, recordType: 'x', data: { round, i } }));
      const reversed = [...items].reverse();
      const [forward, backward] = await Promise.all([
        t.inject({ method: 'POST', url, headers: c.auth, payload: items }),
        t.inject({ method: 'POST', url, headers: c.auth, payload: reversed }),
      ]);
      expect(
        [forward.statusCode, backward.statusCode],
        `${forward.body.slice(0, 300)} ${backward.body.slice(0, 300)}`,
      ).toEqual([200, 200]);
      // Answered in the caller's order, whatever order they were written in.
      expect(backward.json().results.map((r: { ref: string }) => r.ref)).toEqual(reversed.map((r) => r.ref));
      expect(forward.json().results.map((r: { index: number }) => r.index)).toEqual(items.map((_, i) => i));
    }
    const { rows } = await t.testDb.db.query<{ n: number; rounds: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT data->>'round')::int AS rounds FROM app_records WHERE collection_id = $1",
      [c.id],
    );
    expect(rows[0]).toEqual({ n: 300, rounds: 1 });
  });
});
