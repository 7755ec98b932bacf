/**
 * `GET /l/{code}`, the public redirect: the hottest path of the service. The request's Host
 * picks the domain (a verified custom domain's own codes, else the deployment's), and on a
 * custom domain `GET /{code}` at its root answers the same (on any other host that path is the
 * usual 404). It stays a plain
 * Fastify route rather than a `defineRoute`: it reads no credential (no guard, so no hook runs
 * before it), it answers 302 with no body (the vocabulary documents a 200/201/202/204), and its
 * handler is given Fastify's request and reply as they are, with no context object built per
 * visit. Where a visit goes (rules, variants, the query string) is routing.ts's, compiled into
 * the cached link; `POST /l/{code}` takes a password-protected link's password
 * (password-page.ts).
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
import type { CachedLink } from './links.cache.ts';
import * as S from './links.schema.ts';
import type { LinksService } from './links.service.ts';
import {
  PAGE_HEADERS,
  type PageMessage,
  passCookieName,
  passToken,
  passwordPage,
  REMEMBER_S,
  remembered,
  verifyPassword,
} from './password-page.ts';
import { isExpired } from './redirects.service.ts';
import { PASSWORD_MAX } from './routing.schema.ts';
import { addressKey, choose, type Target, type Visitor, withQuery } from './routing.ts';

const first = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h) ?? '';
const routePath = (url: string) => url.split('?')[0].replace(/(.)\/$/, '$1');
const hostOf = (req: FastifyRequest) => req.hostname.toLowerCase();
const NO_GEO = { country: '', region: '', city: '' };

/** The first-party cookie that keeps a visitor's A/B variant when their address changes. */
const VISITOR_COOKIE = 'lvid';
const VISITOR_COOKIE_VALUE = /(?:^|;\s*)lvid=([A-Za-z0-9_-]{16,64})/;
const YEAR_S = 365 * 86_400;

const PasswordBody = Type.Object(
  { password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }) },
  { additionalProperties: false },
);

export const redirectRoute: FastifyPluginAsyncTypebox<{ service: LinksService }> = async (app, { service }) => {
  const secureCookie = service.shortUrl('x').startsWith('https:') ? '; Secure' : '';

  /** Where this visit goes (rules, variants, then the query string), and a cookie to set. */
  function locate(req: FastifyRequest, link: CachedLink, ip: string, viaTrustedProxy: boolean) {
    const r = link.routing;
    let cookie: string | undefined;
    let t: Target = r.destination;
    if (r.rules || r.variants) {
      const userAgent = first(req.headers['user-agent']);
      const visitor: Visitor = {
        userAgent,
        acceptLanguage: first(req.headers['accept-language']),
        country: () => service.redirects.visitorCountry(ip, viaTrustedProxy ? proxyGeo(req.headers).country : ''),
        key: () => {
          const known = VISITOR_COOKIE_VALUE.exec(first(req.headers.cookie))?.[1];
          if (known) return known;
          // Derived from what the visitor sends, so a visitor without cookies keeps their
          // variant too; the cookie keeps it when their address changes.
          const key = addressKey(ip, userAgent);
          cookie = `${VISITOR_COOKIE}=${key}; Path=/; Max-Age=${YEAR_S}; HttpOnly; SameSite=Lax${secureCookie}`;
          return key;
        },
      };
      t = choose(r, link.linkId, visitor);
    }
    const q = r.passQuery ? req.url.indexOf('?') : -1;
    return { location: q < 0 ? t.url : withQuery(t, req.url.slice(q + 1)), cookie, route: t.route };
  }

  /** Sends the visitor on, counting the click (not for HEAD: a look, not a visit). */
  function visit(req: FastifyRequest, reply: FastifyReply, link: CachedLink, status: 302 | 303) {
    const { ip, viaTrustedProxy } = clientAddress(
      req.socket.remoteAddress,
      req.headers['x-forwarded-for'],
      service.redirects.trusted,
    );
    const { location, cookie, route } = locate(req, link, ip, viaTrustedProxy);
    if (cookie) reply.header('set-cookie', cookie);
    // Fastify answers HEAD from the GET route. A HEAD is a link checker or a preview
    // fetcher asking where the code leads, not a visit: the same answer, no click, no
    // `link.clicked`.
    if (req.method === 'HEAD') return redirect(reply, location, status);
    const geo = viaTrustedProxy ? proxyGeo(req.headers) : NO_GEO;
    const q = req.url.indexOf('?');
    // Generated here, stored with the click: the destination learns it without a database trip.
    const clickId = link.trackConversions ? service.redirects.newClickId() : null;
    service.redirects.recordClick({
      collectionId: link.collectionId,
      linkId: link.linkId,
      code: link.code,
      // The link's destination, not the rule's or variant's: a batch's note of its clicks
      // stays one span per link (click-events.ts), and `link.clicked` means what it meant.
      destinationUrl: link.destinationUrl,
      at: new Date(),
      ip,
      userAgent: first(req.headers['user-agent']),
      referer: first(req.headers.referer),
      proxyCountry: geo.country,
      proxyCity: geo.city,
      proxyRegion: geo.region,
      // The UTM parameters are read from it in the click batch, off this path.
      query: q === -1 ? '' : req.url.slice(q + 1),
      domain: link.domain,
      trigger: visitTrigger(req.query),
      clickId,
      route,
    });
    return redirect(reply, clickId ? withClickId(location, clickId) : location, status);
  }

  /** A GET of a code: the expired link's fallback, the password page, or the visit. */
  const follow = async (req: FastifyRequest, reply: FastifyReply) => {
    const link = await service.redirects.resolve((req.params as { code: string }).code, hostOf(req));
    if (link.routing.expiredUrl && isExpired(link)) return redirect(reply, link.routing.expiredUrl, 302);
    const hash = link.routing.passwordHash;
    if (hash && !remembered(first(req.headers.cookie), link.linkId, hash)) return page(reply, 200);
    return visit(req, reply, link, 302);
  };

  /** A password-protected link's form (or JSON) post: on to the destination when it is right. */
  const unlock = async (req: FastifyRequest, reply: FastifyReply) => {
    const link = await service.redirects.resolve((req.params as { code: string }).code, hostOf(req));
    if (link.routing.expiredUrl && isExpired(link)) return redirect(reply, link.routing.expiredUrl, 303);
    const hash = link.routing.passwordHash;
    if (hash && !(await verifyPassword((req.body as { password: string }).password, hash))) {
      if (isJson(req)) throw new AppError(403, 'FORBIDDEN', 'Wrong password', { field: 'password' });
      return page(reply, 403, 'wrong');
    }
    if (hash) {
      reply.header(
        'set-cookie',
        `${passCookieName(link.linkId)}=${passToken(link.linkId, hash)}; Path=/; Max-Age=${REMEMBER_S}; HttpOnly; SameSite=Lax${secureCookie}`,
      );
    }
    return visit(req, reply, link, 303);
  };

  /** The root of a custom domain answers only there; on any other host, the not-found answer. */
  const onCustomDomain = async (req: FastifyRequest) => {
    const host = hostOf(req);
    let custom = service.domains.cachedHost(host);
    if (custom === undefined) custom = await service.domains.lookupHost(host);
    // The not-found handler's answer (with or without a trailing slash, as every route).
    if (!custom) throw new AppError(404, 'NOT_FOUND', `Route ${req.method} ${routePath(req.url)} not found`);
  };
  // Bounded as every path segment is (longer: 414), not as codes are: on the deployment's own
  // host any path keeps its 404, never a 400.
  const RootParams = Type.Object({ code: Type.String({ maxLength: MAX_PARAM_LENGTH }) });
  const ON_DOMAIN =
    'Answers only on a verified custom domain of a collection; on any other host this path is 404 as an unknown route. ' +
    'With BASE_PATH set, the route is under it: a proxy maps the domain’s root onto it (docs/links.md, Domains).';

  app.get(
    '/l/:code',
    {
      // Redirects are public traffic: a viral link is followed by many people behind one
      // carrier NAT address, and a cache hit costs less than the limiter's own bookkeeping.
      config: { rateLimit: false },
      schema: {
        tags: ['links'],
        operationId: 'links_redirect',
        summary:
          'Follow a short link: 302 to its destination (404 unknown or deleted, 410 expired); a password-protected link answers its password page (200, HTML)',
        description:
          'The Host picks the domain: on a verified custom domain, that domain’s codes; on any other host, the deployment’s own. ' +
          '`?qr=1` (the QR code’s address) records the click with trigger qr. A link with trackConversions gets `pl_cid=<click id>` appended to its destination.',
        security: [],
        params: S.RedirectParams,
        response: {
          200: Type.String({ description: 'The password page of a password-protected link (text/html)' }),
          302: Type.Null({ description: 'Redirect; the destination is in Location' }),
          ...errorResponses,
          410: errorResponse('The link has expired'),
        },
      },
    },
    follow,
  );

  app.get(
    '/:code',
    {
      config: { rateLimit: false },
      schema: {
        tags: ['links'],
        operationId: 'links_redirectOnDomain',
        summary: 'Follow a short link at the root of its custom domain (Host: the domain): as GET /l/{code}',
        description: ON_DOMAIN,
        security: [],
        params: RootParams,
        response: {
          200: Type.String({ description: 'The password page of a password-protected link (text/html)' }),
          302: Type.Null({ description: 'Redirect; the destination is in Location' }),
          ...errorResponses,
          410: errorResponse('The link has expired'),
        },
      },
    },
    async (req, reply) => {
      await onCustomDomain(req);
      return follow(req, reply);
    },
  );

  // A form's body (`password=…`), for this plugin's routes only.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 4096 },
    (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );

  const unlockOptions = (root: boolean) => ({
    config: {
      // Guesses are bounded per link and visitor (the caller's address behind trusted
      // proxies), every attempt counted, right or wrong.
      rateLimit: {
        max: service.settings.passwordAttempts,
        timeWindow: service.settings.passwordWindowMs,
        keyGenerator: (req: FastifyRequest) =>
          `link-password:${hostOf(req)}/${(req.params as { code: string }).code}:${
            clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], service.redirects.trusted).ip
          }`,
        errorResponseBuilder: (_req: FastifyRequest, ctx: { after: string }) =>
          new AppError(429, 'RATE_LIMITED', `Too many password attempts for this link; retry in ${ctx.after}`),
      },
    },
    // A form post gets the page back with the message; an API client the usual error body.
    errorHandler: (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
      if ((err as { statusCode?: number }).statusCode === 429 && !isJson(req)) return page(reply, 429, 'limited');
      throw err;
    },
    schema: {
      tags: ['links'],
      operationId: root ? 'links_unlockOnDomain' : 'links_unlock',
      summary: root
        ? 'Enter a password-protected link’s password at the root of its custom domain: as POST /l/{code}'
        : 'Enter a password-protected link’s password (a form post or JSON `{password}`): 303 to the destination, counted as a click',
      ...(root ? { description: ON_DOMAIN } : {}),
      security: [],
      params: root ? RootParams : S.RedirectParams,
      body: PasswordBody,
      response: {
        303: Type.Null({ description: 'The password is right: on to the destination (Location)' }),
        ...errorResponses,
        403: errorResponse('The password is wrong (a form post gets the page again, text/html, with a message)'),
        410: errorResponse('The link has expired'),
        429: errorResponse('Too many attempts for this link from this visitor (a form post gets the page)'),
      },
    },
  });
  app.post('/l/:code', unlockOptions(false), unlock);
  app.post('/:code', unlockOptions(true), async (req, reply) => {
    await onCustomDomain(req);
    return unlock(req, reply);
  });
};

const isJson = (req: FastifyRequest) => (req.headers['content-type'] ?? '').startsWith('application/json');

const page = (reply: FastifyReply, status: number, message?: PageMessage) =>
  reply.code(status).headers(PAGE_HEADERS).send(passwordPage(message));

// Never cached by browsers or CDNs: every visit must reach us to be counted.
const redirect = (reply: FastifyReply, location: string, status: 302 | 303) =>
  reply.code(status).header('cache-control', 'private, no-store').header('location', location).send();
