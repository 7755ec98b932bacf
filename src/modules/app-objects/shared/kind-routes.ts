/**
 * The six routes every kind has (create, list, aggregate, get, PATCH, delete) on both zones,
 * under `/{zone}/collection/{collectionId}/app/{appId}/{plural}`, with operationIds
 * `{plural}_create|list|aggregate|get|update|delete`, built from the kind's description.
 * A kind's routes file describes itself (schemas and wording) and adds only its own routes,
 * built with the kind's `kindRouter` (kind-router.ts), which it is handed.
 */
import type { Static, TSchema } from 'typebox';
import type { Route } from '../../../platform/routes.ts';
import type { AggregateRequest as AggregateBody } from './aggregate.ts';
import { type KindRouter, kindRouter } from './kind-router.ts';
import type { ObjectKind } from './kinds.ts';
import { AggregateRequest, AggregateResponse, listOf, SuccessResponse } from './schema.ts';
import type { Actor } from './sections.ts';

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

/** The six common routes of a kind, then its `own` routes, built with the kind's router. */
export function kindRoutes<O extends TSchema, C extends TSchema, U extends TSchema, Q extends TSchema>(
  d: KindDescription<O, C, U, Q>,
  service: KindOperations<Static<C>, Static<U>, Static<Q>>,
  own: (router: KindRouter) => Route[] = () => [],
): Route[] {
  const router = kindRouter(d.kind, d.param);
  const { onApp, onObject } = router;
  const { summaries: s, conflicts = {} } = d;
  const { object, create, update, listQuery } = d.schemas;
  // The service takes and answers what the kind's schemas describe; generic types cannot say so.
  const answer = (p: Promise<unknown>) => p as Promise<never>;
  return [
    onApp({
      method: 'POST',
      op: 'create',
      summary: s.create,
      body: create,
      response: object,
      conflict: conflicts.create,
      handler: ({ scope, actor, body }) =>
        answer(service.create(scope.collectionId, scope.appId, actor, body as never)),
    }),
    onApp({
      method: 'GET',
      op: 'list',
      summary: s.list,
      query: listQuery,
      response: listOf(object),
      handler: ({ scope, actor, query }) =>
        answer(service.list(scope.collectionId, scope.appId, actor, query as never)),
    }),
    onApp({
      method: 'POST',
      op: 'aggregate',
      path: '/aggregate',
      summary: s.aggregate,
      emptyBody: true,
      body: AggregateRequest,
      response: AggregateResponse,
      handler: ({ scope, actor, body }) => answer(service.aggregate(scope.collectionId, scope.appId, actor, body)),
    }),
    onObject({
      method: 'GET',
      op: 'get',
      summary: s.get,
      response: object,
      handler: ({ scope, actor, id }) => answer(service.get(scope.collectionId, scope.appId, id, actor)),
    }),
    onObject({
      method: 'PATCH',
      op: 'update',
      summary: s.update,
      body: update,
      response: object,
      conflict: conflicts.update,
      handler: ({ scope, actor, id, body }) =>
        answer(service.patch(scope.collectionId, scope.appId, id, actor, body as never)),
    }),
    onObject({
      method: 'DELETE',
      op: 'delete',
      summary: s.delete,
      response: SuccessResponse,
      handler: ({ scope, actor, id }) => service.delete(scope.collectionId, scope.appId, id, actor),
    }),
    ...own(router),
  ];
}
