/** The admin routes of a collection's link domains (domains.service.ts). */
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { SuccessBody } from '../../platform/schemas.ts';
import * as S from './domains.schema.ts';
import type { DomainsService } from './domains.service.ts';
import { CollectionParams } from './links.schema.ts';

const tags = ['links'];
const BASE = '/admin/collection/:collectionId/domains';

export const domainsRoutes = (domains: DomainsService) => [
  defineRoute({
    method: 'POST',
    url: BASE,
    operationId: 'links_createDomain',
    tags,
    summary: 'Register a domain for the collection’s links (verify it before use)',
    description:
      'Answers how to prove the collection controls it: a DNS TXT record, or a token served over HTTP. ' +
      'A domain belongs to one collection: another collection’s (verified, or registered in the last LINK_DOMAIN_CLAIM_TTL_MS) is 409.',
    guard: guard.admin,
    params: CollectionParams,
    body: S.CreateDomainBody,
    response: S.LinkDomain,
    conflict: 'The domain is already registered (by this collection or another)',
    handler: ({ scope, body }) => domains.register(scope.collectionId, body.domain),
  }),
  defineRoute({
    method: 'GET',
    url: BASE,
    operationId: 'links_listDomains',
    tags,
    summary: 'List the collection’s domains, oldest first',
    guard: guard.admin,
    params: CollectionParams,
    response: S.LinkDomainList,
    handler: ({ scope }) => domains.list(scope.collectionId),
  }),
  defineRoute({
    method: 'GET',
    url: `${BASE}/:domain`,
    operationId: 'links_getDomain',
    tags,
    summary: 'One domain: whether it is verified, and how to verify it',
    guard: guard.admin,
    params: S.DomainParams,
    response: S.LinkDomain,
    handler: ({ scope }) => domains.get(scope.collectionId, scope.domain),
  }),
  defineRoute({
    method: 'POST',
    url: `${BASE}/:domain/verify`,
    operationId: 'links_verifyDomain',
    tags,
    summary: 'Look for the domain’s proof now (DNS TXT record or HTTP token) and record the result',
    description:
      'Answers the domain: `verified` true once a proof was found (it stays so), else `checkError` says what was found instead.',
    guard: guard.admin,
    params: S.DomainParams,
    body: S.VerifyDomainBody,
    emptyBody: true,
    response: S.LinkDomain,
    handler: ({ scope, body }) => domains.verify(scope.collectionId, scope.domain, body),
  }),
  defineRoute({
    method: 'DELETE',
    url: `${BASE}/:domain`,
    operationId: 'links_deleteDomain',
    tags,
    summary: 'Remove a domain; refused (409) while live links are on it',
    guard: guard.admin,
    params: S.DomainParams,
    response: SuccessBody,
    conflict: 'Live links are on the domain: move them (PATCH domain) or delete them first',
    handler: ({ scope }) => domains.remove(scope.collectionId, scope.domain),
  }),
];
