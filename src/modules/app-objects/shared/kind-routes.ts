/**
 * The HTTP face of a kind, built from its description: one factory registers the six routes
 * every kind has (create, list, aggregate, get, PATCH, delete) on both zones, under
 * `/{zone}/collection/{collectionId}/app/{appId}/{plural}`, with operationIds
 * `{plural}_create|list|aggregate|get|update|delete`. A kind's routes file describes itself
 * (schemas and wording) and adds only its own routes, with `appRoute` / `objectRoute` for
 * the options every app-object route shares (tags, operationId, guard, params, errors).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static, TSchema } from 'typebox';
import { errorResponses, ref } from '../../../platform/schemas.ts';
import { emptyBodyIsObject } from '../../../platform/validation.ts';
import type { AggregateRequest as AggregateBody } from './aggregate.ts';
import { actorOf, adminOnly, signedIn } from './guards.ts';
import type { ObjectKind } from './kinds.ts';
import { AggregateRequest, AggregateResponse, AppParams, listOf, objectParams, SuccessResponse } from './schema.ts';
import type { Actor } from './sections.ts';

type App = Parameters<FastifyPluginAsyncTypebox>[0];

/**
 * What the type provider makes of a schema in a request (fastify's own resolution, spelled the
 * same way so that it matches inside the generic factory and resolves to `Static<S>` outside).
 */
type In<S> = [S extends TSchema ? Static<S> : unknown] extends [undefined]
  ? unknown
  : S extends TSchema
    ? Static<S>
    : unknown;

/** The common operations of a kind's service, given what its routes receive. */
export interface KindOperations<C, U, Q> {
  create(collectionId: string, appId: string, caller: Actor, input: C): Promise<unknown>;
  list(collectionId: string, appId: string, caller: Actor, query: Q): Promise<unknown>;
  aggregate(collectionId: string, appId: string, caller: Actor, body: AggregateBody): Promise<unknown>;
  get(collectionId: string, appId: string, id: string, caller: Actor): Promise<unknown>;
  patch(collectionId: string, appId: string, id: string, caller: Actor, body: U): Promise<unknown>;
  delete(collectionId: string, appId: string, id: string, caller: Actor): Promise<{ success: true }>;
}

/** What a kind's routes are built from: its rules, schemas and wording. */
export interface KindDescription<O extends TSchema, C extends TSchema, U extends TSchema, Q extends TSchema> {
  kind: ObjectKind;
  /** The path parameter naming one object, e.g. `caseId`. */
  param: string;
  schemas: { object: O; create: C; update: U; listQuery: Q };
  /** The summary of each common route in the OpenAPI document. */
  summaries: Record<'create' | 'list' | 'aggregate' | 'get' | 'update' | 'delete', string>;
  /** The common writes that can answer 409, with what the conflict is. */
  conflicts?: Partial<Record<'create' | 'update', string>>;
}

/** A documented 409: the error body, with a description of its own. */
export const conflictResponse = (description: string) => ({ 409: { ...errorResponses[400], description } });

/** Routes with a body: the body limit, and the size bounds of what a write leaves (bounds.ts). */
const TOO_LARGE = {
  413: {
    ...errorResponses[400],
    description:
      'Payload too large: the body is over its limit, or the write would leave a reply, a section or the object past its size bound (nothing is written)',
  },
};

interface RouteSpec<B, R extends TSchema, Q = undefined> {
  /** The operationId's second half (`{plural}_{op}`). */
  op: string;
  summary: string;
  /** Admin only (401 for users); otherwise any signed-in caller. */
  admin?: boolean;
  /** A missing body counts as `{}` (bodies whose fields are all optional). */
  emptyBody?: boolean;
  body?: B;
  query?: Q;
  response: R;
  /** Documents a 409 with this description. */
  conflict?: string;
}

/**
 * The schema without the parts a route does not have: fastify warns about a `body` or
 * `querystring` key that is present but undefined. The type keeps them (as `undefined`).
 */
const withoutAbsent = <T extends object>(schema: T): T =>
  Object.fromEntries(Object.entries(schema).filter(([, v]) => v !== undefined)) as T;

function options<P extends TSchema, B, R extends TSchema, Q>(kind: ObjectKind, params: P, o: RouteSpec<B, R, Q>) {
  return {
    onRequest: o.admin ? adminOnly : signedIn,
    ...(o.emptyBody ? { preValidation: emptyBodyIsObject } : {}),
    schema: withoutAbsent({
      tags: [kind.plural],
      operationId: `${kind.plural}_${o.op}`,
      summary: o.summary,
      params,
      body: o.body as B,
      querystring: o.query as Q,
      response: {
        200: o.response,
        ...errorResponses,
        ...(o.conflict ? conflictResponse(o.conflict) : {}),
        ...(o.body ? TOO_LARGE : {}),
      },
    }),
  };
}

/** Paths and route options of a kind: on the app (`.../cases/summary`) or on one object. */
export function kindPaths(kind: ObjectKind, param: string) {
  const base = `/:zone/collection/:collectionId/app/:appId/${kind.plural}`;
  const ObjectParams = objectParams(param);
  return {
    base,
    one: `${base}/:${param}`,
    appRoute: <B, R extends TSchema, Q = undefined>(o: RouteSpec<B, R, Q>) => options(kind, AppParams, o),
    objectRoute: <B, R extends TSchema, Q = undefined>(o: RouteSpec<B, R, Q>) => options(kind, ObjectParams, o),
    /** The id of the object a route on one object names. */
    idOf: (req: { params: Record<string, string> }) => req.params[param],
  };
}

/** Registers the six common routes of a kind. */
export function registerKindRoutes<O extends TSchema, C extends TSchema, U extends TSchema, Q extends TSchema>(
  app: App,
  d: KindDescription<O, C, U, Q>,
  service: KindOperations<In<C>, In<U>, In<Q>>,
) {
  const { base, one, appRoute, objectRoute, idOf } = kindPaths(d.kind, d.param);
  const object = ref(d.schemas.object);
  const s = d.summaries;
  const conflicts = d.conflicts ?? {};

  app.post(
    base,
    appRoute({
      op: 'create',
      summary: s.create,
      body: ref(d.schemas.create),
      response: object,
      conflict: conflicts.create,
    }),
    async (req) => service.create(req.params.collectionId, req.params.appId, actorOf(req), req.body),
  );
  app.get(
    base,
    appRoute({ op: 'list', summary: s.list, query: d.schemas.listQuery, response: listOf(d.schemas.object) }),
    async (req) => service.list(req.params.collectionId, req.params.appId, actorOf(req), req.query),
  );
  app.post(
    `${base}/aggregate`,
    appRoute({
      op: 'aggregate',
      summary: s.aggregate,
      emptyBody: true,
      body: ref(AggregateRequest),
      response: ref(AggregateResponse),
    }),
    async (req) => service.aggregate(req.params.collectionId, req.params.appId, actorOf(req), req.body),
  );
  app.get(one, objectRoute({ op: 'get', summary: s.get, response: object }), async (req) =>
    service.get(req.params.collectionId, req.params.appId, idOf(req), actorOf(req)),
  );
  app.patch(
    one,
    objectRoute({
      op: 'update',
      summary: s.update,
      body: ref(d.schemas.update),
      response: object,
      conflict: conflicts.update,
    }),
    async (req) => service.patch(req.params.collectionId, req.params.appId, idOf(req), actorOf(req), req.body),
  );
  app.delete(one, objectRoute({ op: 'delete', summary: s.delete, response: SuccessResponse }), async (req) =>
    service.delete(req.params.collectionId, req.params.appId, idOf(req), actorOf(req)),
  );
}
