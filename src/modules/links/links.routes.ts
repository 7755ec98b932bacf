import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { errorResponses, ref, SuccessBody } from '../../platform/schemas.ts';
import { clientAddress, proxyGeo } from './clicks.ts';
import * as S from './links.schema.ts';
import type { LinksService } from './links.service.ts';

const first = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h) ?? '';

export const linksRoutes: FastifyPluginAsyncTypebox<{ service: LinksService }> = async (app, { service }) => {
  for (const schema of [S.CreateLinkBody, S.UpdateLinkBody, S.Link, S.LinkPage, S.Click, S.ClickPage, S.ClickStats]) {
    app.addSchema(schema);
  }
  const tags = ['links'];
  const link = { 200: ref(S.Link), ...errorResponses };
  const conflictResponse = { ...Type.Ref('ErrorBody'), description: 'Conflict: the code is already taken' };

  app.post(
    '/admin/collection/:collectionId/links',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'links_create',
        summary: 'Create a short link (custom or generated code)',
        params: S.CollectionParams,
        body: ref(S.CreateLinkBody),
        response: { ...link, 409: conflictResponse },
      },
    },
    async (req) => service.create(req.params.collectionId, req.caller.actorId ?? 'unknown', req.body),
  );

  app.get(
    '/admin/collection/:collectionId/links',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'links_list',
        summary: 'List the collection’s links, newest first',
        params: S.CollectionParams,
        querystring: S.LinkListQuery,
        response: { 200: ref(S.LinkPage), ...errorResponses },
      },
    },
    async (req) => service.list(req.params.collectionId, req.query),
  );

  app.get(
    '/admin/collection/:collectionId/links/:linkId',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'links_get',
        summary: 'Fetch one link with its click count',
        params: S.LinkParams,
        response: link,
      },
    },
    async (req) => service.get(req.params.collectionId, req.params.linkId),
  );

  app.patch(
    '/admin/collection/:collectionId/links/:linkId',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'links_update',
        summary: 'Change a link’s destination, code, title, tags or expiry',
        params: S.LinkParams,
        body: ref(S.UpdateLinkBody),
        response: { ...link, 409: conflictResponse },
      },
    },
    async (req) => service.update(req.params.collectionId, req.params.linkId, req.body),
  );

  app.delete(
    '/admin/collection/:collectionId/links/:linkId',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'links_delete',
        summary: 'Delete a link: its address answers 404 from now on; its code is never reused',
        params: S.LinkParams,
        response: { 200: SuccessBody, ...errorResponses },
      },
    },
    async (req) => service.remove(req.params.collectionId, req.params.linkId),
  );

  app.get(
    '/admin/collection/:collectionId/links/:linkId/clicks',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'links_listClicks',
        summary: 'List a link’s recorded clicks, newest first',
        params: S.LinkParams,
        querystring: S.ClickListQuery,
        response: { 200: ref(S.ClickPage), ...errorResponses },
      },
    },
    async (req) => service.clicks(req.params.collectionId, req.params.linkId, req.query),
  );

  app.get(
    '/admin/collection/:collectionId/links/:linkId/clicks/stats',
    {
      onRequest: guard.admin,
      schema: {
        tags,
        operationId: 'links_clickStats',
        summary: 'A link’s clicks over a window: per hour or day, and by country, device type and referer',
        description:
          'Every bucket of the window is answered, empty ones with 0. The window is at most 1000 buckets ' +
          '(hour: about 41 days; day: about 2.7 years); the first and last bucket may be partial. ' +
          'Breakdowns give the `top` values with the most clicks and the rest as `other`.',
        params: S.LinkParams,
        querystring: S.ClickStatsQuery,
        response: { 200: ref(S.ClickStats), ...errorResponses },
      },
    },
    async (req) => service.clickStats(req.params.collectionId, req.params.linkId, req.query),
  );

  app.get(
    '/l/:code',
    {
      // Redirects are public traffic: a viral link is followed by many people behind one
      // carrier NAT address, and a cache hit costs less than the limiter's own bookkeeping.
      config: { rateLimit: false },
      schema: {
        tags,
        operationId: 'links_redirect',
        summary: 'Follow a short link: 302 to its destination (404 unknown or deleted, 410 expired)',
        security: [],
        params: S.RedirectParams,
        response: {
          302: Type.Null({ description: 'Redirect; the destination is in Location' }),
          ...errorResponses,
          410: { ...Type.Ref('ErrorBody'), description: 'The link has expired' },
        },
      },
    },
    async (req, reply) => {
      const target = await service.resolve(req.params.code);
      // Fastify answers HEAD from this GET route. A HEAD is a link checker or a preview
      // fetcher asking where the code leads, not a visit: the same answer, no click, no
      // `link.clicked`.
      if (req.method === 'HEAD') return redirect(reply, target.destinationUrl);
      const { ip, viaTrustedProxy } = clientAddress(
        req.socket.remoteAddress,
        req.headers['x-forwarded-for'],
        service.trusted,
      );
      const geo = viaTrustedProxy ? proxyGeo(req.headers) : { country: '', city: '' };
      service.recordClick({
        collectionId: target.collectionId,
        linkId: target.linkId,
        code: target.code,
        destinationUrl: target.destinationUrl,
        at: new Date(),
        ip,
        userAgent: first(req.headers['user-agent']),
        referer: first(req.headers.referer),
        proxyCountry: geo.country,
        proxyCity: geo.city,
      });
      return redirect(reply, target.destinationUrl);
    },
  );
};

// Never cached by browsers or CDNs: every visit must reach us to be counted.
const redirect = (reply: FastifyReply, location: string) =>
  reply.code(302).header('cache-control', 'private, no-store').header('location', location).send();
