import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { CollectionIdParam, errorResponses, ref } from '../../platform/schemas.ts';
import * as S from './collections.schema.ts';
import type { CollectionsService } from './collections.service.ts';

export const collectionsRoutes: FastifyPluginAsyncTypebox<{ service: CollectionsService }> = async (
  app,
  { service },
) => {
  app.addSchema(S.Collection);
  app.addSchema(S.ApiKey);
  const tags = ['collections'];
  const inCollection = Type.Object({ collectionId: CollectionIdParam });

  app.post(
    '/platform/collections',
    {
      onRequest: guard.superAdmin(),
      schema: {
        tags,
        operationId: 'collections_create',
        summary: 'Create a collection (tenant). Super admin.',
        body: S.CreateCollectionBody,
        response: { 200: ref(S.Collection), ...errorResponses, 409: errorResponses[400] },
      },
    },
    async (req) => service.createCollection(req.body),
  );

  app.get(
    '/platform/collections',
    {
      onRequest: guard.superAdmin(),
      schema: {
        tags,
        operationId: 'collections_list',
        summary: 'List collections. Super admin.',
        querystring: S.PageQuery,
        response: { 200: S.CollectionList, ...errorResponses },
      },
    },
    async (req) => {
      const { limit = 100, offset = 0 } = req.query;
      return { items: await service.listCollections(limit, offset), limit, offset };
    },
  );

  app.post(
    '/admin/collection/:collectionId/api-keys',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'apiKeys_create',
        summary: 'Create an admin API key for the collection; the key is shown only in this response',
        params: inCollection,
        body: S.CreateApiKeyBody,
        response: { 200: S.CreatedApiKey, ...errorResponses },
      },
    },
    async (req) => service.createApiKey(req.params.collectionId, req.body.name),
  );

  app.get(
    '/admin/collection/:collectionId/api-keys',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'apiKeys_list',
        summary: 'List the collection’s API keys (never their secrets)',
        params: inCollection,
        response: { 200: S.ApiKeyList, ...errorResponses },
      },
    },
    async (req) => ({ items: await service.listApiKeys(req.params.collectionId) }),
  );

  app.delete(
    '/admin/collection/:collectionId/api-keys/:id',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'apiKeys_revoke',
        summary: 'Revoke an API key; it stops working at once',
        params: Type.Object({ collectionId: CollectionIdParam, id: Type.String({ maxLength: 100 }) }),
        response: { 200: ref(S.ApiKey), ...errorResponses },
      },
    },
    async (req) => service.revokeApiKey(req.params.collectionId, req.params.id),
  );

  app.post(
    '/admin/collection/:collectionId/user-tokens',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'userTokens_issue',
        summary: 'Issue a signed user token for public routes of the collection',
        params: inCollection,
        body: S.IssueUserTokenBody,
        response: { 200: S.UserToken, ...errorResponses },
      },
    },
    async (req) => service.issueUserToken(req.params.collectionId, req.body),
  );
};
