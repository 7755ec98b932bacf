/** The OpenAPI 3.1 document at /openapi.json and a docs page at /docs, both generated from route schemas. */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';

/** `webhooks`: the OpenAPI 3.1 section describing every event the service sends (the event catalogue). */
export async function registerOpenApi(
  app: FastifyInstance,
  config: Config,
  webhooks: Record<string, unknown>,
): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Collection platform API',
        version: '1.0.0',
        description:
          'Multi-tenant platform service. Admin routes need an admin API key of the collection (or the super admin key); public routes serve anonymous callers or a user token. Errors share one body: {code, errorCode, message, details?, requestId}.',
      },
      servers: [{ url: config.publicBaseUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'Admin API key, super admin key, or user token' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Admin API key' },
        },
      },
      security: [{ bearerAuth: [] }, { apiKey: [] }],
      // The catalogue builds well-formed path items; the plugin's type wants its own type for them.
      webhooks: webhooks as never,
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: `${config.basePath}/docs` });
  app.get(`${config.basePath}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
}
