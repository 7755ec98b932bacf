import { guard } from '../../platform/auth.ts';
import { CollectionParams, defineRoute } from '../../platform/routes.ts';
import { ref, SuccessBody } from '../../platform/schemas.ts';
import * as S from './app-tasks.schema.ts';
import type { AppTasksService } from './app-tasks.service.ts';

const tags = ['jobs'];
const base = '/admin/collection/:collectionId/tasks';

export const appTasksRoutes = (service: AppTasksService) => [
  defineRoute({
    method: 'POST',
    url: base,
    operationId: 'jobs_declareTask',
    tags,
    summary:
      'Declare one of the app’s own tasks (201), or replace its declaration (200): its jobs are enqueued as any job’s and leased by the app’s workers (POST .../jobs/lease)',
    guard: guard.admin,
    params: CollectionParams,
    body: S.DeclareAppTaskRequest,
    response: S.AppTask,
    responses: { 201: { ...ref(S.AppTask), description: 'Declared' } },
    conflict: 'The name is one of the service’s own tasks, or the collection has declared the most tasks it may',
    handler: async ({ scope, body, reply }) => {
      const { task, created } = await service.declare(scope.collectionId, body);
      reply.code(created ? 201 : 200);
      return task;
    },
  }),
  defineRoute({
    method: 'GET',
    url: base,
    operationId: 'jobs_listAppTasks',
    tags,
    summary: 'The app’s own tasks, by name',
    guard: guard.admin,
    params: CollectionParams,
    response: S.AppTasks,
    handler: ({ scope }) => service.list(scope.collectionId),
  }),
  defineRoute({
    method: 'GET',
    url: `${base}/:name`,
    operationId: 'jobs_getAppTask',
    tags,
    summary: 'One of the app’s own tasks',
    guard: guard.admin,
    params: S.AppTaskParams,
    response: S.AppTask,
    handler: ({ scope }) => service.get(scope.collectionId, scope.name),
  }),
  defineRoute({
    method: 'DELETE',
    url: `${base}/:name`,
    operationId: 'jobs_deleteAppTask',
    tags,
    summary:
      'Delete a task’s declaration: its new enqueues and leases are refused; its jobs stay (cancel them, or declare it again)',
    guard: guard.admin,
    params: S.AppTaskParams,
    response: SuccessBody,
    handler: ({ scope }) => service.remove(scope.collectionId, scope.name),
  }),
];
