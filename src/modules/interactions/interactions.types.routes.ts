/** Admin routes of interaction types: their CRUD. */
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { ADMIN_BASE, tags } from './interactions.paths.ts';
import * as S from './interactions.schema.ts';
import type { InteractionTypes } from './interactions.types.service.ts';

export const typeRoutes = (types: InteractionTypes) => [
  defineRoute({
    method: 'POST',
    url: ADMIN_BASE,
    operationId: 'interactions_create',
    tags,
    summary: 'Create an interaction type',
    guard: guard.admin,
    params: S.CollectionParams,
    body: S.CreateInteractionTypeBody,
    response: S.InteractionTypeRecord,
    conflict: 'The id is taken',
    handler: ({ scope, body }) => types.createType(scope.collectionId, body),
  }),
  defineRoute({
    method: 'GET',
    url: ADMIN_BASE,
    operationId: 'interactions_list',
    tags,
    summary: 'List interaction types',
    guard: guard.admin,
    params: S.CollectionParams,
    query: S.ListTypesQuery,
    response: S.InteractionTypeList,
    handler: ({ scope, query }) => types.listTypes(scope.collectionId, query, false),
  }),
  defineRoute({
    method: 'GET',
    url: `${ADMIN_BASE}/:id`,
    operationId: 'interactions_get',
    tags,
    summary: 'Get an interaction type',
    guard: guard.admin,
    params: S.TypeParams,
    response: S.InteractionTypeRecord,
    handler: ({ scope }) => types.getType(scope.collectionId, scope.id, false),
  }),
  defineRoute({
    method: 'PATCH',
    url: `${ADMIN_BASE}/:id`,
    operationId: 'interactions_update',
    tags,
    summary: 'Update an interaction type (permissions and data merge key by key)',
    description:
      'Each key of `permissions` replaces that key of the stored permissions; `null` removes the key, so it takes its default again; keys not sent are kept. `{permissions: {endAt}}` changes only endAt. `data` merges the same way at its top level: `{data: {display}}` replaces data.display and keeps data.effects, data.scopes and every other key; `null` removes a key. `appId` replaces the stored one. The update is atomic: concurrent updates of different keys all land, and startAt must not be after endAt in the merged permissions (else 400, nothing changed).',
    guard: guard.admin,
    params: S.TypeParams,
    body: S.UpdateInteractionTypeBody,
    response: S.InteractionTypeRecord,
    handler: ({ scope, body }) => types.updateType(scope.collectionId, scope.id, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: `${ADMIN_BASE}/:id`,
    operationId: 'interactions_remove',
    tags,
    summary: 'Remove an interaction type (its events are kept)',
    guard: guard.admin,
    params: S.TypeParams,
    response: Type.Object({ success: Type.Boolean(), id: Type.String() }),
    handler: ({ scope }) => types.removeType(scope.collectionId, scope.id),
  }),
];
