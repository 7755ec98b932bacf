/**
 * Builds the real application on a real database for a test file, plus the few helpers
 * every suite needs: a collection with its admin key, user tokens, auth headers.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import type { FastifyInstance, FastifyServerOptions, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import type { Db } from '../../src/db/index.ts';
import { mismatches } from '../compat/original.ts';
import { createTestDb, type TestDb } from './db.ts';
import { checkResponsesAgainstSchemas } from './response-check.ts';

export const SUPER_KEY = 'test-super-admin-key-0123456789';
export const superAuth = { authorization: `Bearer ${SUPER_KEY}` };
export const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });

/** A JSON call over real HTTP to a service running as a child process (crash tests). */
export async function callService(base: string, method: string, path: string, body?: unknown, key = SUPER_KEY) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export interface TestCollection {
  id: string;
  key: string;
  auth: { authorization: string };
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  testDb: TestDb;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  createCollection(id?: string): Promise<TestCollection>;
  userToken(collectionId: string, userId: string, contactId?: string): Promise<string>;
  close(): Promise<void>;
}

let counter = 0;

/**
 * Every JSON success answer a suite gets for an operation the original's published document
 * also has is checked against the original's response schema (test/compat/original.ts, with
 * its listed deviations), so the whole suite is a contract test: a shape that drifts from what
 * the original's clients read fails the test that saw it. COMPAT_REPORT=<file> writes the
 * mismatches there instead of failing, to survey a change.
 */
function checkOriginalShape(options: InjectOptions, res: LightMyRequestResponse, basePath: string): void {
  if (res.statusCode >= 300 || !String(res.headers['content-type'] ?? '').includes('application/json')) return;
  const url = String(options.url ?? options.path ?? '');
  if (!url.startsWith(basePath)) return;
  const found = mismatches(String(options.method ?? 'GET'), url.slice(basePath.length), res.statusCode, res.json());
  if (!found.length) return;
  const report = process.env.COMPAT_REPORT;
  if (report) appendFileSync(report, `${JSON.stringify(found)}\n`);
  else throw new Error(`The answer differs from the original's published shape: ${JSON.stringify(found)}`);
}

export async function createTestApp(
  env: Record<string, string> = {},
  /** Lets a test watch the queries the app makes (a pass-through around the real database). */
  options: { wrapDb?: (db: Db) => Db; logger?: FastifyServerOptions['logger'] } = {},
): Promise<TestApp> {
  const testDb = await createTestDb();
  const config = loadConfig({
    SUPER_ADMIN_KEY: SUPER_KEY,
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: 'http://short.test',
    RATE_LIMIT_MAX: '100000',
    // An event outside the catalogue fails the change that published it, so the test fails.
    WEBHOOK_EVENTS_STRICT: 'true',
    // With TEST_REDIS_URL (CI's PostgreSQL run), rate limits are counted in Redis, each app
    // under keys of its own so that apps and runs never share a count by accident.
    ...(process.env.TEST_REDIS_URL && {
      REDIS_URL: process.env.TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `test:${randomUUID()}:`,
    }),
    ...env,
  });
  const app = await buildApp({
    config,
    db: options.wrapDb ? options.wrapDb(testDb.db) : testDb.db,
    logger: options.logger ?? false,
  });
  const violations = checkResponsesAgainstSchemas(app);
  await app.ready();
  const inject = async (options: InjectOptions) => {
    const res = await app.inject(options);
    const seen = violations.splice(0);
    if (seen.length) throw new Error(`The answer does not match its OpenAPI schema: ${JSON.stringify(seen)}`);
    checkOriginalShape(options, res, config.basePath);
    return res;
  };
  return {
    app,
    config,
    testDb,
    inject,
    async createCollection(id) {
      const collectionId = id ?? `col${++counter}_${Math.random().toString(36).slice(2, 8)}`;
      const created = await inject({
        method: 'POST',
        url: `${config.basePath}/platform/collections`,
        headers: superAuth,
        payload: { id: collectionId, name: `Collection ${collectionId}` },
      });
      if (created.statusCode !== 200) throw new Error(`create collection: ${created.statusCode} ${created.body}`);
      const key = await inject({
        method: 'POST',
        url: `${config.basePath}/admin/collection/${collectionId}/api-keys`,
        headers: superAuth,
        payload: { name: 'test' },
      });
      if (key.statusCode !== 200) throw new Error(`create key: ${key.statusCode} ${key.body}`);
      const secret = key.json().key as string;
      return { id: collectionId, key: secret, auth: { authorization: `Bearer ${secret}` } };
    },
    async userToken(collectionId, userId, contactId) {
      const res = await inject({
        method: 'POST',
        url: `${config.basePath}/admin/collection/${collectionId}/user-tokens`,
        headers: superAuth,
        payload: contactId ? { userId, contactId } : { userId },
      });
      if (res.statusCode !== 200) throw new Error(`user token: ${res.statusCode} ${res.body}`);
      return res.json().token as string;
    },
    async close() {
      await app.close();
      await testDb.drop();
    },
  };
}
