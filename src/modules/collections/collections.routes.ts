import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { CollectionParams, defineRoute, inCollection } from '../../platform/routes.ts';
import * as S from './collections.schema.ts';
import type { CollectionsService } from './collections.service.ts';

const tags = ['collections'];

export const collectionsRoutes = (service: CollectionsService) => [
  defineRoute({
    method: 'POST',
    url: '/platform/collections',
    operationId: 'collections_create',
    tags,
    summary: 'Create a collection (tenant). Super admin.',
    guard: guard.superAdmin(),
    body: S.CreateCollectionBody,
    response: S.Collection,
    conflict: 'A collection with this id already exists',
    handler: ({ body }) => service.createCollection(body),
  }),
  defineRoute({
    method: 'GET',
    url: '/platform/collections',
    operationId: 'collections_list',
    tags,
    summary: 'List collections. Super admin.',
    guard: guard.superAdmin(),
    query: S.PageQuery,
    response: S.CollectionList,
    handler: async ({ query }) => {
      const { limit = 100, offset = 0 } = query;
      return { items: await service.listCollections(limit, offset), limit, offset };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/api-keys',
    operationId: 'apiKeys_create',
    tags,
    summary: 'Create an admin API key for the collection; the key is shown only in this response',
    guard: guard.admin,
    params: CollectionParams,
    body: S.CreateApiKeyBody,
    response: S.CreatedApiKey,
    handler: ({ scope, body }) => service.createApiKey(scope.collectionId, body.name),
  }),
  defineRoute({
    method: 'GET',
    url: '/admin/collection/:collectionId/api-keys',
    operationId: 'apiKeys_list',
    tags,
    summary: 'List the collection’s API keys (never their secrets)',
    guard: guard.admin,
    params: CollectionParams,
    response: S.ApiKeyList,
    handler: async ({ scope }) => ({ items: await service.listApiKeys(scope.collectionId) }),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/admin/collection/:collectionId/api-keys/:id',
    operationId: 'apiKeys_revoke',
    tags,
    summary: 'Revoke an API key; it stops working at once',
    guard: guard.admin,
    params: inCollection({ id: Type.String({ maxLength: 100 }) }),
    response: S.ApiKey,
    handler: ({ scope }) => service.revokeApiKey(scope.collectionId, scope.id),
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/user-tokens',
    operationId: 'userTokens_issue',
    tags,
    summary: 'Issue a signed user token for public routes of the collection',
    guard: guard.admin,
    params: CollectionParams,
    body: S.IssueUserTokenBody,
    response: S.UserToken,
    handler: ({ scope, body }) => service.issueUserToken(scope.collectionId, body),
  }),
];
