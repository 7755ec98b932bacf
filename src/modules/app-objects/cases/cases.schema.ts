import { Type } from 'typebox';
import { Closed, Instant, Nullable, OpenObject, ref } from '../../../platform/schemas.ts';
import { AppRecord } from '../records/records.schema.ts';
import { CASE } from '../shared/kinds.ts';
import {
  CONTACT_ID,
  commonListQuery,
  createSections,
  objectSchema,
  text,
  updateSections,
  Visibility,
} from '../shared/schema.ts';
import { AppThread } from '../threads/threads.schema.ts';

export const AppCase = objectSchema('AppCase', CASE);

export const CreateCaseInput = Closed(
  {
    visibility: Type.Optional(Visibility),
    ref: Type.Optional(text()),
    status: Type.Optional(text(50, 'Default `open`')),
    priority: Type.Optional(Type.Number({ minimum: -1e9, maximum: 1e9 })),
    category: Type.Optional(text(100)),
    assignedTo: Type.Optional(text(200, 'Admins only')),
    productId: Type.Optional(text()),
    proofId: Type.Optional(text()),
    contactId: Type.Optional(text(200, CONTACT_ID)),
    ...createSections,
  },
  { $id: 'CreateCaseInput' },
);
export type CreateCaseInput = Type.Static<typeof CreateCaseInput>;

export const UpdateCaseInput = Closed(
  {
    ...updateSections,
    status: Type.Optional(text(50)),
    priority: Type.Optional(Nullable(Type.Number({ minimum: -1e9, maximum: 1e9 }))),
    category: Type.Optional(Nullable(text(100))),
    assignedTo: Type.Optional(Nullable(text())),
    ref: Type.Optional(Nullable(text())),
    visibility: Type.Optional(Visibility),
    productId: Type.Optional(Nullable(text())),
    proofId: Type.Optional(Nullable(text())),
    contactId: Type.Optional(Nullable(text())),
  },
  { $id: 'UpdateCaseInput' },
);
export type UpdateCaseInput = Type.Static<typeof UpdateCaseInput>;

export const CaseListQuery = Closed({
  ...commonListQuery,
  category: Type.Optional(text(100)),
  priority: Type.Optional(
    text(200, 'A number (equal), or `gte:<n>`, `lte:<n>`, `gt:<n>`, `lt:<n>`, combinable with a comma (`gte:2,lt:5`)'),
  ),
  ref: Type.Optional(text()),
  assignedTo: Type.Optional(text()),
  closedAt: Type.Optional(text(200, '`gte:<date>`/`lte:<date>`, or `null` / `notnull`')),
});
export type CaseListQuery = Type.Static<typeof CaseListQuery>;

export const AppendHistoryInput = Closed(
  {
    entry: Type.Optional(
      OpenObject({
        description:
          'The entry; `at` and `actorId` are added by the service. Optional: without it the entry is `{at, actorId}` (a status change on its own still leaves its mark in the history)',
      }),
    ),
    historyTarget: Type.Optional(
      Type.Union([Type.Literal('owner'), Type.Literal('admin')], {
        description: 'Section whose `history` array receives the entry (default `admin`)',
      }),
    ),
    status: Type.Optional(text(50)),
    priority: Type.Optional(Type.Number({ minimum: -1e9, maximum: 1e9 })),
    assignedTo: Type.Optional(text()),
  },
  { $id: 'AppendHistoryInput' },
);
export type AppendHistoryInput = Type.Static<typeof AppendHistoryInput>;

export const CaseSummaryRequest = Closed(
  {
    period: Type.Optional(
      Closed({
        from: Type.Optional(Instant('Inclusive start; default 30 days before `to`')),
        to: Type.Optional(Instant('Exclusive end; default now', 'end')),
      }),
    ),
  },
  { $id: 'CaseSummaryRequest' },
);

export const CaseSummaryResponse = Type.Object(
  {
    total: Type.Integer(),
    byStatus: Type.Record(Type.String(), Type.Integer()),
    byPriority: Type.Record(Type.String(), Type.Integer()),
    trend: Type.Array(
      Type.Object({
        week: Type.String({ description: 'ISO 8601 week, `YYYY-Www` (week-numbering year)' }),
        start: Type.String({ description: 'The week’s first instant: Monday 00:00 UTC' }),
        count: Type.Integer({ description: 'Cases created that week' }),
      }),
      { description: 'Weeks of the period with at least one case, oldest first' },
    ),
  },
  { $id: 'CaseSummaryResponse' },
);

export const CaseOneSummary = Type.Object(
  {
    case: ref(AppCase),
    threads: Type.Integer({ description: 'Related threads the caller can see' }),
    records: Type.Integer({ description: 'Related records the caller can see' }),
    ageSeconds: Type.Number({ description: 'From creation to now (or to closing, if closed)' }),
    timeToCloseSeconds: Nullable(Type.Number()),
    lastActivityAt: Type.String({ description: 'Latest change of the case or of a related object' }),
  },
  { $id: 'CaseOneSummary' },
);

export const HistoryEvent = Type.Object(
  {
    id: Type.Integer(),
    action: Type.Union(['create', 'update', 'delete', 'entry', 'status'].map((a) => Type.Literal(a))),
    at: Type.String(),
    actorId: Nullable(Type.String()),
    actorRole: Type.String(),
    changedFields: Type.Array(Type.String()),
    changes: OpenObject({ description: 'Scalar fields: {field: {from, to}}' }),
    entry: Type.Optional(OpenObject()),
    historyTarget: Type.Optional(Type.String()),
  },
  { $id: 'CaseHistoryEvent' },
);

export const CaseHistory = Type.Object({ data: Type.Array(ref(HistoryEvent)) });
export const RelatedResponse = Type.Object({
  threads: Type.Array(ref(AppThread)),
  records: Type.Array(ref(AppRecord)),
});

export const CaseApps = Closed(
  { items: Type.Array(Closed({ appId: Type.String() })) },
  { $id: 'CaseApps', description: 'The apps that hold live cases, by id' },
);
