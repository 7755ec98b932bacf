/**
 * The route builders of a kind on the platform's route vocabulary (platform/routes.ts):
 * `onApp` and `onObject` fill in what every app-object route has (its tag, operationId,
 * `/{zone}/...` path and params, the zone's guard, the 413 of a route with a body) and give
 * the handler the caller as an `Actor` of its zone, and on one object its `id`.
 */
import type { TSchema } from 'typebox';
import type { Caller } from '../../../platform/auth.ts';
import { defineRoute, type Route, type RouteContext, type RouteSpec } from '../../../platform/routes.ts';
import { actorOf, adminOnly, signedIn } from './guards.ts';
import type { ObjectKind } from './kinds.ts';
import { AppParams, objectParams } from './schema.ts';

/** Routes with a body: the body limit, and the size bounds of what a write leaves (bounds.ts). */
const TOO_LARGE =
  'Payload too large: the body is over its limit, or the write would leave a reply, a section or the object past its size bound (nothing is written)';

type Part = TSchema | undefined;

/** A route of a kind: the vocabulary's, less what the kind fills in; `X` is what its handler gets besides. */
type KindRoute<P, Q, B, R extends TSchema, X> = Omit<
  RouteSpec<P, Q, B, R, false>,
  'url' | 'operationId' | 'tags' | 'guard' | 'params' | 'tooLarge' | 'analytics' | 'handler'
> & {
  /** The operationId's second half (`{plural}_{op}`). */
  op: string;
  /** After the kind's path (`/summary`), or after one object's path (`/history`). */
  path?: string;
  /** Admin only (401 for users); otherwise any signed-in caller of the zone. */
  admin?: boolean;
  handler(ctx: RouteContext<P, Q, B> & X): ReturnType<RouteSpec<P, Q, B, R, false>['handler']>;
};

/** What every app-object route's path names. */
type Scope = { zone: string } & Record<string, string>;

/** The route builders of one kind (`onApp`, `onObject`). */
export type KindRouter = ReturnType<typeof kindRouter>;

/**
 * The route builders of one kind: on the app (`.../cases/summary`), whose handlers get the
 * caller as an `actor`, or on one object, whose handlers get its `id` too.
 */
export function kindRouter<N extends string>(kind: ObjectKind, param: N) {
  const base = `/:zone/collection/:collectionId/app/:appId/${kind.plural}`;
  // P fixes the params schema, so that handlers see the path's ids typed.
  const build =
    <P extends TSchema, X>(params: P, url: string, extra: (scope: Scope, caller: Caller) => X) =>
    <Q extends Part = undefined, B extends Part = undefined, R extends TSchema = TSchema>({
      op,
      path = '',
      admin,
      handler,
      ...spec
    }: KindRoute<P, Q, B, R, X>): Route =>
      defineRoute<TSchema, Part, Part, R, false>({
        ...(spec as Omit<RouteSpec<TSchema, Part, Part, R, false>, 'url'>),
        url: url + path,
        operationId: `${kind.plural}_${op}`,
        tags: [kind.plural],
        guard: admin ? adminOnly : signedIn,
        params,
        tooLarge: spec.body ? TOO_LARGE : undefined,
        handler: (ctx) =>
          handler({ ...(ctx as unknown as RouteContext<P, Q, B>), ...extra(ctx.scope as Scope, ctx.caller) }),
      });
  return {
    onApp: build(AppParams, base, (scope, caller) => ({ actor: actorOf(caller, scope.zone) })),
    onObject: build(objectParams(param), `${base}/:${param}`, (scope, caller) => ({
      actor: actorOf(caller, scope.zone),
      id: scope[param],
    })),
  };
}
