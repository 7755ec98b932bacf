import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { notPermitted, unauthorized } from '../../platform/errors.ts';
import { errorResponses, ref, SuccessBody } from '../../platform/schemas.ts';
import { emptyBodyIsObject } from '../../platform/validation.ts';
import * as S from './webhooks.schema.ts';
import type { WebhooksService } from './webhooks.service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the webhooks guard: the collection of the calling admin API key. */
    webhookCollectionId: string;
  }
}

/**
 * `/v1/webhooks` carries no collection in its path: the collection is the one of the admin
 * API key that calls. The super admin belongs to no collection, so it is refused here.
 */
async function collectionAdminKey(req: FastifyRequest): Promise<void> {
  const p = req.principal;
  if (p.kind === 'anonymous') throw unauthorized();
  if (p.kind !== 'admin') throw notPermitted('Webhook registrations need a collection admin API key');
  req.webhookCollectionId = p.collectionId;
  req.caller = { role: 'admin', actorId: p.keyId };
}

const conflictResponse = {
  ...Type.Ref('ErrorBody'),
  description: 'Conflict: the registration is not active, or the limit is reached',
};

export const webhooksRoutes: FastifyPluginAsyncTypebox<{ service: WebhooksService }> = async (app, { service }) => {
  const registrations = service.registrations;
  app.decorateRequest('webhookCollectionId', '');
  for (const schema of [
    S.CreateWebhookBody,
    S.UpdateWebhookBody,
    S.RotateSecretBody,
    S.Webhook,
    S.WebhookList,
    S.Delivery,
    S.DeliveryPage,
    S.RecoverBody,
    S.RecoverAnswer,
    S.WebhookFilters,
    S.EventTypeList,
  ]) {
    app.addSchema(schema);
  }
  const tags = ['webhooks'];
  const webhook = { 200: ref(S.Webhook), ...errorResponses };
  const opts = { onRequest: collectionAdminKey };

  // Public, as the documentation it is: the same for every collection, and a receiver's
  // author may read it before holding a key.
  app.get(
    '/v1/webhooks/event-types',
    {
      schema: {
        tags,
        operationId: 'webhooks_eventTypes',
        summary: 'The event catalogue: every type with a description, the JSON Schema of its data and an example',
        security: [],
        response: { 200: ref(S.EventTypeList), ...errorResponses },
      },
    },
    async () => registrations.eventTypes(),
  );

  app.post(
    '/v1/webhooks',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_create',
        summary: 'Register a receiver; the answer carries the signing secret, shown only here and at rotation',
        body: ref(S.CreateWebhookBody),
        response: { ...webhook, 409: conflictResponse },
      },
    },
    async (req) => registrations.create(req.webhookCollectionId, req.body),
  );

  app.get(
    '/v1/webhooks',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_list',
        summary: 'List the collection’s webhook registrations',
        response: { 200: ref(S.WebhookList), ...errorResponses },
      },
    },
    async (req) => registrations.list(req.webhookCollectionId),
  );

  app.get(
    '/v1/webhooks/:id',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_get',
        summary: 'Fetch one registration (without its secret)',
        params: S.WebhookIdParams,
        response: webhook,
      },
    },
    async (req) => registrations.get(req.webhookCollectionId, req.params.id),
  );

  app.patch(
    '/v1/webhooks/:id',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_update',
        summary: 'Change a registration; active=true re-enables it and resets its failure count',
        params: S.WebhookIdParams,
        body: ref(S.UpdateWebhookBody),
        response: webhook,
      },
    },
    async (req) => registrations.update(req.webhookCollectionId, req.params.id, req.body),
  );

  app.delete(
    '/v1/webhooks/:id',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_delete',
        summary: 'Remove a registration, its pending deliveries and its delivery log',
        params: S.WebhookIdParams,
        response: { 200: SuccessBody, ...errorResponses },
      },
    },
    async (req) => registrations.remove(req.webhookCollectionId, req.params.id),
  );

  app.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      ...opts,
      // The body is optional: a bare POST rotates with the default grace period.
      preValidation: emptyBodyIsObject,
      schema: {
        tags,
        operationId: 'webhooks_rotateSecret',
        summary:
          'Replace the signing secret: the new one is in the answer and signs every later attempt; the replaced one keeps signing next to it for a grace period',
        params: S.WebhookIdParams,
        body: ref(S.RotateSecretBody),
        response: webhook,
      },
    },
    async (req) => registrations.rotateSecret(req.webhookCollectionId, req.params.id, req.body),
  );

  app.post(
    '/v1/webhooks/:id/test',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_test',
        summary: 'Queue a webhook.test event to this registration; follow it in its delivery log',
        params: S.WebhookIdParams,
        response: { 202: ref(S.Delivery), ...errorResponses, 409: conflictResponse },
      },
    },
    async (req, reply) => reply.code(202).send(await registrations.sendTest(req.webhookCollectionId, req.params.id)),
  );

  app.post(
    '/v1/webhooks/:id/recover',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_recover',
        summary:
          'Send again every failed or cancelled delivery created since `since` (same event ids, a fresh set of automatic retries)',
        params: S.WebhookIdParams,
        body: ref(S.RecoverBody),
        response: { 202: ref(S.RecoverAnswer), ...errorResponses, 409: conflictResponse },
      },
    },
    async (req, reply) =>
      reply
        .code(202)
        .send(await registrations.recover(req.webhookCollectionId, req.params.id, new Date(req.body.since))),
  );

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_listDeliveries',
        summary: 'The delivery log, newest first: each delivery with every attempt',
        params: S.WebhookIdParams,
        querystring: S.DeliveryListQuery,
        response: { 200: ref(S.DeliveryPage), ...errorResponses },
      },
    },
    async (req) => registrations.listDeliveries(req.webhookCollectionId, req.params.id, req.query),
  );

  app.get(
    '/v1/webhooks/:id/deliveries/:deliveryId',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_getDelivery',
        summary: 'One delivery with every attempt',
        params: S.DeliveryParams,
        response: { 200: ref(S.Delivery), ...errorResponses },
      },
    },
    async (req) => registrations.getDelivery(req.webhookCollectionId, req.params.id, req.params.deliveryId),
  );

  app.post(
    '/v1/webhooks/:id/deliveries/:deliveryId/redeliver',
    {
      ...opts,
      schema: {
        tags,
        operationId: 'webhooks_redeliver',
        summary: 'Send a delivery again (same event id), with a fresh set of automatic retries',
        params: S.DeliveryParams,
        response: { 202: ref(S.Delivery), ...errorResponses, 409: conflictResponse },
      },
    },
    async (req, reply) =>
      reply
        .code(202)
        .send(await registrations.redeliver(req.webhookCollectionId, req.params.id, req.params.deliveryId)),
  );
};
