import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { errorResponses } from '../../../platform/schemas.ts';
import { emptyBodyIsObject } from '../../../platform/validation.ts';
import type { AggregateRequest as AggregateBody } from '../shared/aggregate.ts';
import { actorOf, signedIn } from '../shared/guards.ts';
import { AppParams, listOf, objectParams, SuccessResponse } from '../shared/schema.ts';
import * as S from './threads.schema.ts';
import type { ThreadsService } from './threads.service.ts';

const base = '/:zone/collection/:collectionId/app/:appId/threads';

export const threadsRoutes: FastifyPluginAsyncTypebox<{ service: ThreadsService }> = async (app, { service }) => {
  const tags = ['threads'];
  const one = { 200: Type.Ref('AppThread'), ...errorResponses };
  const ThreadParams = objectParams('threadId');

  app.post(
    base,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'threads_create',
        summary: 'Create a thread. On the public zone the author and owner are the user token’s.',
        params: AppParams,
        body: Type.Ref('CreateThreadInput'),
        response: one,
      },
    },
    async (req) =>
      service.create(req.params.collectionId, req.params.appId, actorOf(req), req.body as S.CreateThreadInput),
  );

  app.get(
    base,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'threads_list',
        summary: 'List threads the caller can see, with filters, sorting and pagination',
        params: AppParams,
        querystring: S.ThreadListQuery,
        response: { 200: listOf('AppThread'), ...errorResponses },
      },
    },
    async (req) => service.list(req.params.collectionId, req.params.appId, actorOf(req), req.query),
  );

  app.post(
    `${base}/aggregate`,
    {
      onRequest: signedIn,
      preValidation: emptyBodyIsObject,
      schema: {
        tags,
        operationId: 'threads_aggregate',
        summary: 'Aggregate threads: count and reply metrics, grouped and as a time series',
        params: AppParams,
        body: Type.Ref('AggregateRequest'),
        response: { 200: Type.Ref('AggregateResponse'), ...errorResponses },
      },
    },
    async (req) =>
      service.aggregate(req.params.collectionId, req.params.appId, actorOf(req), req.body as AggregateBody),
  );

  app.get(
    `${base}/:threadId`,
    {
      onRequest: signedIn,
      schema: { tags, operationId: 'threads_get', summary: 'Get a thread', params: ThreadParams, response: one },
    },
    async (req) => service.get(req.params.collectionId, req.params.appId, req.params.threadId, actorOf(req)),
  );

  app.patch(
    `${base}/:threadId`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'threads_update',
        summary:
          'Update a thread. Admins may change any field; the owner only body, tags, data and owner (other fields: 400).',
        params: ThreadParams,
        body: Type.Ref('UpdateThreadInput'),
        response: one,
      },
    },
    async (req) =>
      service.patch(
        req.params.collectionId,
        req.params.appId,
        req.params.threadId,
        actorOf(req),
        req.body as S.UpdateThreadInput,
      ),
  );

  app.delete(
    `${base}/:threadId`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'threads_delete',
        summary: 'Soft-delete a thread (owner or admin)',
        params: ThreadParams,
        response: { 200: SuccessResponse, ...errorResponses },
      },
    },
    async (req) => service.delete(req.params.collectionId, req.params.appId, req.params.threadId, actorOf(req)),
  );

  app.post(
    `${base}/:threadId/reply`,
    {
      onRequest: signedIn,
      schema: {
        tags,
        operationId: 'threads_reply',
        summary:
          'Reply to a thread: appends {at, authorId, authorType, …extra}, increments replyCount and sets lastReplyAt atomically',
        params: ThreadParams,
        body: Type.Ref('ReplyInput'),
        response: { ...one, 409: errorResponses[400] },
      },
    },
    async (req) =>
      service.reply(
        req.params.collectionId,
        req.params.appId,
        req.params.threadId,
        actorOf(req),
        req.body as S.ReplyInput,
      ),
  );
};
