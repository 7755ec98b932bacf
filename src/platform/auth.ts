/**
 * Who is calling. A credential arrives as `Authorization: Bearer <credential>` or
 * `X-API-Key: <key>` and is turned into a Principal once per request, before the route's
 * guard runs. A credential that is present but not valid is refused on every route, public
 * ones included: a client with a broken key should hear about it, not be served as anonymous.
 *
 * Guards answer 401 for both "who are you?" (UNAUTHORIZED) and "not you" (FORBIDDEN), as
 * the seed asks; errorCode tells the two apart.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden, notFound, unauthorized } from './errors.ts';

export type Principal =
  | { kind: 'super'; features: ReadonlySet<string> }
  | { kind: 'admin'; collectionId: string; keyId: string }
  | { kind: 'user'; collectionId: string; userId: string; contactId: string }
  | { kind: 'anonymous' };

export type SuperPrincipal = Extract<Principal, { kind: 'super' }>;
export type AdminPrincipal = Extract<Principal, { kind: 'admin' }>;
export type UserPrincipal = Extract<Principal, { kind: 'user' }>;

/** What a caller is allowed to be inside one collection. */
export type CollectionCaller =
  | { role: 'admin'; actorId: string }
  | { role: 'user'; actorId: string; userId: string; contactId: string }
  | { role: 'anonymous'; actorId: null };

/** Turns a raw credential into a principal, or null when it is not valid. */
export type CredentialResolver = (credential: string) => Promise<Principal | null>;

declare module 'fastify' {
  interface FastifyInstance {
    collectionExists(collectionId: string): Promise<boolean>;
  }
  interface FastifyRequest {
    principal: Principal;
    /** Set by a collection guard: the caller's role inside the path's collection. */
    caller: CollectionCaller;
  }
}

export function credentialOf(req: Pick<FastifyRequest, 'headers'>): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && auth.length > 0) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? m[1] : auth; // a malformed scheme still counts as "a credential was sent"
  }
  const key = req.headers['x-api-key'];
  if (typeof key === 'string' && key.length > 0) return key;
  return undefined;
}

export function registerAuth(
  app: FastifyInstance,
  resolve: CredentialResolver,
  collectionExists: (collectionId: string) => Promise<boolean>,
): void {
  app.decorate('collectionExists', collectionExists);
  app.decorateRequest('principal', null as never);
  app.decorateRequest('caller', null as never);
  // onRequest, so that a call without a valid credential is refused before its body is read.
  // Callback style so that an anonymous call (every redirect) stays synchronous.
  app.addHook('onRequest', (req, _reply, done) => {
    const credential = credentialOf(req);
    if (credential === undefined) {
      req.principal = { kind: 'anonymous' };
      return done();
    }
    if (credential.length > 4096) return done(unauthorized('The credential is not valid'));
    resolve(credential).then((principal) => {
      if (!principal) return done(unauthorized('The credential is not valid (unknown, revoked or expired)'));
      req.principal = principal;
      done();
    }, done);
  });
}

function collectionIdOf(req: FastifyRequest): string {
  const id = (req.params as { collectionId?: string } | undefined)?.collectionId;
  if (!id) throw notFound('Collection');
  return id;
}

/** Admin of the collection in the path: its own admin key, or the super admin. */
export function requireCollectionAdmin(req: FastifyRequest): CollectionCaller & { role: 'admin' } {
  const p = req.principal;
  const collectionId = collectionIdOf(req);
  if (p.kind === 'anonymous') throw unauthorized();
  if (p.kind === 'super') return { role: 'admin', actorId: 'super_admin' };
  if (p.kind === 'admin' && p.collectionId === collectionId) return { role: 'admin', actorId: p.keyId };
  throw forbidden('This credential is not an admin credential of this collection');
}

export function requireSuperAdmin(req: FastifyRequest, feature?: string): SuperPrincipal {
  const p = req.principal;
  if (p.kind === 'anonymous') throw unauthorized();
  if (p.kind !== 'super') throw forbidden('Only the super admin may perform this operation');
  if (feature && !p.features.has(feature)) throw forbidden(`The feature flag features.${feature} is required`);
  return p;
}

/**
 * A caller on a public route of the collection in the path: a user of that collection, an
 * admin of it (served with admin rights), or anonymous. A user token or admin key of another
 * collection is refused rather than downgraded to anonymous.
 */
export function publicCaller(req: FastifyRequest): CollectionCaller {
  const p = req.principal;
  const collectionId = collectionIdOf(req);
  switch (p.kind) {
    case 'anonymous':
      return { role: 'anonymous', actorId: null };
    case 'super':
      return { role: 'admin', actorId: 'super_admin' };
    case 'admin':
      if (p.collectionId !== collectionId) throw forbidden('This credential belongs to another collection');
      return { role: 'admin', actorId: p.keyId };
    case 'user':
      if (p.collectionId !== collectionId) throw forbidden('This user token belongs to another collection');
      return { role: 'user', actorId: p.userId, userId: p.userId, contactId: p.contactId };
  }
}

/** A public route that needs a signed-in user (or an admin acting for one). */
export function requireUserOrAdmin(req: FastifyRequest): Exclude<CollectionCaller, { role: 'anonymous' }> {
  const caller = publicCaller(req);
  if (caller.role === 'anonymous') throw unauthorized('A user token is required');
  return caller;
}

/** For `/{zone}/...` routes: `admin` needs an admin credential, `public` a caller as above. */
export function zoneCaller(req: FastifyRequest, zone: string): CollectionCaller {
  if (zone === 'admin') return requireCollectionAdmin(req);
  if (zone === 'public') return publicCaller(req);
  throw notFound('Zone');
}

/**
 * Route-level `onRequest` guards. Each stores `req.caller`, so handlers read the caller
 * without re-deriving it: `{ onRequest: guard.admin }`.
 */
export const guard: {
  admin: (req: FastifyRequest) => Promise<void>;
  public: (req: FastifyRequest) => Promise<void>;
  user: (req: FastifyRequest) => Promise<void>;
  zone: (req: FastifyRequest) => Promise<void>;
  superAdmin: (feature?: string) => (req: FastifyRequest) => Promise<void>;
} = {
  admin: async (req: FastifyRequest) => {
    req.caller = requireCollectionAdmin(req);
    // A collection key proves its collection exists; the super admin's does not.
    if (req.principal.kind === 'super' && !(await req.server.collectionExists(collectionIdOf(req)))) {
      throw notFound('Collection');
    }
  },
  public: async (req: FastifyRequest) => {
    req.caller = publicCaller(req);
  },
  user: async (req: FastifyRequest) => {
    req.caller = requireUserOrAdmin(req);
  },
  zone: async (req: FastifyRequest) => {
    const zone = (req.params as { zone?: string }).zone ?? '';
    if (zone === 'admin') return guard.admin(req);
    req.caller = zoneCaller(req, zone);
  },
  superAdmin:
    (feature?: string) =>
    async (req: FastifyRequest): Promise<void> => {
      requireSuperAdmin(req, feature);
    },
};
