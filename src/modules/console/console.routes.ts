import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
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
  "img-src 'self'",
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

/**
 * `/console` and every path under it (the console's own routes, e.g. `/console/links/lnk_…`):
 * its page, never cached (it names the current build's files); `/console/assets/…`: the
 * build's files, named by their content's hash, so cached for a year and never revalidated.
 * Hidden from the OpenAPI document: pages, not API.
 */
export const consoleRoutes: FastifyPluginAsync<{ service: ConsoleService }> = async (app, { service }) => {
  const hide = { schema: { hide: true } };

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

  const page = async (_req: unknown, reply: FastifyReply) => {
    const got = await service.page(app.prefix);
    secure(reply).header('cache-control', 'no-cache').type('text/html; charset=utf-8');
    if (!got.built) return reply.code(503).send(notBuiltPage(app.prefix));
    return reply.send(got.html);
  };
  app.get('/console', hide, page);
  app.get('/console/*', hide, page);
};
