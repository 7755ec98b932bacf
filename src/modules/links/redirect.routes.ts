/**
 * `GET /l/{code}`, the public redirect: the hottest path of the service. It stays a plain
 * Fastify route rather than a `defineRoute`: it reads no credential (no guard, so no hook runs
 * before it), it answers 302 with no body (the vocabulary documents a 200/201/202/204), and its
 * handler is given Fastify's request and reply as they are, with no context object built per
 * visit.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import { clientAddress, proxyGeo } from '../../platform/client-address.ts';
import { errorResponse } from '../../platform/routes.ts';
import { errorResponses } from '../../platform/schemas.ts';
import * as S from './links.schema.ts';
import type { LinksService } from './links.service.ts';

const NO_GEO = { country: '', region: '', city: '' };
const first = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h) ?? '';

export const redirectRoute: FastifyPluginAsyncTypebox<{ service: LinksService }> = async (app, { service }) => {
  app.get(
    '/l/:code',
    {
      // Redirects are public traffic: a viral link is followed by many people behind one
      // carrier NAT address, and a cache hit costs less than the limiter's own bookkeeping.
      config: { rateLimit: false },
      schema: {
        tags: ['links'],
        operationId: 'links_redirect',
        summary: 'Follow a short link: 302 to its destination (404 unknown or deleted, 410 expired)',
        security: [],
        params: S.RedirectParams,
        response: {
          302: Type.Null({ description: 'Redirect; the destination is in Location' }),
          ...errorResponses,
          410: errorResponse('The link has expired'),
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
      const geo = viaTrustedProxy ? proxyGeo(req.headers) : NO_GEO;
      const q = req.url.indexOf('?');
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
        proxyRegion: geo.region,
        // The UTM parameters are read from it in the click batch, off this path.
        query: q === -1 ? '' : req.url.slice(q + 1),
      });
      return redirect(reply, target.destinationUrl);
    },
  );
};

// Never cached by browsers or CDNs: every visit must reach us to be counted.
const redirect = (reply: FastifyReply, location: string) =>
  reply.code(302).header('cache-control', 'private, no-store').header('location', location).send();
