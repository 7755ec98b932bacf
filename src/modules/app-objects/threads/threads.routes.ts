import type { Route } from '../../../platform/routes.ts';
import { THREAD_LATEST_REPLIES } from '../shared/bounds.ts';
import { kindRoutes } from '../shared/kind-routes.ts';
import { THREAD } from '../shared/kinds.ts';
import * as S from './threads.schema.ts';
import type { ThreadsService } from './threads.service.ts';

const THREADS = {
  kind: THREAD,
  param: 'threadId' as const,
  schemas: {
    object: S.AppThread,
    create: S.CreateThreadInput,
    update: S.UpdateThreadInput,
    listQuery: S.ThreadListQuery,
  },
  summaries: {
    create: 'Create a thread. On the public zone the author and owner are the user token’s.',
    list: 'List threads the caller can see, with filters, sorting and pagination',
    aggregate: 'Aggregate threads: count and reply metrics, grouped and as a time series',
    get: 'Get a thread',
    update:
      'Update a thread. Admins may change any field; the owner only body, tags, data and owner (other fields: 400).',
    delete: 'Soft-delete a thread (owner or admin)',
  },
};

export const threadsRoutes = (service: ThreadsService): Route[] =>
  kindRoutes(THREADS, service, ({ onObject }) => [
    onObject({
      method: 'POST',
      path: '/reply',
      op: 'reply',
      summary:
        'Reply to a thread: appends {at, authorId, authorType, …extra}, increments replyCount and sets lastReplyAt atomically; answers the thread with its latest replies. A reply over its size bound is a 413.',
      body: S.ReplyInput,
      response: S.AppThread,
      conflict: 'Conflict: the thread holds its limit of replies (APP_THREAD_MAX_REPLIES), or changed while replying',
      handler: ({ scope, actor, id, body }) => service.reply(scope.collectionId, scope.appId, id, actor, body),
    }),
    onObject({
      method: 'GET',
      path: '/replies',
      op: 'replies',
      summary: `A thread's replies, paged (limit/offset, oldest first by default): the thread itself answers only its latest ${THREAD_LATEST_REPLIES}. Same visibility as reading the thread.`,
      query: S.RepliesQuery,
      response: S.RepliesPage,
      handler: ({ scope, actor, id, query }) => service.replies(scope.collectionId, scope.appId, id, actor, query),
    }),
  ]);
