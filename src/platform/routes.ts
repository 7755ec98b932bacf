/**
 * The one route vocabulary of every module. A route is data: method, path, operation id,
 * tags, summary, guard, its params/query/body/response schemas, the 409 and 413 it documents,
 * and whether it answers analytics (the `X-Analytics-Source` header). `registerRoutes` turns a
 * list of them into Fastify routes, so the options every route shares (the error responses,
 * the `$ref`s of named schemas, the empty-body rule, the header) are written once, here.
 *
 * Named schemas (a TypeBox schema with a `$id`) are registered by the routes that use them:
 * a route's schemas are walked, every `$id` found and every `$ref` made by `ref()` (which
 * remembers its schema, platform/schemas.ts) is added to the module's Fastify context once.
 * No module keeps a hand list of schemas to add.
 *
 * A handler receives one context: `scope` (the path's ids, typed from `params`), `query`,
 * `body`, `caller` (set by the guard) and, for what a route does with HTTP itself (status
 * codes, headers, streams), `req` and `reply`. It returns the answer, or the reply once it
 * has sent it.
 */
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  preValidationHookHandler,
} from 'fastify';
import { type Static, type TProperties, type TSchema, Type } from 'typebox';
import type { ReadSignal } from '../db/index.ts';
import { ANALYTICS_SOURCE_HEADER, type Analysed } from './analytics.ts';
import type { Caller } from './auth.ts';
import { CollectionIdParam, errorResponses, namedSchema, ref } from './schemas.ts';
import { emptyBodyIsObject } from './validation.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type SuccessStatus = 200 | 201 | 202 | 204;

/**
 * What a request part becomes for the handler: its static type, or nothing when absent
 * (`unknown` once a route is erased into the list `registerRoutes` takes).
 */
type In<S> = unknown extends S ? unknown : [S] extends [TSchema] ? Static<S> : undefined;

export interface RouteContext<P, Q, B> {
  /** The path's ids (`collectionId`, `appId`, …), as the params schema types them. */
  scope: In<P>;
  query: In<Q>;
  body: In<B>;
  /** Who calls, inside the path's collection (set by the route's guard). */
  caller: Caller;
  req: FastifyRequest;
  reply: FastifyReply;
  /**
   * `aborted` once the client has gone before its answer was sent, so that work done only for
   * that answer can stop: an analytics read is cancelled in the database
   * (platform/analytics-slots.ts). A view of the connection, looked at when asked: no
   * AbortController and no listener per request (db/stoppable.ts, ReadSignal).
   */
  readonly signal: ReadSignal;
}

/** Whether the client of `req` went away before its answer was sent. */
function clientGone(req: FastifyRequest, reply: FastifyReply): ReadSignal {
  const res = reply.raw;
  return {
    get aborted() {
      return !res.writableFinished && (res.destroyed || req.raw.socket?.destroyed === true);
    },
  };
}

/** A path id chosen by whoever stored it (a type, a journey, a link): any text, bounded. */
export const IdParam = (maxLength = 200) => Type.String({ minLength: 1, maxLength });

/** The params of a path under one collection: its `collectionId` first, then `ids`. */
export const inCollection = <P extends TProperties>(ids: P) => Type.Object({ collectionId: CollectionIdParam, ...ids });

/** The params of a path naming only its collection. */
export const CollectionParams = inCollection({});

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route only reads, though its method may be POST (RouteSpec `reads`). */
    reads?: boolean;
  }
}

/** A documented error response: the one error body with a description of its own. */
export const errorResponse = (description: string) => ({ ...Type.Ref('ErrorBody'), description });

export interface RouteSpec<P, Q, B, R extends TSchema, A extends boolean> {
  method: Method;
  /** Fastify's path form (`/admin/collection/:collectionId/...`), under BASE_PATH. */
  url: string;
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  /** Who may call (platform/auth.ts `guard.*`); every route names one. */
  guard: onRequestHookHandler;
  params?: P;
  query?: Q;
  body?: B;
  /** The success answer's schema; a schema with `$id` is referenced and registered. */
  response: R;
  /** The success status (200 unless given). */
  status?: SuccessStatus;
  /** Documents a 409 with what the conflict is. */
  conflict?: string;
  /** Documents a 413 with what is too large. */
  tooLarge?: string;
  /** Other documented responses (a 401 or 409 that says more than the common ones, a 503). */
  responses?: Record<number, unknown>;
  /** A missing body counts as `{}` (bodies whose fields are all optional). */
  emptyBody?: boolean;
  /**
   * The handler answers `{answer, source}` (platform/analytics.ts): the answer is sent and the
   * source goes to `X-Analytics-Source`.
   */
  analytics?: A;
  /**
   * A POST that only reads (a query whose filters travel in a body), as every `analytics` route:
   * it does not keep its collection's reads on the primary as a write does (db/client.ts, `Db.read`).
   */
  reads?: boolean;
  /** Left out of the OpenAPI document. */
  hide?: boolean;
  /** The document's security for this route; `[]`: it needs no credential (public routes). */
  security?: Record<string, string[]>[];
  /** Fastify route config (e.g. `{ rateLimit: false }`). */
  config?: Record<string, unknown>;
  /** Extra hooks that run before validation (e.g. reading a raw body). */
  preValidation?: preValidationHookHandler;
  handler(
    ctx: RouteContext<P, Q, B>,
  ): Promise<(A extends true ? Analysed<Static<R>> : Static<R>) | FastifyReply | undefined>;
}

/** A route, typed from its own schemas (the list `registerRoutes` takes erases them). */
export type Route = RouteSpec<unknown, unknown, unknown, TSchema, boolean>;

export const defineRoute = <
  P extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  B extends TSchema | undefined = undefined,
  R extends TSchema = TSchema,
  A extends boolean = false,
>(
  spec: RouteSpec<P, Q, B, R, A>,
): Route => spec as unknown as Route;

/** A schema with a `$id` as a reference to it (one component in the OpenAPI document). */
const asRef = (schema: unknown): unknown =>
  typeof (schema as { $id?: unknown } | undefined)?.$id === 'string' ? ref(schema as TSchema) : schema;

/**
 * Adds every named schema a route's schemas reach, once per context: those with a `$id`
 * inside them and those a `$ref` names (and what they reach in turn).
 */
function registerNamed(app: FastifyInstance, schema: unknown, seen = new Set<object>()): void {
  if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
  seen.add(schema);
  const node = schema as { $id?: unknown; $ref?: unknown };
  if (typeof node.$id === 'string' && !app.getSchema(node.$id)) app.addSchema(node);
  if (typeof node.$ref === 'string') {
    const target = namedSchema(node.$ref);
    if (target) registerNamed(app, target, seen);
  }
  for (const value of Object.values(schema)) registerNamed(app, value, seen);
}

/** Leaves out the parts a route does not have (fastify warns about an undefined `body`). */
const present = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/** A route's Fastify schema: its parts, named schemas as references, and every documented response. */
function routeSchema(r: Route) {
  const status = r.status ?? 200;
  return present({
    tags: r.tags,
    operationId: r.operationId,
    summary: r.summary,
    description: r.description,
    hide: r.hide,
    security: r.security,
    params: r.params,
    querystring: r.query,
    body: asRef(r.body),
    response: {
      [status]: status === 204 ? { type: 'null', description: 'No content' } : asRef(r.response),
      ...errorResponses,
      ...(r.conflict ? { 409: errorResponse(r.conflict) } : {}),
      ...(r.tooLarge ? { 413: errorResponse(r.tooLarge) } : {}),
      ...r.responses,
    },
  });
}

/** Registers the routes on the modules' Fastify context. */
export function registerRoutes(app: FastifyInstance, routes: readonly Route[]): void {
  const schemas = routes.map(routeSchema);
  // Every named schema first, then the routes: the validators and serializers are compiled
  // against the context's set of named schemas (platform/validation.ts keys its caches by that
  // set), so a set that grew between routes would build a new Ajv for each route.
  const seen = new Set<object>();
  for (const schema of schemas) registerNamed(app, schema, seen);
  routes.forEach((r, i) => {
    const schema = schemas[i];
    const preValidation = [r.emptyBody ? emptyBodyIsObject : undefined, r.preValidation].filter((h) => h !== undefined);
    app.route({
      method: r.method,
      url: r.url,
      onRequest: r.guard,
      ...(preValidation.length > 0 ? { preValidation } : {}),
      ...(r.config || r.reads || r.analytics
        ? { config: { ...r.config, reads: Boolean(r.reads || r.analytics) } }
        : {}),
      schema,
      handler: async (req, reply) => {
        const out = await r.handler({
          scope: req.params,
          query: req.query,
          body: req.body,
          caller: req.caller,
          req,
          reply,
          signal: clientGone(req, reply),
        });
        if (out === reply) return reply;
        if (r.status) reply.code(r.status);
        if (r.analytics) {
          const { answer, source } = out as Analysed<unknown>;
          reply.header(ANALYTICS_SOURCE_HEADER, source);
          return answer;
        }
        return out;
      },
    });
  });
}
