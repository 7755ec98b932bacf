import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { CollectionIdParam, errorResponses, ref } from '../../platform/schemas.ts';
import * as S from './locations.schema.ts';
import type { LocationsService } from './locations.service.ts';

export const locationsRoutes: FastifyPluginAsyncTypebox<{ service: LocationsService }> = async (app, { service }) => {
  app.addSchema(S.Location);
  app.addSchema(S.LocationPayload);
  app.addSchema(S.LocationSearchResponse);
  const tags = ['locations'];
  const location = { 200: ref(S.Location), ...errorResponses };

  app.post(
    '/platform/location',
    {
      onRequest: guard.superAdmin('adminApps'),
      schema: {
        tags,
        operationId: 'location_createGlobal',
        summary: 'Create a global location (super admin with features.adminApps)',
        body: ref(S.LocationPayload),
        response: location,
      },
    },
    async (req) => service.createGlobal(req.body),
  );

  app.post(
    '/admin/collection/:collectionId/location',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'location_create',
        summary: 'Create a collection-scoped location',
        params: S.CollectionParams,
        body: ref(S.LocationPayload),
        response: location,
      },
    },
    async (req) => service.createForCollection(req.params.collectionId, req.body),
  );

  // Clients search both at `.../location` and `.../location/search` (two documented
  // operations, docs/locations.md): serve both.
  for (const [path, operationId] of [
    ['/admin/collection/:collectionId/location', 'location_searchAtRoot'],
    ['/admin/collection/:collectionId/location/search', 'location_search'],
  ] as const) {
    app.get(
      path,
      {
        onRequest: guard.admin,
        schema: {
          tags,
          operationId,
          summary: 'Search the collection’s locations and global ones together',
          params: S.CollectionParams,
          querystring: S.LocationSearchQuery,
          response: { 200: ref(S.LocationSearchResponse), ...errorResponses },
        },
      },
      async (req) => service.search(req.params.collectionId, req.query),
    );
  }

  app.get(
    '/public/collection/:collectionId/location/:locationId',
    {
      onRequest: guard.public,
      schema: {
        tags,
        operationId: 'location_getPublicForCollection',
        summary: 'Fetch a location of the collection, or a global one (public)',
        security: [],
        params: Type.Object({ collectionId: CollectionIdParam, locationId: S.LocationIdParam }),
        response: location,
      },
    },
    async (req) => service.getForCollection(req.params.collectionId, req.params.locationId),
  );

  app.get(
    '/public/location/:locationId',
    {
      schema: {
        tags,
        operationId: 'location_getPublic',
        summary: 'Fetch a global location (public)',
        security: [],
        params: Type.Object({ locationId: S.LocationIdParam }),
        response: location,
      },
    },
    async (req) => service.getGlobal(req.params.locationId),
  );
};
