import { Type } from 'typebox';
import { IdParam, inCollection } from '../../platform/routes.ts';
import { Closed, Instant, Nullable, OpenObject, Page, pageQuery, Timestamp } from '../../platform/schemas.ts';
import { IdField } from '../interactions/index.ts';

const JourneyType = Type.Union([Type.Literal('event_triggered'), Type.Literal('scheduled')]);

export const JourneyRecord = Type.Object(
  {
    id: Type.String(),
    collectionId: Type.String(),
    appId: Type.Optional(Type.String()),
    name: Type.String(),
    active: Type.Boolean(),
    journeyType: JourneyType,
    data: OpenObject(),
    display: Type.Optional(OpenObject()),
    title: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    icon: Type.Optional(Type.String()),
    color: Type.Optional(Type.String()),
    steps: Type.Optional(Type.Array(OpenObject(), { description: 'data.steps: the funnel order' })),
    triggers: Type.Optional(Type.Array(OpenObject())),
    entryRules: Type.Optional(Type.Array(Type.Unknown())),
    exitRules: Type.Optional(Type.Array(Type.Unknown())),
    metadata: Type.Optional(OpenObject()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  {
    $id: 'JourneyRecord',
    additionalProperties: false,
    description: 'Presentation fields, steps, triggers, rules and metadata are read from `data` when present there',
  },
);
export type JourneyRecord = Type.Static<typeof JourneyRecord>;

export const JourneyList = Page(JourneyRecord, { $id: 'JourneyList' });

const fields = {
  appId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  name: Type.String({ minLength: 1, maxLength: 300 }),
  active: Type.Optional(Type.Boolean({ default: true })),
  journeyType: JourneyType,
  data: Type.Optional(
    OpenObject({
      description:
        'Free-form; data.steps[] = {id, config: {interactionId, outcome}} defines the steps and their default mappings',
    }),
  ),
};

export const CreateJourneyBody = Closed(fields, { $id: 'CreateJourneyBody' });
export type CreateJourneyBody = Type.Static<typeof CreateJourneyBody>;

export const UpdateJourneyBody = Closed(
  {
    appId: Type.Optional(Nullable(fields.appId)),
    name: Type.Optional(fields.name),
    active: Type.Optional(Type.Boolean()),
    journeyType: Type.Optional(JourneyType),
    data: fields.data,
  },
  { $id: 'UpdateJourneyBody', description: 'data replaces the stored data whole' },
);
export type UpdateJourneyBody = Type.Static<typeof UpdateJourneyBody>;

export const ListJourneysQuery = Closed({
  appId: Type.Optional(Type.String({ maxLength: 100 })),
  active: Type.Optional(Type.Boolean()),
  journeyType: Type.Optional(JourneyType),
  ...pageQuery(500, 100, 1_000_000),
});
export type ListJourneysQuery = Type.Static<typeof ListJourneysQuery>;

export const StepMapping = Closed(
  {
    stepId: Type.String({ minLength: 1, maxLength: 200 }),
    interactionId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'Default: the step’s own (data.steps[].config)' }),
    ),
    outcome: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'Default success with an interactionId; without one, the step’s own outcome, else success',
      }),
    ),
  },
  { description: 'A step named without interactionId keeps the journey’s own interaction for it' },
);
export type StepMapping = Type.Static<typeof StepMapping>;
const StepMappings = Type.Array(StepMapping, { maxItems: 50 });

export const JourneyFunnelReportRequest = Closed(
  {
    idField: Type.Optional(IdField),
    periodStart: Type.Optional(Instant('Inclusive start of the period')),
    periodEnd: Type.Optional(Instant('Exclusive end of the period', 'end')),
    stepMappings: StepMappings,
  },
  { $id: 'JourneyFunnelReportRequest', description: 'An empty stepMappings uses the journey’s own step mappings' },
);
export type JourneyFunnelReportRequest = Type.Static<typeof JourneyFunnelReportRequest>;

export const FunnelStep = Closed({
  stepId: Type.String(),
  interactionId: Type.String(),
  outcome: Type.String(),
  enteredCount: Type.Integer(),
  completedCount: Type.Integer(),
  conversionRate: Type.Number({ description: 'completedCount / enteredCount, 0 when none entered' }),
  avgTimeToComplete: Nullable(Type.Number({ description: 'Seconds from entering to completing; null when none' })),
});
export type FunnelStep = Type.Static<typeof FunnelStep>;

export const JourneyFunnelReportResponse = Closed(
  {
    journeyId: Type.String(),
    periodStart: Nullable(Timestamp),
    periodEnd: Nullable(Timestamp),
    idField: IdField,
    steps: Type.Array(FunnelStep),
  },
  { $id: 'JourneyFunnelReportResponse' },
);
export type JourneyFunnelReportResponse = Type.Static<typeof JourneyFunnelReportResponse>;

export const JourneyStatsRequest = Closed(
  {
    idField: Type.Optional(IdField),
    from: Type.Optional(Instant('Inclusive start of the window')),
    to: Type.Optional(Instant('Exclusive end of the window', 'end')),
    finalStepId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    outcome: Type.Optional(
      Type.String({ maxLength: 200, description: 'Outcome of mappings that name none (default success)' }),
    ),
    stepMappings: Type.Optional(StepMappings),
  },
  { $id: 'JourneyStatsRequest' },
);
export type JourneyStatsRequest = Type.Static<typeof JourneyStatsRequest>;

export const JourneyStatsResponse = Closed(
  {
    journeyId: Type.String(),
    totalEntered: Type.Integer(),
    completed: Type.Optional(Type.Integer({ description: 'Completed finalStepId (only with finalStepId)' })),
    currentlyActive: Type.Optional(Type.Integer({ description: 'Entered but not completed finalStepId' })),
    lastUpdated: Timestamp,
    stepStats: Type.Array(
      Closed({ stepId: Type.String(), entered: Type.Integer(), completed: Type.Integer(), pending: Type.Integer() }),
    ),
  },
  { $id: 'JourneyStatsResponse' },
);
export type JourneyStatsResponse = Type.Static<typeof JourneyStatsResponse>;

export const JourneyStepRecipientsRequest = Closed(
  {
    status: Type.Optional(
      Type.Union([Type.Literal('entered'), Type.Literal('completed'), Type.Literal('pending')], {
        default: 'completed',
      }),
    ),
    idField: Type.Optional(IdField),
    interactionId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'The event that completes the step, over the step’s own mapping; needed for completed/pending when the step has none',
      }),
    ),
    outcome: Type.Optional(
      Type.String({
        maxLength: 200,
        description: 'Default success with interactionId; without it, the step’s own outcome, else success',
      }),
    ),
    from: Type.Optional(Instant('Inclusive start of the window')),
    to: Type.Optional(Instant('Exclusive end of the window', 'end')),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
  },
  {
    $id: 'JourneyStepRecipientsRequest',
    description:
      'When every earlier step has a mapping, the step is reached through them in order; when one has none, the step is taken on its own: entered = entered the journey, completed = also has a matching event in the window, pending = has none',
  },
);
export type JourneyStepRecipientsRequest = Type.Static<typeof JourneyStepRecipientsRequest>;

export const JourneyStepRecipientsResponse = Type.Array(Type.String(), {
  $id: 'JourneyStepRecipientsResponse',
  description: 'Recipient ids (userId or contactId), sorted',
});

export { CollectionParams } from '../../platform/routes.ts';
export const JourneyParams = inCollection({ id: IdParam() });
export const AnalyticsParams = inCollection({ journeyId: IdParam() });
export const StepParams = inCollection({ journeyId: IdParam(), stepId: IdParam() });
