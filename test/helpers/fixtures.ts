/**
 * Shared fixtures over a TestApp: the collections, admin keys and user tokens most suites start
 * from. Each test file still builds its own app on its own database (`createTestApp`); these
 * only replace the copies of the setup code.
 */
import { bearer, type TestApp, type TestCollection } from './app.ts';

export interface UserSpec {
  userId: string;
  contactId?: string;
}

export interface CollectionWithUser extends TestCollection {
  /** A user token of this collection, for the fixture's user. */
  userToken: string;
  /** `{ authorization: 'Bearer <userToken>' }`. */
  userAuth: { authorization: string };
}

/** A new collection with its admin key and a user token (user `u1` unless told). */
export async function collectionWithUser(t: TestApp, user: UserSpec = { userId: 'u1' }): Promise<CollectionWithUser> {
  const c = await t.createCollection();
  const userToken = await t.userToken(c.id, user.userId, user.contactId);
  return { ...c, userToken, userAuth: bearer(userToken) };
}

/** The two collections of an isolation suite, by name: `a` and `b` (`twoCollections`). */
export type Side = 'a' | 'b';
export const BOTH_SIDES = ['a', 'b'] as const;

/**
 * Two collections, each with an admin key and a user token for the same user id (`u1` unless
 * told): `a` to act in, `b` to check that nothing crosses over.
 */
export async function twoCollections(
  t: TestApp,
  user?: UserSpec,
): Promise<{ a: CollectionWithUser; b: CollectionWithUser }> {
  return { a: await collectionWithUser(t, user), b: await collectionWithUser(t, user) };
}

/** Registers an active webhook of `c` for `events` at `url`; answers its signing secret. */
export async function subscribe(t: TestApp, c: TestCollection, url: string, events: string[]): Promise<string> {
  const res = await t.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: c.auth,
    payload: { url, events, active: true },
  });
  if (res.statusCode !== 200) throw new Error(`register webhook: ${res.statusCode} ${res.body}`);
  return res.json().secret as string;
}
