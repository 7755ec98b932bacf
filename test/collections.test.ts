import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, SUPER_KEY, superAuth, type TestApp } from './helpers/app.ts';
import { collectionWithUser, twoCollections } from './helpers/fixtures.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('collections (super admin)', () => {
  it('creates, refuses a duplicate id, and lists', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/platform/collections',
      headers: superAuth,
      payload: { id: 'acme', name: 'Acme' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: 'acme', name: 'Acme' });
    const dup = await t.inject({
      method: 'POST',
      url: '/platform/collections',
      headers: superAuth,
      payload: { id: 'acme', name: 'Again' },
    });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().errorCode).toBe('CONFLICT');
    const gen = await t.inject({
      method: 'POST',
      url: '/platform/collections',
      headers: superAuth,
      payload: { name: 'Generated' },
    });
    expect(gen.json().id).toMatch(/^col_/);
    const list = await t.inject({ method: 'GET', url: '/platform/collections', headers: superAuth });
    expect(list.json().items.map((c: { id: string }) => c.id)).toEqual(expect.arrayContaining(['acme', gen.json().id]));
  });

  it('refuses bad input without writing', async () => {
    for (const payload of [{ id: 'bad id!', name: 'x' }, { name: '' }, { name: 'x', extra: 1 }, { name: 42 }]) {
      const res = await t.inject({ method: 'POST', url: '/platform/collections', headers: superAuth, payload });
      expect(res.statusCode).toBe(400);
      expect(res.json().errorCode).toBe('VALIDATION_FAILED');
    }
    const list = await t.inject({ method: 'GET', url: '/platform/collections?limit=500', headers: superAuth });
    expect(list.json().items.some((c: { name: string }) => c.name === 'x')).toBe(false);
  });

  it('is closed to collection admins, users and anonymous callers', async () => {
    const a = await collectionWithUser(t);
    for (const headers of [{}, a.auth, a.userAuth, bearer('nonsense')]) {
      const res = await t.inject({ method: 'POST', url: '/platform/collections', headers, payload: { name: 'x' } });
      expect(res.statusCode).toBe(401);
    }
  });
});

describe('admin API keys', () => {
  it('shows the key once, lists without secrets, and revokes at once', async () => {
    const a = await t.createCollection();
    const created = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/api-keys`,
      headers: a.auth,
      payload: { name: 'second' },
    });
    expect(created.statusCode).toBe(200);
    const { key, id, prefix } = created.json();
    expect(key).toMatch(/^ck_[A-Za-z0-9_-]{43}$/);
    expect(key.startsWith(prefix)).toBe(true);
    const list = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/api-keys`, headers: bearer(key) });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(key);
    expect(list.json().items).toHaveLength(2);
    // Both header forms work.
    const viaHeader = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/api-keys`,
      headers: { 'x-api-key': key },
    });
    expect(viaHeader.statusCode).toBe(200);
    const revoked = await t.inject({
      method: 'DELETE',
      url: `/admin/collection/${a.id}/api-keys/${id}`,
      headers: a.auth,
    });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().revokedAt).toBeTruthy();
    const after = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/api-keys`, headers: bearer(key) });
    expect(after.statusCode).toBe(401);
    expect(after.json().errorCode).toBe('UNAUTHORIZED');
  });

  it('never serves another collection', async () => {
    const { a, b } = await twoCollections(t);
    const list = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/api-keys`, headers: b.auth });
    expect(list.statusCode).toBe(401);
    expect(list.json().errorCode).toBe('FORBIDDEN');
    const keys = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/api-keys`, headers: a.auth });
    const victim = keys.json().items[0].id;
    const revoke = await t.inject({
      method: 'DELETE',
      url: `/admin/collection/${b.id}/api-keys/${victim}`,
      headers: b.auth,
    });
    expect(revoke.statusCode).toBe(404);
    const stillWorks = await t.inject({ method: 'GET', url: `/admin/collection/${a.id}/api-keys`, headers: a.auth });
    expect(stillWorks.statusCode).toBe(200);
  });

  it('answers 404 to the super admin for a collection that does not exist', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/admin/collection/nope/api-keys',
      headers: superAuth,
      payload: { name: 'x' },
    });
    expect(res.statusCode).toBe(404);
  });
});

describe('user tokens', () => {
  it('issues a token that is valid for its collection only, and never as an admin', async () => {
    const a = await t.createCollection();
    const b = await t.createCollection();
    const res = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/user-tokens`,
      headers: a.auth,
      payload: { userId: 'u1', contactId: 'c1', ttlSeconds: 120 },
    });
    expect(res.statusCode).toBe(200);
    const { token, expiresAt } = res.json();
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(100_000);
    const asAdmin = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/api-keys`,
      headers: bearer(token),
    });
    expect(asAdmin.statusCode).toBe(401);
    const other = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/user-tokens`,
      headers: b.auth,
      payload: { userId: 'u' },
    });
    expect(other.statusCode).toBe(401);
    const tampered = `${token.slice(0, -2)}xx`;
    const bad = await t.inject({
      method: 'GET',
      url: `/public/collection/${a.id}/location/none`,
      headers: bearer(tampered),
    });
    expect(bad.statusCode).toBe(401);
    const badTtl = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/user-tokens`,
      headers: a.auth,
      payload: { userId: 'u', ttlSeconds: 1 },
    });
    expect(badTtl.statusCode).toBe(400);
  });

  it('refuses a super admin key that is only a prefix of the real one', async () => {
    const res = await t.inject({
      method: 'GET',
      url: '/platform/collections',
      headers: bearer(SUPER_KEY.slice(0, -1)),
    });
    expect(res.statusCode).toBe(401);
  });
});
