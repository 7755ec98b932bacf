import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute, inCollection } from '../../platform/routes.ts';
import * as S from './locations.schema.ts';
import type { LocationsService } from './locations.service.ts';

const tags = ['locations'];

export const locationsRoutes = (service: LocationsService) => [
  defineRoute({
    method: 'POST',
    url: '/platform/location',
    operationId: 'location_createGlobal',
    tags,
    summary: 'Create a global location (super admin with features.adminApps)',
    guard: guard.superAdmin('adminApps'),
    body: S.LocationPayload,
    response: S.Location,
    handler: ({ body }) => service.createGlobal(body),
  }),
  defineRoute({
    method: 'POST',
    url: '/admin/collection/:collectionId/location',
    operationId: 'location_create',
    tags,
    summary: 'Create a collection-scoped location',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.LocationPayload,
    response: S.Location,
    handler: ({ scope, body }) => service.createForCollection(scope.collectionId, body),
  }),
  // Clients search both at `.../location` and `.../location/search` (two documented
  // operations, docs/locations.md): serve both.
  ...(
    [
      ['/admin/collection/:collectionId/location', 'location_searchAtRoot'],
      ['/admin/collection/:collectionId/location/search', 'location_search'],
    ] as const
  ).map(([url, operationId]) =>
    defineRoute({
      method: 'GET',
      url,
      operationId,
      tags,
      summary: 'Search the collection’s locations and global ones together',
      guard: guard.admin,
      params: S.CollectionParams,
      query: S.LocationSearchQuery,
      response: S.LocationSearchResponse,
      handler: ({ scope, query }) => service.search(scope.collectionId, query),
    }),
  ),
  defineRoute({
    method: 'GET',
    url: '/public/collection/:collectionId/location/:locationId',
    operationId: 'location_getPublicForCollection',
    tags,
    summary: 'Fetch a location of the collection, or a global one (public)',
    guard: guard.public,
    security: [],
    params: inCollection({ locationId: S.LocationIdParam }),
    response: S.Location,
    handler: ({ scope }) => service.getForCollection(scope.collectionId, scope.locationId),
  }),
  defineRoute({
    method: 'GET',
    url: '/public/location/:locationId',
    operationId: 'location_getPublic',
    tags,
    summary: 'Fetch a global location (public)',
    // A global location is anyone's to read (a credential that is present but not valid is
    // still refused by the global auth hook).
    guard: guard.anyone,
    security: [],
    params: Type.Object({ locationId: S.LocationIdParam }),
    response: S.Location,
    handler: ({ scope }) => service.getGlobal(scope.locationId),
  }),
];
