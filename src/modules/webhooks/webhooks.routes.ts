/**
 * The registrations under `/v1/webhooks`: create, read, change, remove, rotate the secret, and
 * the sends asked for by hand (a test event, recovering failed deliveries). The delivery log
 * and the event catalogue are in deliveries.routes.ts.
 */
import type { FastifyRequest } from 'fastify';
import type { AdminPrincipal } from '../../platform/auth.ts';
import { notPermitted, unauthorized } from '../../platform/errors.ts';
import { defineRoute } from '../../platform/routes.ts';
import { SuccessBody } from '../../platform/schemas.ts';
import * as S from './webhooks.schema.ts';
import type { WebhooksService } from './webhooks.service.ts';

/**
 * `/v1/webhooks` carries no collection in its path: the collection is the one of the admin
 * API key that calls. The super admin belongs to no collection, so it is refused here.
 */
function adminKey(req: FastifyRequest): AdminPrincipal {
  const p = req.principal;
  if (p.kind === 'anonymous') throw unauthorized();
  if (p.kind !== 'admin') throw notPermitted('Webhook registrations need a collection admin API key');
  return p;
}

/** The guard of every `/v1/webhooks` route but the public catalogue. */
export const collectionAdminKey = async (req: FastifyRequest): Promise<void> => {
  req.caller = { role: 'admin', actorId: adminKey(req).keyId };
};

/** The calling key's collection, read in a handler, once `collectionAdminKey` has let it in. */
export const keyCollection = (req: FastifyRequest): string => adminKey(req).collectionId;

/** What the 409 of these routes means. */
export const WEBHOOK_CONFLICT = 'Conflict: the registration is not active, or the limit is reached';

const tags = ['webhooks'];

export const webhooksRoutes = ({ registrations }: WebhooksService) => [
  defineRoute({
    method: 'POST',
    url: '/v1/webhooks',
    operationId: 'webhooks_create',
    tags,
    summary: 'Register a receiver; the answer carries the signing secret, shown only here and at rotation',
    guard: collectionAdminKey,
    body: S.CreateWebhookBody,
    response: S.Webhook,
    conflict: WEBHOOK_CONFLICT,
    handler: ({ body, req }) => registrations.create(keyCollection(req), body),
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/webhooks',
    operationId: 'webhooks_list',
    tags,
    summary: 'List the collection’s webhook registrations',
    guard: collectionAdminKey,
    response: S.WebhookList,
    handler: ({ req }) => registrations.list(keyCollection(req)),
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/webhooks/:id',
    operationId: 'webhooks_get',
    tags,
    summary: 'Fetch one registration (without its secret)',
    guard: collectionAdminKey,
    params: S.WebhookIdParams,
    response: S.Webhook,
    handler: ({ scope, req }) => registrations.get(keyCollection(req), scope.id),
  }),
  defineRoute({
    method: 'PATCH',
    url: '/v1/webhooks/:id',
    operationId: 'webhooks_update',
    tags,
    summary: 'Change a registration; active=true re-enables it and resets its failure count',
    guard: collectionAdminKey,
    params: S.WebhookIdParams,
    body: S.UpdateWebhookBody,
    response: S.Webhook,
    handler: ({ scope, body, req }) => registrations.update(keyCollection(req), scope.id, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/v1/webhooks/:id',
    operationId: 'webhooks_delete',
    tags,
    summary: 'Remove a registration, its pending deliveries and its delivery log',
    guard: collectionAdminKey,
    params: S.WebhookIdParams,
    response: SuccessBody,
    handler: ({ scope, req }) => registrations.remove(keyCollection(req), scope.id),
  }),
  defineRoute({
    method: 'POST',
    url: '/v1/webhooks/:id/rotate-secret',
    operationId: 'webhooks_rotateSecret',
    tags,
    summary:
      'Replace the signing secret: the new one is in the answer and signs every later attempt; the replaced one keeps signing next to it for a grace period',
    guard: collectionAdminKey,
    params: S.WebhookIdParams,
    body: S.RotateSecretBody,
    response: S.Webhook,
    // The body is optional: a bare POST rotates with the default grace period.
    emptyBody: true,
    handler: ({ scope, body, req }) => registrations.rotateSecret(keyCollection(req), scope.id, body),
  }),
  defineRoute({
    method: 'POST',
    url: '/v1/webhooks/:id/test',
    operationId: 'webhooks_test',
    tags,
    summary: 'Queue a webhook.test event to this registration; follow it in its delivery log',
    guard: collectionAdminKey,
    params: S.WebhookIdParams,
    response: S.Delivery,
    status: 202,
    conflict: WEBHOOK_CONFLICT,
    handler: ({ scope, req }) => registrations.sendTest(keyCollection(req), scope.id),
  }),
  defineRoute({
    method: 'POST',
    url: '/v1/webhooks/:id/recover',
    operationId: 'webhooks_recover',
    tags,
    summary:
      'Send again every failed or cancelled delivery created since `since` (same event ids, a fresh set of automatic retries)',
    guard: collectionAdminKey,
    params: S.WebhookIdParams,
    body: S.RecoverBody,
    response: S.RecoverAnswer,
    status: 202,
    conflict: WEBHOOK_CONFLICT,
    handler: ({ scope, body, req }) => registrations.recover(keyCollection(req), scope.id, new Date(body.since)),
  }),
];
