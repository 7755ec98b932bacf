import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { guard } from '../../platform/auth.ts';
import { defineRoute } from '../../platform/routes.ts';
import { type ConsoleService, notBuiltPage } from './console.service.ts';

/**
 * Only this origin: the console's own scripts, styles and API calls. No inline script or style
 * (the page carries its settings in a meta tag), no frames around it (clickjacking a page that
 * holds an admin key), no form posted elsewhere, no `<base>` pointing elsewhere.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  // blob: the QR preview, an image fetched with the console's credential (pages/link-qr.tsx).
  "img-src 'self' blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

/** The page, with the BASE_PATH it is served under (`req.server`: the routes' own context). */
async function page(service: ConsoleService, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const prefix = req.server.prefix;
  const got = await service.page(prefix);
  secure(reply).header('cache-control', 'no-cache').type('text/html; charset=utf-8');
  if (!got.built) return reply.code(503).send(notBuiltPage(prefix));
  return reply.send(got.html);
}

/**
 * `/console` and every path under it (the console's own routes, e.g. `/console/links/lnk_…`):
 * its page, never cached (it names the current build's files). Hidden from the OpenAPI
 * document: pages, not API.
 */
export const consoleRoutes = (service: ConsoleService) =>
  [
    { url: '/console', operationId: 'console_page' },
    { url: '/console/*', operationId: 'console_pageUnder' },
  ].map(({ url, operationId }) =>
    defineRoute({
      method: 'GET',
      url,
      operationId,
      tags: ['console'],
      summary: 'The admin console’s page',
      // The page holds no data (the admin key is typed into it and sent only with its API calls).
      guard: guard.anyone,
      hide: true,
      response: Type.String({ description: 'The page (HTML)' }),
      handler: ({ req, reply }) => page(service, req, reply),
    }),
  );

/**
 * `/console/assets/…`: the build's files, named by their content's hash, so cached for a year
 * and never revalidated. A plugin, not routes: @fastify/static registers its own wildcard route
 * and sends files itself (ranges, ETag, content types, the cache headers below).
 */
export const consoleAssets: FastifyPluginAsync<{ service: ConsoleService }> = async (app, { service }) => {
  await app.register(fastifyStatic, {
    root: service.assetsDir,
    prefix: '/console/assets/',
    // Not built yet is a normal state (the page says so); Fastify's warning would only repeat it.
    suppressWarning: true,
    decorateReply: false,
    index: false,
    // Vite names every file here by its content's hash: a new build makes new names.
    maxAge: '365d',
    immutable: true,
    setHeaders: (res) => {
      res.header('x-content-type-options', 'nosniff');
    },
  });
};
