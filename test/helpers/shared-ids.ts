/**
 * For the isolation suites (test/isolation-*.test.ts): gives an object of one collection the
 * id of another collection's object. Ids the service makes are random, so two collections never
 * share one by chance; yet every query keyed by such an id also names its collection, and only
 * a shared id shows whether it does: without the condition, the other collection's rows under
 * the same id would be read too. The service has no way to choose an id, so the suites rename a
 * freshly created object in the database (its table and the rows that already point at it),
 * before anything else refers to it; everything afterwards goes through the API.
 */
import type { TestApp } from './app.ts';

/** A table holding an id to rename, and its column. */
export interface IdColumn {
  table: string;
  column: string;
}

/**
 * Renames `from` to `to` in collection `collectionId`: in the tables that point at the object
 * without a foreign key (`pointing`: an audit trail), then in its own table (`own`), in one
 * transaction. A row a foreign key ties to the object must not exist yet (or be removed first).
 */
export async function giveId(
  t: TestApp,
  collectionId: string,
  own: IdColumn,
  from: string,
  to: string,
  pointing: IdColumn[] = [],
): Promise<void> {
  // Identifiers come from the suites, never from a request.
  const statements = [...pointing, own].map(
    (c) => `UPDATE ${c.table} SET ${c.column} = $3 WHERE collection_id = $1 AND ${c.column} = $2`,
  );
  await t.testDb.db.transaction(async (tx) => {
    for (const text of statements) await tx.query(text, [collectionId, from, to]);
  });
}
