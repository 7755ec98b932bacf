import { guard } from '../../platform/auth.ts';
import { CollectionParams, defineRoute } from '../../platform/routes.ts';
import { RotateSecretBody } from '../webhooks/index.ts';
import * as S from './http-tasks.schema.ts';
import type { HttpTasksService } from './http-tasks.service.ts';

const tags = ['jobs'];

export const httpTasksRoutes = (service: HttpTasksService) => [
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/http-tasks/secret',
    operationId: 'jobs_getHttpTaskSecret',
    tags,
    summary: 'The secret that signs the requests of the collection’s http jobs (made on first read)',
    guard: guard.admin,
    params: CollectionParams,
    response: S.HttpTaskSecret,
    handler: ({ scope }) => service.secret(scope.collectionId),
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/http-tasks/secret/rotate',
    operationId: 'jobs_rotateHttpTaskSecret',
    tags,
    summary:
      'Replace the http jobs’ signing secret: the new one is in the answer; the replaced one keeps signing next to it for a grace period',
    guard: guard.admin,
    params: CollectionParams,
    // The webhooks' rotation body: the same grace period, the same default.
    body: RotateSecretBody,
    response: S.HttpTaskSecret,
    emptyBody: true,
    handler: ({ scope, body }) => service.rotateSecret(scope.collectionId, body ?? {}),
  }),
];
