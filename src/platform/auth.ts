/**
 * Who is calling. A credential arrives as `Authorization: Bearer <credential>` or
 * `X-API-Key: <key>` and is turned into a Principal once per request, before the route's
 * guard runs. A credential that is present but not valid is refused on every route, public
 * ones included: a client with a broken key should hear about it, not be served as anonymous.
 *
 * Failed authentications are counted per client address (`AuthFailureBudget`): an address
 * over its budget is refused with 429 before its credential is looked up, so guessing keys
 * costs the guesser, not the database.
 *
 * Guards answer 401 for both "who are you?" (UNAUTHORIZED) and "not you" (FORBIDDEN): the
 * interface clients are built against specifies 401 for both (docs/auth.md); errorCode tells
 * the two apart.
 */
import { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, notFound, notPermitted, unauthorized } from './errors.ts';

export type Principal =
  | { kind: 'super'; features: ReadonlySet<string> }
  | { kind: 'admin'; collectionId: string; keyId: string }
  | { kind: 'user'; collectionId: string; userId: string; contactId: string }
  | { kind: 'anonymous' };

export type SuperPrincipal = Extract<Principal, { kind: 'super' }>;
export type AdminPrincipal = Extract<Principal, { kind: 'admin' }>;
export type UserPrincipal = Extract<Principal, { kind: 'user' }>;

/** What a caller is allowed to be inside one collection. */
export type Caller =
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
    caller: Caller;
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

/**
 * The address a client is counted under: the request's address (the X-Forwarded-For client
 * when the peer is a trusted proxy, see TRUSTED_PROXIES), an IPv6 address by its /64, since
 * one host commonly holds a whole /64.
 */
export const clientKey = (req: Pick<FastifyRequest, 'ip'>): string => normalizeIP(req.ip);

/**
 * The rate-limit bucket of a request, from its *verified* principal: the raw credential text
 * would give every variant of a token (or every guessed key) a fresh bucket. Runs after the
 * auth hook (route-level onRequest hooks follow the global ones), so `req.principal` is set.
 */
export function rateLimitKey(req: FastifyRequest): string {
  const p = req.principal;
  switch (p?.kind) {
    case 'super':
      return 'super';
    case 'admin':
      return `key:${p.keyId}`;
    case 'user':
      return `user:${p.collectionId}:${p.userId}`;
    default:
      return `ip:${clientKey(req)}`;
  }
}

/**
 * Failed authentications counted across processes (Redis, platform/rate-limit.ts): `add`
 * counts one failure of an address and resolves to its failures in the shared window (which
 * starts with its first failure) and the time left in it, or to undefined when the shared
 * count cannot be reached. It never rejects.
 */
export interface SharedFailureCount {
  add(address: string, windowMs: number): Promise<{ failures: number; ttlMs: number } | undefined>;
}

interface AddressFailures {
  failures: number;
  /** When the window that began with this address's first counted failure ends. */
  windowEnd: number;
  /** Credentials of this address being looked up now, each with its number of requests. */
  pending: Map<string, number>;
}

/**
 * Failed authentications per client address in a fixed window (AUTH_FAILURE_LIMIT per
 * AUTH_FAILURE_WINDOW_MS), in memory per process. A lookup in progress counts against the
 * budget until it ends, so a burst of concurrent guesses cannot all pass the check before
 * the first of them fails; it counts once per distinct credential, so a client sending many
 * requests with its one (valid) credential at once is never refused for it.
 *
 * With a shared count (Redis, when several processes serve one address), each failure is
 * also added there, and its answer (the address's failures in the shared window) raises this
 * process's count. Only failures pay that round trip, not every request: the check before a
 * lookup stays in memory, so a process learns of failures made elsewhere at its own next
 * failure of that address. A guesser sending guesses one after another over N processes
 * thus gets the budget plus at most one lookup per other process, instead of N budgets (a
 * parallel burst to a process that has not seen the address fail yet can take up to the
 * budget there). Without an answer (Redis away), the local count stands: fail open.
 *
 * An address's entry stays after its lookups end (every credentialed request passes here,
 * and reusing the entry costs no allocation); idle entries are dropped when the table is full.
 */
export class AuthFailureBudget {
  private readonly addresses = new Map<string, AddressFailures>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    /** Addresses remembered at most; see `evict`. */
    private readonly maxAddresses = 50_000,
    /** Where failures are counted across processes, if anywhere. */
    private readonly shared?: SharedFailureCount,
  ) {}

  /**
   * Called before a credential is looked up: 0 when the lookup may go ahead (and is then
   * counted until `end`), else the seconds until this address may try again.
   */
  begin(address: string, credential: string): number {
    // The clock is read only where a failure was counted: it is not free, and this runs on
    // every request that carries a credential.
    let entry = this.addresses.get(address);
    if (!entry) {
      if (this.addresses.size >= this.maxAddresses) this.evict(Date.now());
      entry = { failures: 0, windowEnd: 0, pending: new Map() };
      this.addresses.set(address, entry);
    } else if (entry.failures > 0 && entry.windowEnd <= Date.now()) {
      entry.failures = 0;
    }
    const same = entry.pending.get(credential);
    // Over budget: refused. At the edge of it: a credential already being looked up may wait
    // for that lookup, a new one may not.
    if (entry.failures >= this.limit || (same === undefined && entry.failures + entry.pending.size >= this.limit)) {
      return Math.max(1, Math.ceil((entry.windowEnd - Date.now()) / 1000));
    }
    entry.pending.set(credential, (same ?? 0) + 1);
    return 0;
  }

  /**
   * Called when the lookup `begin` allowed has ended; `failed` when the credential was not
   * valid. With a shared count, a failure returns a promise that settles once the failure is
   * counted there too (or could not be): answering the 401 after it means that the next
   * request, whichever process it reaches, is checked against a count that includes it.
   */
  end(address: string, credential: string, failed: boolean): Promise<void> | undefined {
    const entry = this.addresses.get(address);
    if (entry) {
      const same = entry.pending.get(credential) ?? 0;
      if (same <= 1) entry.pending.delete(credential);
      else entry.pending.set(credential, same - 1);
      if (failed) {
        if (entry.failures === 0) entry.windowEnd = Date.now() + this.windowMs;
        entry.failures++;
      }
    } // else evicted meanwhile
    if (!failed || !this.shared) return undefined;
    return this.shared.add(address, this.windowMs).then((counted) => {
      if (counted) this.merge(address, counted);
    });
  }

  /** The shared count of an address's failures, when it is ahead of this process's own. */
  private merge(address: string, shared: { failures: number; ttlMs: number }): void {
    const entry = this.addresses.get(address);
    if (!entry || shared.failures <= entry.failures) return; // evicted meanwhile, or nothing new
    entry.failures = shared.failures;
    entry.windowEnd = Date.now() + shared.ttlMs;
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.addresses.size;
  }

  /**
   * The table is full: idle entries (no failure in a running window, no lookup) go. If that
   * frees less than a tenth, the oldest tenth goes as well, so that a flood of addresses costs
   * a sweep per tenth of the table, not per request; those addresses' budgets start afresh.
   */
  private evict(now: number): void {
    for (const [address, entry] of this.addresses) {
      if (entry.pending.size === 0 && (entry.failures === 0 || entry.windowEnd <= now)) {
        this.addresses.delete(address);
      }
    }
    let excess = this.addresses.size - Math.floor(this.maxAddresses * 0.9);
    for (const address of this.addresses.keys()) {
      if (excess-- <= 0) break;
      this.addresses.delete(address); // Map order is insertion order: oldest first
    }
  }
}

/** A request's path without its query string (a scraper may add one to /metrics). */
const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
};

export function registerAuth(
  app: FastifyInstance,
  resolve: CredentialResolver,
  collectionExists: (collectionId: string) => Promise<boolean>,
  failures: AuthFailureBudget,
  /**
   * Paths that check a credential of their own (GET /metrics and METRICS_TOKEN): their bearer
   * token is not a platform credential, so it is neither resolved nor counted as a failure.
   */
  ownCredential: ReadonlySet<string> = new Set(),
): void {
  app.decorate('collectionExists', collectionExists);
  app.decorateRequest('principal', null as never);
  app.decorateRequest('caller', null as never);
  // onRequest, so that a call without a valid credential is refused before its body is read.
  // Callback style so that an anonymous call (every redirect) stays synchronous.
  app.addHook('onRequest', (req, reply, done) => {
    const credential = credentialOf(req);
    // Only a request with a credential pays for the second look: the redirect's never does.
    if (credential === undefined || (ownCredential.size > 0 && ownCredential.has(pathOf(req.url)))) {
      req.principal = { kind: 'anonymous' };
      return done();
    }
    // Every request that carries a credential from an address over its budget is refused,
    // a valid one included: telling them apart would take the lookup the budget protects.
    const address = clientKey(req);
    const wait = failures.begin(address, credential);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return done(
        new AppError(
          429,
          'RATE_LIMITED',
          `Too many failed authentications from this address (${failures.limit} per ${failures.windowMs / 1000} s); retry in ${wait} s`,
        ),
      );
    }
    // A failure is answered once it is counted (see AuthFailureBudget.end).
    const refuse = (message: string) => {
      const counted = failures.end(address, credential, true);
      if (counted) void counted.then(() => done(unauthorized(message)));
      else done(unauthorized(message));
    };
    if (credential.length > 4096) return refuse('The credential is not valid');
    resolve(credential).then(
      (principal) => {
        if (!principal) return refuse('The credential is not valid (unknown, revoked or expired)');
        failures.end(address, credential, false);
        req.principal = principal;
        done();
      },
      (err) => {
        // Our fault (the database), not the caller's: not counted.
        failures.end(address, credential, false);
        done(err);
      },
    );
  });
}

/**
 * A path parameter by name. Guards serve routes of every shape, so `req.params` is untyped
 * here; only an own string property counts.
 */
function pathParam(req: FastifyRequest, name: string): string | undefined {
  const params: unknown = req.params;
  if (typeof params !== 'object' || params === null || !Object.hasOwn(params, name)) return undefined;
  const value: unknown = Reflect.get(params, name);
  return typeof value === 'string' ? value : undefined;
}

function collectionIdOf(req: FastifyRequest): string {
  const id = pathParam(req, 'collectionId');
  if (!id) throw notFound('Collection');
  return id;
}

/** Admin of the collection in the path: its own admin key, or the super admin. */
export function requireCollectionAdmin(req: FastifyRequest): Caller & { role: 'admin' } {
  const p = req.principal;
  const collectionId = collectionIdOf(req);
  if (p.kind === 'anonymous') throw unauthorized();
  if (p.kind === 'super') return { role: 'admin', actorId: 'super_admin' };
  if (p.kind === 'admin' && p.collectionId === collectionId) return { role: 'admin', actorId: p.keyId };
  throw notPermitted('This credential is not an admin credential of this collection');
}

export function requireSuperAdmin(req: FastifyRequest, feature?: string): SuperPrincipal {
  const p = req.principal;
  if (p.kind === 'anonymous') throw unauthorized();
  if (p.kind !== 'super') throw notPermitted('Only the super admin may perform this operation');
  if (feature && !p.features.has(feature)) throw notPermitted(`The feature flag features.${feature} is required`);
  return p;
}

/**
 * A caller on a public route of the collection in the path: a user of that collection, an
 * admin of it (served with admin rights), or anonymous. A user token or admin key of another
 * collection is refused rather than downgraded to anonymous.
 */
export function publicCaller(req: FastifyRequest): Caller {
  const p = req.principal;
  const collectionId = collectionIdOf(req);
  switch (p.kind) {
    case 'anonymous':
      return { role: 'anonymous', actorId: null };
    case 'super':
      return { role: 'admin', actorId: 'super_admin' };
    case 'admin':
      if (p.collectionId !== collectionId) throw notPermitted('This credential belongs to another collection');
      return { role: 'admin', actorId: p.keyId };
    case 'user':
      if (p.collectionId !== collectionId) throw notPermitted('This user token belongs to another collection');
      return { role: 'user', actorId: p.userId, userId: p.userId, contactId: p.contactId };
  }
}

/** A public route that needs a signed-in user (or an admin acting for one). */
export function requireUserOrAdmin(req: FastifyRequest): Exclude<Caller, { role: 'anonymous' }> {
  const caller = publicCaller(req);
  if (caller.role === 'anonymous') throw unauthorized('A user token is required');
  return caller;
}

/** For `/{zone}/...` routes: `admin` needs an admin credential, `public` a caller as above. */
export function callerIn(req: FastifyRequest, zone: string): Caller {
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
  anyone: (req: FastifyRequest) => Promise<void>;
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
    const zone = pathParam(req, 'zone') ?? '';
    if (zone === 'admin') return guard.admin(req);
    req.caller = callerIn(req, zone);
  },
  superAdmin:
    (feature?: string) =>
    async (req: FastifyRequest): Promise<void> => {
      requireSuperAdmin(req, feature);
    },
  /**
   * Open to every caller, outside any collection (a global location, the event catalogue): there
   * is no collection to hold a credential against, so none is asked for or checked. Routes name
   * it so that every route still names its guard.
   */
  anyone: async () => {},
};
