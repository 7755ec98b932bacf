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
        'Free-form; data.steps[] = {id, config: {interactionId, outcome}} defines the steps and their default mappings; data.breakdownProperties (up to 5 of appId, outcome, source, interactionId, metadata.<key>) are the breakdowns maintained progress keeps values for',
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

// ---------------------------------------------------------------------------------------------
// Funnel options (issue 29; docs/journeys.md "Funnel options" has the precise semantics)

const WindowUnit = Type.Union([
  Type.Literal('minute'),
  Type.Literal('hour'),
  Type.Literal('day'),
  Type.Literal('week'),
]);
const windowFields = {
  value: Type.Integer({ minimum: 1, maximum: 527_040, description: 'At most 366 days in all' }),
  unit: WindowUnit,
};
export const ConversionWindow = Closed(windowFields, {
  description: 'Steps 2… must be completed within this time of the first step’s event',
});
export type ConversionWindow = Type.Static<typeof ConversionWindow>;
const StepId = Type.String({ minLength: 1, maxLength: 200 });
const FunnelOrdering = Type.Union([Type.Literal('ordered'), Type.Literal('strict'), Type.Literal('unordered')], {
  description:
    'ordered (default): steps in order, other events between them allowed; strict: each step the very next funnel event; unordered: any order',
});
export const FunnelExclusion = Closed({
  interactionId: Type.String({ minLength: 1, maxLength: 200 }),
  outcome: Type.Optional(Type.String({ maxLength: 200, description: 'Default: any outcome' })),
  fromStepId: StepId,
  toStepId: StepId,
});
export type FunnelExclusion = Type.Static<typeof FunnelExclusion>;
export const FunnelBreakdown = Closed({
  property: Type.String({
    minLength: 1,
    maxLength: 120,
    pattern: '^(appId|outcome|source|interactionId|country|deviceType|metadata\\..+)$',
    description:
      'appId, outcome, source, interactionId or metadata.<key>; country or deviceType (the click’s) for a funnel from a link',
  }),
  attribution: Type.Optional(
    Type.Union([Type.Literal('first'), Type.Literal('last')], {
      description: 'first (default): the value on the event that entered the funnel; last: on the last event counted',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'Top values; the rest is "other"' }),
  ),
});
export type FunnelBreakdown = Type.Static<typeof FunnelBreakdown>;

/** The options; any of them given takes the funnel report to the options' path. */
export const funnelOptionFields = {
  conversionWindow: Type.Optional(ConversionWindow),
  stepWindows: Type.Optional(
    Type.Array(Closed({ stepId: StepId, ...windowFields }), {
      maxItems: 20,
      description: 'Per step: the most time from completing the step before (or entering) to completing it',
    }),
  ),
  ordering: Type.Optional(FunnelOrdering),
  exclusions: Type.Optional(Type.Array(FunnelExclusion, { maxItems: 10 })),
  breakdown: Type.Optional(FunnelBreakdown),
};
export interface FunnelOptions {
  conversionWindow?: ConversionWindow;
  stepWindows?: { stepId: string; value: number; unit: ConversionWindow['unit'] }[];
  ordering?: 'ordered' | 'strict' | 'unordered';
  exclusions?: FunnelExclusion[];
  breakdown?: FunnelBreakdown;
}

export const JourneyFunnelReportRequest = Closed(
  {
    idField: Type.Optional(IdField),
    periodStart: Type.Optional(Instant('Inclusive start of the period')),
    periodEnd: Type.Optional(Instant('Exclusive end of the period', 'end')),
    stepMappings: StepMappings,
    ...funnelOptionFields,
  },
  {
    $id: 'JourneyFunnelReportRequest',
    description:
      'An empty stepMappings uses the journey’s own step mappings. Without any of conversionWindow, stepWindows, ordering, exclusions, breakdown the answer is as before (and from maintained progress when it can be)',
  },
);
export type JourneyFunnelReportRequest = Type.Static<typeof JourneyFunnelReportRequest>;

const funnelStepFields = {
  stepId: Type.String(),
  interactionId: Type.String(),
  outcome: Type.String(),
  enteredCount: Type.Integer(),
  completedCount: Type.Integer(),
  conversionRate: Type.Number({ description: 'completedCount / enteredCount, 0 when none entered' }),
  avgTimeToComplete: Nullable(Type.Number({ description: 'Seconds from entering to completing; null when none' })),
  medianTimeToComplete: Type.Optional(
    Nullable(Type.Number({ description: 'With options: nearest-rank median of the seconds to complete' })),
  ),
  p90TimeToComplete: Type.Optional(
    Nullable(Type.Number({ description: 'With options: nearest-rank 90th percentile' })),
  ),
  timeToCompleteHistogram: Type.Optional(
    Type.Array(
      Closed({
        from: Type.Number({ description: 'Seconds, inclusive' }),
        to: Nullable(Type.Number({ description: 'Seconds, exclusive; null: no upper bound' })),
        count: Type.Integer(),
      }),
      { description: 'With options: the seconds to complete in fixed buckets' },
    ),
  ),
};
export const FunnelStep = Closed(funnelStepFields);
export type FunnelStep = Type.Static<typeof FunnelStep>;
/** An ad-hoc funnel's step: `outcome` absent when any outcome completes it. */
export const AdHocFunnelStep = Closed({ ...funnelStepFields, outcome: Type.Optional(Type.String()) });
export type AdHocFunnelStep = Type.Static<typeof AdHocFunnelStep>;

const breakdownGroups = <T extends typeof FunnelStep | typeof AdHocFunnelStep>(step: T) =>
  Type.Array(
    Closed({
      value: Nullable(Type.String({ description: 'The property’s value; null when absent (or for the other group)' })),
      other: Type.Optional(Type.Literal(true, { description: 'The values beyond the top ones, together' })),
      steps: Type.Array(step),
    }),
    { description: 'With a breakdown: the funnel of each value’s recipients' },
  );
const FunnelBreakdownGroups = breakdownGroups(FunnelStep);

export const JourneyFunnelReportResponse = Closed(
  {
    journeyId: Type.String(),
    periodStart: Nullable(Timestamp),
    periodEnd: Nullable(Timestamp),
    idField: IdField,
    ordering: Type.Optional(FunnelOrdering),
    steps: Type.Array(FunnelStep),
    breakdown: Type.Optional(FunnelBreakdownGroups),
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

// Ad-hoc funnels, trends and people (issue 29)

export const AdHocStep = Closed({
  interactionId: Type.String({ minLength: 1, maxLength: 200 }),
  outcome: Type.Optional(Type.String({ maxLength: 200, description: 'Default: any outcome' })),
  stepId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Default: step1, step2, …' })),
});
export type AdHocStep = Type.Static<typeof AdHocStep>;
const adHocFields = {
  idField: Type.Optional(IdField),
  periodStart: Type.Optional(Instant('Inclusive start of the period')),
  periodEnd: Type.Optional(Instant('Exclusive end of the period', 'end')),
  steps: Type.Array(AdHocStep, { minItems: 1, maxItems: 20 }),
  ...funnelOptionFields,
};
export const FunnelQueryRequest = Closed(adHocFields, {
  $id: 'FunnelQueryRequest',
  description: 'A funnel over steps given in the request, without a stored journey: step 1 is entered at its event',
});
export type FunnelQueryRequest = Type.Static<typeof FunnelQueryRequest>;

export const FunnelQueryResponse = Closed(
  {
    periodStart: Nullable(Timestamp),
    periodEnd: Nullable(Timestamp),
    idField: IdField,
    ordering: FunnelOrdering,
    steps: Type.Array(AdHocFunnelStep),
    breakdown: Type.Optional(breakdownGroups(AdHocFunnelStep)),
  },
  { $id: 'FunnelQueryResponse' },
);
export type FunnelQueryResponse = Type.Static<typeof FunnelQueryResponse>;

const trendFields = {
  periodStart: Instant('Inclusive start of the period (at most 366 days long)'),
  periodEnd: Instant('Exclusive end of the period', 'end'),
  interval: Type.Optional(
    Type.Union([Type.Literal('day'), Type.Literal('week')], { description: 'UTC days, or weeks from Monday' }),
  ),
  compare: Type.Optional(Type.Boolean({ description: 'Also the previous period of the same length' })),
};
const { breakdown: _noBreakdown, ...trendOptionFields } = funnelOptionFields;
export const JourneyTrendsRequest = Closed(
  { idField: Type.Optional(IdField), stepMappings: Type.Optional(StepMappings), ...trendFields, ...trendOptionFields },
  { $id: 'JourneyTrendsRequest' },
);
export type JourneyTrendsRequest = Type.Static<typeof JourneyTrendsRequest>;
export const FunnelTrendsRequest = Closed(
  {
    idField: Type.Optional(IdField),
    steps: adHocFields.steps,
    ...trendFields,
    ...trendOptionFields,
  },
  { $id: 'FunnelTrendsRequest' },
);
export type FunnelTrendsRequest = Type.Static<typeof FunnelTrendsRequest>;

const TrendBuckets = Type.Array(
  Closed({
    start: Timestamp,
    entered: Type.Integer({ description: 'Recipients who entered the funnel in this bucket' }),
    completed: Type.Integer({ description: 'Of them, those who completed the last step' }),
    conversionRate: Type.Number(),
  }),
);
export const FunnelTrendsResponse = Closed(
  {
    interval: Type.Union([Type.Literal('day'), Type.Literal('week')]),
    periodStart: Timestamp,
    periodEnd: Timestamp,
    buckets: TrendBuckets,
    previous: Type.Optional(
      Closed({
        periodStart: Timestamp,
        periodEnd: Timestamp,
        buckets: TrendBuckets,
      }),
    ),
  },
  { $id: 'FunnelTrendsResponse' },
);
export type FunnelTrendsResponse = Type.Static<typeof FunnelTrendsResponse>;

const peopleFields = {
  stepId: Type.String({ minLength: 1, maxLength: 200, description: 'The step whose recipients are listed' }),
  status: Type.Optional(
    Type.Union([Type.Literal('entered'), Type.Literal('completed'), Type.Literal('dropped')], {
      default: 'completed',
      description: 'dropped: entered the step and did not complete it',
    }),
  ),
  breakdownValue: Type.Optional(Nullable(Type.String({ maxLength: 1000, description: 'Only this breakdown value' }))),
  other: Type.Optional(Type.Boolean({ description: 'Only the breakdown’s other group' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
  cursor: Type.Optional(Type.String({ maxLength: 1000, description: 'The previous page’s nextCursor' })),
};
export const JourneyPeopleRequest = Closed(
  {
    idField: Type.Optional(IdField),
    periodStart: Type.Optional(Instant('Inclusive start of the period')),
    periodEnd: Type.Optional(Instant('Exclusive end of the period', 'end')),
    stepMappings: Type.Optional(StepMappings),
    ...funnelOptionFields,
    ...peopleFields,
  },
  { $id: 'JourneyPeopleRequest' },
);
export type JourneyPeopleRequest = Type.Static<typeof JourneyPeopleRequest>;
export const FunnelPeopleRequest = Closed({ ...adHocFields, ...peopleFields }, { $id: 'FunnelPeopleRequest' });
export type FunnelPeopleRequest = Type.Static<typeof FunnelPeopleRequest>;
export const FunnelPeopleResponse = Closed(
  {
    items: Type.Array(Type.String(), { description: 'Recipient ids, ascending' }),
    nextCursor: Nullable(Type.String({ description: 'null on the last page' })),
  },
  { $id: 'FunnelPeopleResponse' },
);
export type FunnelPeopleResponse = Type.Static<typeof FunnelPeopleResponse>;

/** The `journeys.peopleExport` task's payload: a journey's funnel or an ad-hoc one, and which people. */
export const PeopleExportPayload = Closed(
  {
    journeyId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A journey’s funnel' })),
    stepMappings: Type.Optional(StepMappings),
    steps: Type.Optional(
      Type.Array(AdHocStep, { minItems: 1, maxItems: 20, description: 'An ad-hoc funnel (without journeyId)' }),
    ),
    idField: Type.Optional(IdField),
    periodStart: Type.Optional(Instant('Inclusive start of the period')),
    periodEnd: Type.Optional(Instant('Exclusive end of the period', 'end')),
    ...funnelOptionFields,
    stepId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'Only this step’s people (with status); default everyone',
      }),
    ),
    status: peopleFields.status,
    breakdownValue: peopleFields.breakdownValue,
    other: peopleFields.other,
  },
  { description: 'journeyId or steps; the people request’s fields without paging' },
);
export type PeopleExportPayload = Type.Static<typeof PeopleExportPayload>;
export const ExportParams = inCollection({ jobId: Type.Integer({ minimum: 1 }) });

export { CollectionParams } from '../../platform/routes.ts';
export const JourneyParams = inCollection({ id: IdParam() });
export const AnalyticsParams = inCollection({ journeyId: IdParam() });
export const StepParams = inCollection({ journeyId: IdParam(), stepId: IdParam() });
