/**
 * What was sent: a registration's delivery log and sending one delivery again; and what can be
 * sent: the public event catalogue.
 */
import type { Static } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { collectionAdminKey, keyCollection, WEBHOOK_CONFLICT } from './webhooks.routes.ts';
import * as S from './webhooks.schema.ts';
import type { WebhooksService } from './webhooks.service.ts';

const tags = ['webhooks'];

export const deliveriesRoutes = ({ registrations }: WebhooksService) => [
  defineRoute({
    method: 'GET',
    url: '/v1/webhooks/event-types',
    operationId: 'webhooks_eventTypes',
    tags,
    summary: 'The event catalogue: every type with a description, the JSON Schema of its data and an example',
    // Public, as the documentation it is: the same for every collection, and a receiver's author
    // may read it before holding a key (a credential present but not valid is still refused).
    guard: guard.anyone,
    security: [],
    response: S.EventTypeList,
    // Each entry's `schema` is a TypeBox schema, the JSON object the answer describes; its
    // interface type has no index signature, so it is not seen as the `Record` it is.
    handler: async () => registrations.eventTypes() as Static<typeof S.EventTypeList>,
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/webhooks/:id/deliveries',
    operationId: 'webhooks_listDeliveries',
    tags,
    summary: 'The delivery log, newest first: each delivery with every attempt',
    guard: collectionAdminKey,
    params: S.WebhookIdParams,
    query: S.DeliveryListQuery,
    response: S.DeliveryPage,
    handler: ({ scope, query, req }) => registrations.listDeliveries(keyCollection(req), scope.id, query),
  }),
  defineRoute({
    method: 'GET',
    url: '/v1/webhooks/:id/deliveries/:deliveryId',
    operationId: 'webhooks_getDelivery',
    tags,
    summary: 'One delivery with every attempt',
    guard: collectionAdminKey,
    params: S.DeliveryParams,
    response: S.Delivery,
    handler: ({ scope, req }) => registrations.getDelivery(keyCollection(req), scope.id, scope.deliveryId),
  }),
  defineRoute({
    method: 'POST',
    url: '/v1/webhooks/:id/deliveries/:deliveryId/redeliver',
    operationId: 'webhooks_redeliver',
    tags,
    summary: 'Send a delivery again (same event id), with a fresh set of automatic retries',
    guard: collectionAdminKey,
    params: S.DeliveryParams,
    response: S.Delivery,
    status: 202,
    conflict: WEBHOOK_CONFLICT,
    handler: ({ scope, req }) => registrations.redeliver(keyCollection(req), scope.id, scope.deliveryId),
  }),
];
