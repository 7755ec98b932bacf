/**
 * Links in bulk: a create of up to 1,000 links in one request, and the export of a
 * collection's links as CSV (streamed a page at a time). The CSV import is a job (`links.import`,
 * links.import.ts), enqueued through the jobs API.
 */
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { startedStream } from '../../platform/streaming.ts';
import { BulkCreateBody, BulkCreateResult, csvHeader, csvLine, ExportQuery } from './links.bulk.ts';
import * as S from './links.schema.ts';
import type { LinksService } from './links.service.ts';

const tags = ['links'];

export const bulkRoutes = (service: LinksService) => [
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/links/bulk',
    operationId: 'links_bulkCreate',
    tags,
    summary: 'Create up to 1,000 links in one request: all or none',
    description:
      'Each link is checked as a single create is; a refusal names the link (`links[3].url`) and nothing is created. ' +
      'Each created link is announced by its own `link.created` event, in the same transaction.',
    guard: guard.admin,
    params: S.CollectionParams,
    body: BulkCreateBody,
    response: BulkCreateResult,
    conflict: 'Conflict: a code is already taken (details.field names the link)',
    handler: ({ scope, body, caller }) =>
      service.createMany(scope.collectionId, caller.actorId ?? 'unknown', body.links),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/links/export',
    operationId: 'links_export',
    tags,
    summary: 'The collection’s links as CSV, newest first (streamed)',
    description:
      'Columns: id, code, shortUrl, url, title, tags (joined with |), expiresAt, clicks, createdAt, passQuery, ' +
      'expiredUrl, passwordProtected, rules and variants (JSON). The `links.import` task reads the same columns.',
    guard: guard.admin,
    params: S.CollectionParams,
    query: ExportQuery,
    response: Type.String({ description: 'text/csv' }),
    handler: async ({ scope, query, reply }) => {
      const pages = service.exportLinks(scope.collectionId, query);
      // The header and the first page are read before the answer starts (a refused filter is a 400).
      const stream = await startedStream(
        (async function* lines() {
          let header = csvHeader();
          for await (const page of pages) {
            yield header + page.map(csvLine).join('');
            header = '';
          }
          if (header) yield header;
        })(),
      );
      reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="links-${scope.collectionId}.csv"`)
        .header('cache-control', 'private, no-store');
      return reply.send(stream);
    },
  }),
];
