/** Admin reads of events: queries, counts by outcome, aggregates, and an export's file. */
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { ref } from '../../platform/schemas.ts';
import { ADMIN_BASE, tags } from './interactions.paths.ts';
import type { InteractionReads } from './interactions.reads.service.ts';
import * as S from './interactions.schema.ts';

export const queryRoutes = (reads: InteractionReads) => [
  defineRoute({
    method: 'POST',
    url: `${ADMIN_BASE}/query`,
    operationId: 'interactions_query',
    reads: true,
    tags,
    summary: 'Query interaction events with filters and optional includes',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.AdminInteractionsQueryRequest,
    response: Type.Array(ref(S.InteractionEventRow)),
    handler: ({ scope, body }) => reads.query(scope.collectionId, body),
  }),
  defineRoute({
    method: 'POST',
    url: `${ADMIN_BASE}/counts-by-outcome`,
    operationId: 'interactions_countsByOutcome',
    tags,
    summary: 'Count events by outcome (optionally each identity’s latest event only)',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.AdminInteractionsCountsByOutcomeRequest,
    response: Type.Array(ref(S.OutcomeCount)),
    analytics: true,
    handler: ({ scope, body, signal }) => reads.countsByOutcome(scope.collectionId, body, signal),
  }),
  defineRoute({
    method: 'POST',
    url: `${ADMIN_BASE}/aggregate`,
    operationId: 'interactions_aggregate',
    reads: true,
    tags,
    summary: 'Grouped numeric aggregates (count, sum, avg, min, max) of a metadata field',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.AdminInteractionsAggregateRequest,
    response: S.AdminInteractionsAggregateResponse,
    handler: ({ scope, body, signal }) => reads.aggregate(scope.collectionId, body, signal),
  }),
  defineRoute({
    method: 'GET',
    url: `${ADMIN_BASE}/exports/:jobId/download`,
    operationId: 'interactions_downloadExport',
    tags,
    summary: 'Download the file of a finished interactions.export job (NDJSON or CSV)',
    guard: guard.admin,
    params: S.ExportParams,
    response: Type.String({ description: 'The file: application/x-ndjson or text/csv' }),
    // The file is streamed as stored: its type, length and name are the export's.
    handler: async ({ scope, reply }) => {
      const file = await reads.openExport(scope.collectionId, scope.jobId);
      reply
        .type(file.contentType)
        .header('content-length', file.byteCount)
        .header('content-disposition', `attachment; filename="${file.fileName}"`);
      return reply.send(file.stream);
    },
  }),
];
