/**
 * The OpenAPI document the service serves at /openapi.json, produced without a server or a
 * database: the app is built on an empty in-memory PGlite and asked for its swagger output.
 * Used by `npm run cli -- openapi` and by the typed client's generator
 * (`npm run client:generate`, clients/typescript).
 */
import { buildApp } from './app.ts';
import { loadConfig } from './config.ts';
import { openPglite } from './db/index.ts';
import type { Env } from './platform/settings.ts';

export async function openApiDocument(env: Env = process.env): Promise<unknown> {
  const db = await openPglite();
  try {
    const app = await buildApp({ config: loadConfig(env), db, logger: false });
    await app.ready();
    const doc = app.swagger();
    await app.close();
    return doc;
  } finally {
    await db.close();
  }
}
