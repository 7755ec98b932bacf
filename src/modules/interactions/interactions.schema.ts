import { Type } from 'typebox';
import { IdParam, inCollection } from '../../platform/routes.ts';
import {
  Closed,
  Instant,
  Nullable,
  OPEN_OBJECT_MAX_PROPERTIES,
  OpenObject,
  Page,
  pageQuery,
  ref,
  Timestamp,
} from '../../platform/schemas.ts';

const Id = (description?: string) => Type.String({ minLength: 1, maxLength: 200, description });
const Text = (maxLength: number, description?: string) => Type.String({ maxLength, description });

export const IdField = Type.Union([Type.Literal('userId'), Type.Literal('contactId')], {
  description: 'Which identity counts as one recipient (default userId)',
});
export type IdField = Type.Static<typeof IdField>;

export const InteractionPermissions = Closed(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'Default true; a disabled type accepts no submits and is hidden from public reads' }),
    ),
    requireAuth: Type.Optional(Type.Boolean({ description: 'Public submits need a user token' })),
    allowPublicSubmit: Type.Optional(
      Type.Boolean({ description: 'Public submits are accepted at all (default false)' }),
    ),
    allowAnonymousSubmit: Type.Optional(Type.Boolean({ description: 'Public submits without a user token' })),
    allowedOrigins: Type.Optional(
      Type.Array(Text(300), {
        maxItems: 100,
        description:
          'Origins allowed to submit (none: any). Each entry is `*` (every origin), an origin (`https://shop.example.com`: scheme, host and port must match) or a host without a scheme (`shop.example.com`: that host over http or https, on any port unless one is given). A host written `*.example.com` matches its subdomains only. Hosts are compared whole, never as substrings',
      }),
    ),
    startAt: Type.Optional(Instant('Submits before this instant are refused; submits at it are accepted')),
    endAt: Type.Optional(
      Instant('Submits after this instant are refused; submits at it are accepted (inclusive)', 'last'),
    ),
    uniquePerUser: Type.Optional(Type.Boolean({ description: 'One event per user (optionally per window)' })),
    uniquePerUserWindowSeconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 10 * 365 * 86400, description: 'The window; 0 or absent: all time' }),
    ),
    uniqueOutcome: Type.Optional(Text(200, 'Uniqueness applies only to events with this outcome')),
    allowPublicSummary: Type.Optional(Type.Boolean({ description: 'Anyone may read counts by outcome' })),
    allowAuthenticatedSummary: Type.Optional(Type.Boolean({ description: 'Users with a token may read counts' })),
    allowOwnRead: Type.Optional(Type.Boolean({ description: 'A user may read their own events (by-user)' })),
    uniquePerAnonId: Type.Optional(Type.Boolean({ description: 'One event per anonymous id (optionally per window)' })),
    uniquePerAnonIdWindowSeconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 10 * 365 * 86400, description: 'The window; 0 or absent: all time' }),
    ),
  },
  {
    description:
      'Who may submit, how often, and who may read; absent keys take the documented defaults (docs/interactions.md)',
  },
);
export type InteractionPermissions = Type.Static<typeof InteractionPermissions>;

export const InteractionTypeRecord = Type.Object(
  {
    id: Type.String(),
    collectionId: Type.String(),
    appId: Type.String(),
    permissions: InteractionPermissions,
    data: OpenObject(),
    display: Type.Optional(OpenObject({ description: 'data.display, when set' })),
    scopes: Type.Optional(OpenObject({ description: 'data.scopes, when set' })),
    interactionType: Type.Optional(Type.String({ description: 'data.interactionType, when set' })),
    effects: Type.Optional(Type.Array(OpenObject(), { description: 'data.effects, when set' })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'InteractionTypeRecord', additionalProperties: false },
);
export type InteractionTypeRecord = Type.Static<typeof InteractionTypeRecord>;

export const InteractionTypeList = Page(InteractionTypeRecord, { $id: 'InteractionTypeList' });

export const CreateInteractionTypeBody = Closed(
  {
    id: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$',
      maxLength: 100,
      description: 'Chosen by the client, unique in the collection',
    }),
    appId: Type.String({ minLength: 1, maxLength: 100 }),
    permissions: Type.Optional(InteractionPermissions),
    data: Type.Optional(OpenObject()),
  },
  { $id: 'CreateInteractionTypeBody' },
);
export type CreateInteractionTypeBody = Type.Static<typeof CreateInteractionTypeBody>;

/** Permissions as a PATCH sends them: each key optional, `null` removes the stored key. */
export type InteractionPermissionsPatch = {
  [K in keyof InteractionPermissions]?: InteractionPermissions[K] | null;
};
// Built from InteractionPermissions, so that each key keeps its own rules (formats, bounds).
export const InteractionPermissionsPatch = Type.Unsafe<InteractionPermissionsPatch>(
  Closed(
    Object.fromEntries(
      Object.entries(InteractionPermissions.properties).map(([key, schema]) => [key, Type.Optional(Nullable(schema))]),
    ),
    {
      description:
        'Merged key by key into the stored permissions: a key given replaces that key, `null` removes it (it takes its default again), a key left out is kept',
    },
  ),
);

export const UpdateInteractionTypeBody = Closed(
  {
    appId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    permissions: Type.Optional(InteractionPermissionsPatch),
    data: Type.Optional(
      OpenObject({
        description:
          'Merged key by key into the stored data at its top level: a key given (display, effects, scopes, interactionType, any other) replaces that key whole, `null` removes it, a key left out is kept',
      }),
    ),
  },
  {
    $id: 'UpdateInteractionTypeBody',
    description:
      'permissions and data merge key by key into the stored ones (null removes a key); appId replaces the stored one',
  },
);
export type UpdateInteractionTypeBody = Type.Static<typeof UpdateInteractionTypeBody>;

export const ListTypesQuery = Closed({
  appId: Type.Optional(Text(100)),
  ...pageQuery(500, 100, 1_000_000),
});
export type ListTypesQuery = Type.Static<typeof ListTypesQuery>;

/**
 * Fields of an event body that are stored in their own columns and returned by name. Clients
 * of the original service send them all (its `InteractionEventBase`); any further field is an
 * extra, kept with the event and returned at the top level of its row (`EVENT_EXTRA_MAX_BYTES`).
 */
const eventFields = {
  collectionId: Type.Optional(Text(200, 'Must equal the collectionId of the path when given')),
  orgId: Type.Optional(Text(200, 'Stored and returned as sent; rows without one answer the collection id')),
  interactionId: Id('The interaction type'),
  appId: Type.Optional(Text(100, 'Defaults to the type’s appId; must equal it when given')),
  outcome: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  scope: Type.Optional(Text(200)),
  broadcastId: Type.Optional(Text(200)),
  journeyId: Type.Optional(Text(200, 'The journey this event belongs to (journey entry)')),
  productId: Type.Optional(Text(200, 'The product the event concerns')),
  proofId: Type.Optional(Text(200, 'The proof the event concerns')),
  variantId: Type.Optional(Text(200, 'The variant the event concerns')),
  batchId: Type.Optional(Text(200, 'The batch the event concerns')),
  source: Type.Optional(Text(200, 'Free-text tag of where the event came from, e.g. mobile, email-link')),
  eventType: Type.Optional(Text(200, 'Free-text event type')),
  metadata: Type.Optional(OpenObject({ description: '`metadata.anonId` is read as `anonId` when that is absent' })),
  clickId: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{1,100}$',
      maxLength: 100,
      description:
        'The click id a short link with trackConversions gave the destination (`pl_cid`): the event counts as a conversion of that link (docs/links.md, Attribution)',
    }),
  ),
};

/** Serialised size of an event's extra fields: they are repeated on every read of the event. */
export const EVENT_EXTRA_MAX_BYTES = 16 * 1024;
/**
 * Names of row fields the service sets: as extras they would be hidden behind the row's own
 * field on every read, so they are refused (400) rather than stored and never seen.
 */
export const SERVICE_SET_FIELDS = ['channel', 'deleted', 'interaction'] as const;
const openEvent = (description: string, serviceSet: readonly string[]) => ({
  additionalProperties: true,
  maxProperties: OPEN_OBJECT_MAX_PROPERTIES,
  description: `${description}. Further fields (up to ${EVENT_EXTRA_MAX_BYTES / 1024} KiB as JSON) are kept with the event and returned at the top level of its row; ${serviceSet.join(', ')} are set by the service and refused here`,
});

export const AppendInteractionBody = Type.Object(
  {
    ...eventFields,
    userId: Type.Optional(Id()),
    contactId: Type.Optional(Id()),
    anonId: Type.Optional(Id()),
    eventId: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_.:-]{1,200}$',
        maxLength: 200,
        description: 'Groups versions of one logical event (latestPerEventId); generated when absent',
      }),
    ),
    timestamp: Type.Optional(Instant('When the event happened (backfill); default now')),
  },
  { $id: 'AppendInteractionBody', ...openEvent('userId or contactId is required', SERVICE_SET_FIELDS) },
);
export type AppendInteractionBody = Type.Static<typeof AppendInteractionBody> & Record<string, unknown>;

export const SubmitInteractionBody = Type.Object(
  {
    ...eventFields,
    userId: Type.Optional(Id('Must equal the token’s user when given')),
    contactId: Type.Optional(Id('Must equal the token’s contact when given')),
    anonId: Type.Optional(Id('A client-generated id for anonymous submitters (uniquePerAnonId)')),
    timestamp: Type.Optional({
      ...AppendInteractionBody.properties.timestamp,
      description: 'Accepted and not used: a submitted event takes the server’s time',
    }),
  },
  {
    $id: 'SubmitInteractionBody',
    ...openEvent('The event; its identity comes from the user token', ['eventId', ...SERVICE_SET_FIELDS]),
  },
);
export type SubmitInteractionBody = Type.Static<typeof SubmitInteractionBody> & Record<string, unknown>;

export const SubmitInteractionResponse = Closed(
  { success: Type.Boolean(), eventId: Type.String() },
  { $id: 'SubmitInteractionResponse' },
);

/**
 * What an event update may change, on the latest version of the event: the fields an event is
 * described by. Its type, its actor and its time are what it is, and stay.
 */
const eventChangeFields = {
  outcome: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
  scope: Type.Optional(Nullable(Text(200))),
  broadcastId: Type.Optional(Nullable(Text(200))),
  journeyId: Type.Optional(Nullable(Text(200))),
  metadata: Type.Optional(Nullable(OpenObject({ description: 'Replaces the stored metadata whole' }))),
  orgId: Type.Optional(Nullable(Text(200))),
  productId: Type.Optional(Nullable(Text(200))),
  proofId: Type.Optional(Nullable(Text(200))),
  variantId: Type.Optional(Nullable(Text(200))),
  batchId: Type.Optional(Nullable(Text(200))),
  source: Type.Optional(Nullable(Text(200, 'The free-text source tag'))),
  eventType: Type.Optional(Nullable(Text(200))),
};
/** Names of the fields an update changes (the rest of an update body names the event). */
export const EVENT_CHANGE_FIELDS = Object.keys(eventChangeFields) as (keyof typeof eventChangeFields)[];

export const UpdateEventBody = Closed(
  {
    ...eventChangeFields,
    deleted: Type.Optional(Type.Boolean({ description: 'true marks every version deleted; false restores them' })),
  },
  {
    $id: 'UpdateInteractionEventBody',
    minProperties: 1,
    description: 'A field given replaces it on the latest version (null clears it); fields left out stay',
  },
);
export type UpdateEventBody = Type.Static<typeof UpdateEventBody>;

/**
 * The original's update call (`POST …/interactions/events/update`): one body that names the
 * event (eventId, and the type and actor it must have) and what to change. It is the original's
 * event body plus eventId and status, so it is open; the service refuses, naming them, the
 * fields an update does not change (timestamp, further fields).
 */
export const UpdateInteractionBody = Type.Object(
  {
    eventId: Type.String({ minLength: 1, maxLength: 200, description: 'The event to update' }),
    collectionId: Type.Optional(Text(200, 'Must equal the collectionId of the path when given')),
    interactionId: Id('The event’s interaction type: must be the event’s'),
    userId: Type.Optional(Id('The event’s user: must be the event’s when given')),
    contactId: Type.Optional(Id('The event’s contact: must be the event’s when given')),
    appId: Type.Optional(Text(100, 'Must be the event’s appId when given')),
    status: Type.Optional(
      Type.Union([Type.Literal('active'), Type.Literal('deleted')], {
        description: 'deleted marks every version of the event deleted; active restores them',
      }),
    ),
    ...eventChangeFields,
    timestamp: Type.Optional(
      Type.String({ maxLength: 64, description: 'Refused (400): an update does not move an event in time' }),
    ),
  },
  {
    $id: 'UpdateInteractionBody',
    additionalProperties: true,
    maxProperties: OPEN_OBJECT_MAX_PROPERTIES,
    description:
      'userId or contactId is required. The event named by eventId must have this interactionId, and the appId, userId and contactId given (else 404). Further fields are refused (400 naming the first): an update changes only the fields listed',
  },
);
export type UpdateInteractionBody = Type.Static<typeof UpdateInteractionBody> & Record<string, unknown>;

export const UpdateInteractionResponse = Closed({ success: Type.Literal(true) }, { $id: 'UpdateInteractionResponse' });

const optionalText = (description?: string) => Type.Optional(Type.String({ description }));

/**
 * An event as every read answers it. Optional fields are absent when the event has no value
 * for them (never null); fields of the body that are not listed here (extras) come back at
 * the top level, and never in place of a listed field.
 */
export const InteractionEventRow = Type.Object(
  {
    orgId: Type.String({ description: 'As sent with the event; else the collection id' }),
    collectionId: Type.String(),
    eventId: Type.String(),
    timestamp: Timestamp,
    interactionId: Type.String(),
    appId: optionalText(),
    scope: optionalText(),
    broadcastId: optionalText(),
    journeyId: optionalText(),
    userId: optionalText(),
    contactId: optionalText(),
    anonId: optionalText(),
    outcome: optionalText(),
    metadata: Type.Optional(OpenObject()),
    productId: optionalText(),
    proofId: optionalText(),
    variantId: optionalText(),
    batchId: optionalText(),
    source: optionalText('The free-text source tag sent with the event'),
    eventType: optionalText(),
    clickId: optionalText('The click id of the short-link visit the event follows (pl_cid)'),
    // An enum rather than a union of literals: the serializer picks a union's branch by
    // validating each value, on every row of a 10,000-row answer.
    channel: Type.Unsafe<'admin' | 'public'>({
      type: 'string',
      enum: ['admin', 'public'],
      description: 'How the event arrived: admin (append) or public (submit)',
    }),
    deleted: Type.Boolean(),
    interaction: Type.Optional(
      ref(InteractionTypeRecord, {
        description: 'With include: ["interaction"], the event’s type (absent if the type was removed)',
      }),
    ),
  },
  {
    $id: 'InteractionEventRow',
    additionalProperties: true,
    description: 'Further fields sent with the event are returned at the top level',
  },
);
export type InteractionEventRow = Type.Static<typeof InteractionEventRow>;

const windowFields = {
  appId: Type.Optional(Text(100)),
  interactionId: Type.Optional(Id()),
  scope: Type.Optional(Text(200)),
  from: Type.Optional(Instant('Inclusive start of the window')),
  to: Type.Optional(Instant('Exclusive end of the window', 'end')),
};

export const AdminInteractionsQueryRequest = Closed(
  {
    ...windowFields,
    userId: Type.Optional(Id()),
    contactId: Type.Optional(Id()),
    interactionIds: Type.Optional(Type.Array(Id(), { maxItems: 100 })),
    broadcastId: Type.Optional(Text(200)),
    journeyId: Type.Optional(Text(200)),
    outcome: Type.Optional(Nullable(Text(200, 'null: events without an outcome'))),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 100 })),
    includeDeleted: Type.Optional(Type.Boolean()),
    latestPerEventId: Type.Optional(Type.Boolean({ description: 'Only the latest version of each eventId' })),
    order: Type.Optional(Type.Union([Type.Literal('ASC'), Type.Literal('DESC')], { default: 'DESC' })),
    include: Type.Optional(Type.Array(Type.Literal('interaction'), { maxItems: 1 })),
  },
  { $id: 'AdminInteractionsQueryRequest' },
);
export type AdminInteractionsQueryRequest = Type.Static<typeof AdminInteractionsQueryRequest>;

export const AdminInteractionsCountsByOutcomeRequest = Closed(
  {
    ...windowFields,
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Most outcomes returned' }),
    ),
    dedupeLatest: Type.Optional(
      Type.Boolean({ description: 'Count only each identity’s latest event per interaction' }),
    ),
    idField: Type.Optional(IdField),
  },
  { $id: 'AdminInteractionsCountsByOutcomeRequest' },
);
export type AdminInteractionsCountsByOutcomeRequest = Type.Static<typeof AdminInteractionsCountsByOutcomeRequest>;

export const OutcomeCount = Closed(
  { outcome: Nullable(Type.String()), count: Type.Integer() },
  { $id: 'OutcomeCount' },
);
export type OutcomeCount = Type.Static<typeof OutcomeCount>;

const AggregateOp = Type.Union([
  Type.Literal('count'),
  Type.Literal('sum'),
  Type.Literal('avg'),
  Type.Literal('min'),
  Type.Literal('max'),
]);
export type AggregateOp = Type.Static<typeof AggregateOp>;

/** A column or a `metadata.<key>` path (letters, digits, _ and -). */
export const GROUPABLE = [
  'outcome',
  'interactionId',
  'appId',
  'scope',
  'userId',
  'contactId',
  'broadcastId',
  'journeyId',
  'day',
] as const;
const FieldPath = Type.String({ pattern: '^metadata\\.[A-Za-z0-9_-]{1,100}$', maxLength: 109 });

const AggregateField = Type.Union([FieldPath, Type.Literal('*')], {
  description: 'metadata.<key> holding a number, or * (count only)',
});
const AggregateOps = Type.Array(AggregateOp, { minItems: 1, maxItems: 5, uniqueItems: true });

export const AdminInteractionsAggregateRequest = Closed(
  {
    ...windowFields,
    interactionIds: Type.Optional(Type.Array(Id(), { maxItems: 100 })),
    outcome: Type.Optional(Nullable(Text(200, 'null: events without an outcome'))),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Most groups returned' }),
    ),
    dedupeLatest: Type.Optional(Type.Boolean()),
    idField: Type.Optional(IdField),
    groupBy: Type.Union([...GROUPABLE.map((g) => Type.Literal(g)), FieldPath], {
      description: `One of ${GROUPABLE.join(', ')} or metadata.<key>`,
    }),
    aggregate: Type.Object(
      { field: Type.Optional(AggregateField), ops: Type.Optional(AggregateOps) },
      {
        additionalProperties: true,
        maxProperties: OPEN_OBJECT_MAX_PROPERTIES,
        description:
          'Echoed back. `field` and `ops` may be given here instead of at the top level (the top-level ones win)',
      },
    ),
    field: Type.Optional(AggregateField),
    ops: Type.Optional(AggregateOps),
  },
  { $id: 'AdminInteractionsAggregateRequest', description: '`field` and `ops` are required, here or in `aggregate`' },
);
export type AdminInteractionsAggregateRequest = Type.Static<typeof AdminInteractionsAggregateRequest>;

export const AdminInteractionsAggregateRow = Closed(
  {
    groupValue: Nullable(Type.String()),
    eventCount: Type.Integer(),
    count: Type.Optional(Type.Integer({ description: 'Events whose field holds a number' })),
    sum: Type.Optional(Type.Number({ description: 'When asked for and the group has a number' })),
    avg: Type.Optional(Type.Number({ description: 'When asked for and the group has a number' })),
    min: Type.Optional(Type.Number({ description: 'When asked for and the group has a number' })),
    max: Type.Optional(Type.Number({ description: 'When asked for and the group has a number' })),
  },
  { $id: 'AdminInteractionsAggregateRow' },
);
export type AdminInteractionsAggregateRow = Type.Static<typeof AdminInteractionsAggregateRow>;

export const AdminInteractionsAggregateResponse = Closed(
  {
    groupBy: Type.String(),
    aggregate: OpenObject(),
    field: Type.String(),
    ops: Type.Array(AggregateOp),
    dedupeLatest: Type.Boolean(),
    rows: Type.Array(ref(AdminInteractionsAggregateRow)),
  },
  { $id: 'AdminInteractionsAggregateResponse' },
);
export type AdminInteractionsAggregateResponse = Type.Static<typeof AdminInteractionsAggregateResponse>;

export const PublicInteractionsByUserRequest = Closed(
  { ...windowFields, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })) },
  { $id: 'PublicInteractionsByUserRequest' },
);
export type PublicInteractionsByUserRequest = Type.Static<typeof PublicInteractionsByUserRequest>;

export const PublicInteractionsCountsByOutcomeRequest = Closed(
  {
    ...windowFields,
    appId: Text(100),
    interactionId: Id(),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { $id: 'PublicInteractionsCountsByOutcomeRequest' },
);
export type PublicInteractionsCountsByOutcomeRequest = Type.Static<typeof PublicInteractionsCountsByOutcomeRequest>;

export { CollectionParams } from '../../platform/routes.ts';
export const TypeParams = inCollection({ id: IdParam() });
export const EventParams = inCollection({ eventId: IdParam() });
export const ExportParams = inCollection({ jobId: Type.Integer({ minimum: 1 }) });

export const ExportPayload = Closed({
  format: Type.Optional(Type.Union([Type.Literal('ndjson'), Type.Literal('csv')], { default: 'ndjson' })),
  from: Type.Optional(Instant('Inclusive start')),
  to: Type.Optional(Instant('Exclusive end', 'end')),
  interactionId: Type.Optional(Id()),
  includeDeleted: Type.Optional(Type.Boolean()),
});
export type ExportPayload = Type.Static<typeof ExportPayload>;
