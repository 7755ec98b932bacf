/**
 * `GET /l/{code}`, the public redirect: the hottest path of the service. The request's Host
 * picks the domain (a verified custom domain's own codes, else the deployment's), and on a
 * custom domain `GET /{code}` at its root answers the same (on any other host that path is the
 * usual 404). It stays a plain
 * Fastify route rather than a `defineRoute`: it reads no credential (no guard, so no hook runs
 * before it), it answers 302 with no body (the vocabulary documents a 200/201/202/204), and its
 * handler is given Fastify's request and reply as they are, with no context object built per
 * visit.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { clientAddress, proxyGeo } from '../../platform/client-address.ts';
import { AppError } from '../../platform/errors.ts';
import { MAX_PARAM_LENGTH } from '../../platform/http-server.ts';
import { errorResponse } from '../../platform/routes.ts';
import { errorResponses } from '../../platform/schemas.ts';
import { visitTrigger, withClickId } from './attribution.ts';
import * as S from './links.schema.ts';
import type { LinksService } from './links.service.ts';

const first = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h) ?? '';
const routePath = (url: string) => url.split('?')[0].replace(/(.)\/$/, '$1');

export const redirectRoute: FastifyPluginAsyncTypebox<{ service: LinksService }> = async (app, { service }) => {
  const follow = async (req: FastifyRequest, reply: FastifyReply) => {
    const { code } = req.params as { code: string };
    const target = await service.resolve(code, req.hostname.toLowerCase());
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
    // Generated here, stored with the click: the destination learns it without a database trip.
    const clickId = target.trackConversions ? service.newClickId() : null;
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
      domain: target.domain,
      trigger: visitTrigger(req.query),
      clickId,
    });
    return redirect(reply, clickId ? withClickId(target.destinationUrl, clickId) : target.destinationUrl);
  };

  // The root of a custom domain: https://<domain>/<code>. On any other host (the deployment's
  // own included) the path is what it was before domains existed: the not-found answer.
  app.get(
    '/:code',
    {
      config: { rateLimit: false },
      schema: {
        tags: ['links'],
        operationId: 'links_redirectOnDomain',
        summary: 'Follow a short link at the root of its custom domain (Host: the domain): as GET /l/{code}',
        description:
          'Answers only on a verified custom domain of a collection; on any other host this path is 404 as an unknown route. ' +
          'With BASE_PATH set, the route is under it: a proxy maps the domain’s root onto it (docs/links.md, Domains).',
        security: [],
        // Bounded as every path segment is (longer: 414), not as codes are: on the deployment's
        // own host any path keeps its 404, never a 400.
        params: Type.Object({ code: Type.String({ maxLength: MAX_PARAM_LENGTH }) }),
        response: {
          302: Type.Null({ description: 'Redirect; the destination is in Location' }),
          ...errorResponses,
          410: errorResponse('The link has expired'),
        },
      },
    },
    async (req, reply) => {
      const host = req.hostname.toLowerCase();
      let custom = service.domains.cachedHost(host);
      if (custom === undefined) custom = await service.domains.lookupHost(host);
      // The not-found handler's answer (with or without a trailing slash, as every route).
      if (!custom) throw new AppError(404, 'NOT_FOUND', `Route ${req.method} ${routePath(req.url)} not found`);
      return follow(req, reply);
    },
  );

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
        description:
          'The Host picks the domain: on a verified custom domain, that domain’s codes; on any other host, the deployment’s own. ' +
          '`?qr=1` (the QR code’s address) records the click with trigger qr. A link with trackConversions gets `pl_cid=<click id>` appended to its destination.',
        security: [],
        params: S.RedirectParams,
        response: {
          302: Type.Null({ description: 'Redirect; the destination is in Location' }),
          ...errorResponses,
          410: errorResponse('The link has expired'),
        },
      },
    },
    follow,
  );
};

// Never cached by browsers or CDNs: every visit must reach us to be counted.
const redirect = (reply: FastifyReply, location: string) =>
  reply.code(302).header('cache-control', 'private, no-store').header('location', location).send();
