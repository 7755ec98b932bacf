import { Type } from 'typebox';
import { IdParam } from '../../platform/routes.ts';
import { Closed, Instant, Nullable, Page, pageQuery, ref, Timestamp } from '../../platform/schemas.ts';

/** Sent only by POST /v1/webhooks/{id}/test, to that registration, whatever it subscribes to. */
export const TEST_EVENT_TYPE = 'webhook.test';

const EventPattern = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^(\\*|[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*(\\.\\*)?)$',
  description:
    'An event type from GET /v1/webhooks/event-types (`case.updated`), a family wildcard (`case.*`), or `*` for every type',
});
const Url = Type.String({ minLength: 1, maxLength: 2000, description: 'Absolute http(s) address of the receiver' });
const Events = Type.Array(EventPattern, { minItems: 1, maxItems: 100, uniqueItems: true });
const FilterIds = (what: string) =>
  Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: `Only events about one of these ${what}`,
    }),
  );
const filterProperties = {
  appIds: FilterIds('apps'),
  linkIds: FilterIds('links'),
  interactionIds: FilterIds('interactions'),
  journeyIds: FilterIds('journeys'),
};
const filtersOptions = {
  minProperties: 1,
  description:
    'Each list given narrows the subscription to events about one of its ids; an event that is not about such an id (a case event under linkIds) is not sent. Which types each filter applies to: GET /v1/webhooks/event-types, `filterable`.',
};
/** Narrows a subscription by what its events are about (docs/webhooks.md, Subscriptions). */
export const WebhookFilters = Closed(filterProperties, { $id: 'WebhookFilters', ...filtersOptions });
/** The same, inline in request bodies (so their static types carry it). */
const FiltersBody = Closed(filterProperties, filtersOptions);
export type WebhookFilters = Type.Static<typeof WebhookFilters>;
const Description = Type.String({ maxLength: 500 });
const MaxPerSecond = Type.Integer({
  minimum: 1,
  maximum: 10_000,
  description:
    'At most this many attempts a second to the receiver, per worker process; attempts beyond it wait (not failures). null or absent: no limit',
});

export const WebhookIdParams = Type.Object({ id: IdParam(100) });
export const DeliveryParams = Type.Object({ id: IdParam(100), deliveryId: IdParam(100) });

export const CreateWebhookBody = Closed(
  {
    url: Url,
    events: Events,
    filters: Type.Optional(FiltersBody),
    active: Type.Optional(Type.Boolean({ default: true })),
    description: Type.Optional(Description),
    maxPerSecond: Type.Optional(Nullable(MaxPerSecond)),
  },
  { $id: 'CreateWebhookBody' },
);
export type CreateWebhookBody = Type.Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Closed(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    filters: Type.Optional(Type.Union([FiltersBody, Type.Null()], { description: 'null removes the filters' })),
    active: Type.Optional(
      Type.Boolean({ description: 'true re-enables a disabled registration and resets its failure count' }),
    ),
    description: Type.Optional(Nullable(Description)),
    maxPerSecond: Type.Optional(Nullable(MaxPerSecond)),
  },
  { $id: 'UpdateWebhookBody', minProperties: 1 },
);
export type UpdateWebhookBody = Type.Static<typeof UpdateWebhookBody>;

export const Webhook = Closed(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    filters: Nullable(ref(WebhookFilters)),
    active: Type.Boolean(),
    description: Nullable(Type.String()),
    maxPerSecond: Nullable(
      Type.Integer({ description: 'Attempts a second at most, per worker process; null: no limit' }),
    ),
    consecutiveFailures: Type.Integer(),
    disabledAt: Nullable(Timestamp),
    disabledReason: Nullable(Type.String()),
    secret: Type.Optional(Type.String({ description: 'The signing secret; only in the create and rotate answers' })),
    previousSecretExpiresAt: Type.Union([Timestamp, Type.Null()], {
      description:
        'Until then the secret replaced by the last rotation still signs every attempt too; null when none does',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Webhook' },
);
export type Webhook = Type.Static<typeof Webhook>;

export const RotateSecretBody = Closed(
  {
    graceSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604_800,
        description:
          'How long the replaced secret keeps signing next to the new one (default WEBHOOK_SECRET_GRACE_SECONDS, 24 h); 0 retires it at once, e.g. after a leak',
      }),
    ),
  },
  { $id: 'RotateSecretBody' },
);
export type RotateSecretBody = Type.Static<typeof RotateSecretBody>;

export const WebhookList = Closed({ items: Type.Array(ref(Webhook)) }, { $id: 'WebhookList' });

export const DeliveryAttempt = Closed({
  attempt: Type.Integer(),
  trigger: Type.String({ description: 'automatic | retry | redeliver | test' }),
  at: Timestamp,
  durationMs: Type.Integer(),
  statusCode: Nullable(Type.Integer()),
  outcome: Type.String({ description: 'succeeded | failed | refused (SSRF guard)' }),
  error: Nullable(Type.String()),
  responseExcerpt: Nullable(Type.String()),
});
export type DeliveryAttempt = Type.Static<typeof DeliveryAttempt>;

export const Delivery = Closed(
  {
    id: Type.String(),
    webhookId: Type.String(),
    eventId: Type.String(),
    eventType: Type.String(),
    status: Type.String({ description: 'pending | succeeded | failed | cancelled' }),
    attemptCount: Type.Integer(),
    nextAttemptAt: Nullable(Timestamp),
    lastStatusCode: Nullable(Type.Integer()),
    lastError: Nullable(Type.String()),
    attempts: Type.Array(DeliveryAttempt),
    payload: Type.Optional(
      Type.Object(
        {
          type: Type.String(),
          id: Type.String(),
          created_at: Type.String(),
          data: Type.Record(Type.String(), Type.Unknown()),
        },
        {
          description: 'The body every attempt sent (the event envelope); in the answer for one delivery, not in lists',
        },
      ),
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Delivery' },
);
export type Delivery = Type.Static<typeof Delivery>;

export const DeliveryListQuery = Closed({
  status: Type.Optional(
    Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('cancelled')]),
  ),
  eventType: Type.Optional(Type.String({ maxLength: 50 })),
  ...pageQuery(100, 20, 100_000),
});
export type DeliveryListQuery = Type.Static<typeof DeliveryListQuery>;

export const DeliveryPage = Page(Delivery, { $id: 'DeliveryPage', total: true });

export const EventTypeList = Closed(
  {
    items: Type.Array(
      Closed({
        type: Type.String(),
        family: Type.String({ description: 'What `family.*` subscribes to' }),
        description: Type.String(),
        schema: Type.Record(Type.String(), Type.Unknown(), { description: 'The JSON Schema of the event’s `data`' }),
        example: Type.Record(Type.String(), Type.Unknown(), { description: 'An example `data`' }),
        filterable: Type.Array(Type.String(), { description: 'The `filters` keys that narrow this type' }),
        subscribable: Type.Boolean({ description: 'false for webhook.test, sent only on request' }),
      }),
    ),
  },
  { $id: 'EventTypeList' },
);

/** Deliveries one recover queues again at most; call again for the rest. */
export const RECOVER_MAX = 10_000;

export const RecoverBody = Closed(
  { since: Instant('Failed and cancelled deliveries created at or after this instant are sent again') },
  { $id: 'RecoverWebhookBody' },
);
export type RecoverBody = Type.Static<typeof RecoverBody>;

export const RecoverAnswer = Closed(
  {
    count: Type.Integer({ description: 'Deliveries queued again' }),
    more: Type.Boolean({ description: `More remain (at most ${RECOVER_MAX} a call): call again with the same since` }),
  },
  { $id: 'RecoverWebhookAnswer' },
);
export type RecoverAnswer = Type.Static<typeof RecoverAnswer>;

/** The envelope every delivery carries, its body (docs/webhooks.md, Events). */
export interface EventEnvelope {
  type: string;
  id: string;
  created_at: string;
  data: Record<string, unknown>;
}
