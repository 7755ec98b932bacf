/**
 * The console module serves a build it is pointed at (CONSOLE_DIR): here a stand-in build
 * written by the test, so this file does not depend on Vite having run. The real build is
 * driven in a browser by test/console.process.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withBase } from '../src/modules/console/index.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';

const PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console</title>' +
  '<script type="module" crossorigin src="./assets/index-Abc123.js"></script></head>' +
  '<body><div id="app"></div></body></html>';

let dir: string;
let built: TestApp;
let bare: TestApp;
let missingDir: string;
let unbuilt: TestApp;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'console-build-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), PAGE);
  writeFileSync(join(dir, 'assets', 'index-Abc123.js'), 'console.log("console")\n');
  missingDir = mkdtempSync(join(tmpdir(), 'console-none-'));
  built = await createTestApp({ CONSOLE_DIR: dir, BASE_PATH: '/api/v1' });
  bare = await createTestApp({ CONSOLE_DIR: dir });
  unbuilt = await createTestApp({ CONSOLE_DIR: missingDir, BASE_PATH: '/api/v1' });
});
afterAll(async () => {
  await Promise.all([built?.close(), bare?.close(), unbuilt?.close()]);
  rmSync(dir, { recursive: true, force: true });
  rmSync(missingDir, { recursive: true, force: true });
});

describe('the service root', () => {
  it('sends a browser to the console, and tells any other client where the console, docs and probes are', async () => {
    for (const [app, base] of [
      [bare, ''],
      [built, '/api/v1'],
    ] as const) {
      const browser = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html,*/*;q=0.8' } });
      expect(browser.statusCode).toBe(302);
      expect(browser.headers.location).toBe(`${base}/console`);
      const client = await app.inject({ method: 'GET', url: '/' });
      expect(client.statusCode).toBe(200);
      expect(client.json()).toMatchObject({
        console: `${base}/console`,
        docs: `${base}/docs`,
        openapi: `${base}/openapi.json`,
      });
      expect((await app.inject({ method: 'GET', url: client.json().docs })).statusCode).toBeLessThan(400);
    }
  });
});

describe('the console page', () => {
  it('is served at /console under BASE_PATH, for every route of the app, with BASE_PATH written in', async () => {
    for (const url of ['/api/v1/console', '/api/v1/console/', '/api/v1/console/links/lnk_1', '/api/v1/console/jobs']) {
      const res = await built.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toBe('text/html; charset=utf-8');
      expect(res.body, url).toContain(
        '<head><base href="/api/v1/console/"><meta name="console-api-base" content="/api/v1"><meta charset="utf-8">',
      );
      expect(res.body, url).toContain('src="./assets/index-Abc123.js"');
    }
    // Only under BASE_PATH, as every route.
    expect((await built.inject({ method: 'GET', url: '/console' })).statusCode).toBe(404);
  });

  it('is never cached, and allows only this origin (CSP), no framing, no sniffing', async () => {
    const res = await built.inject({ method: 'GET', url: '/api/v1/console/webhooks' });
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toMatch(/https?:|\*/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });

  it('without BASE_PATH lives at /console', async () => {
    const res = await bare.inject({ method: 'GET', url: '/console/cases' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<base href="/console/"><meta name="console-api-base" content="">');
  });

  it('is not in the OpenAPI document', async () => {
    const spec = (await built.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(Object.keys(spec.paths).filter((p) => p.includes('console'))).toEqual([]);
  });

  it('escapes what it writes in, and works on a page without a head', () => {
    expect(withBase('<html><head></head></html>', '/a"b')).toContain('<base href="/a&quot;b/console/">');
    expect(withBase('<p>x</p>', '')).toBe('<base href="/console/"><meta name="console-api-base" content=""><p>x</p>');
  });
});

describe('the console assets', () => {
  it('are served with a long immutable cache (their names carry their hash)', async () => {
    const res = await built.inject({ method: 'GET', url: '/api/v1/console/assets/index-Abc123.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/javascript|^application\/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body).toContain('console.log');
  });

  it('answer 404 for a file that is not there, and nothing outside the assets folder', async () => {
    expect((await built.inject({ method: 'GET', url: '/api/v1/console/assets/index-Other.js' })).statusCode).toBe(404);
    for (const url of [
      '/api/v1/console/assets/../index.html',
      '/api/v1/console/assets/..%2findex.html',
      '/api/v1/console/assets/..%2f..%2f..%2fetc%2fpasswd',
    ]) {
      const res = await built.inject({ method: 'GET', url });
      // The router folds `..` into /console/index.html, which is the page, never a file read outside.
      expect(res.body, url).not.toContain('root:');
      if (res.statusCode === 200) expect(res.headers['content-type'], url).toBe('text/html; charset=utf-8');
    }
  });
});

describe('a service whose console is not built', () => {
  it('answers /console with a 503 page that says how to build it, and serves the API as usual', async () => {
    const res = await unbuilt.inject({ method: 'GET', url: '/api/v1/console/links' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    expect(res.body).toContain('The console is not built');
    expect(res.body).toContain('npm run console:build');
    expect(res.body).toContain('/api/v1/docs');
    expect((await unbuilt.inject({ method: 'GET', url: '/api/v1/console/assets/index-Abc123.js' })).statusCode).toBe(
      404,
    );
    expect((await unbuilt.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await unbuilt.inject({ method: 'GET', url: '/api/v1/openapi.json' })).statusCode).toBe(200);
  });

  it('serves a build made while it runs, and the next build, without a restart', async () => {
    mkdirSync(join(missingDir, 'assets'), { recursive: true });
    writeFileSync(join(missingDir, 'index.html'), PAGE);
    writeFileSync(join(missingDir, 'assets', 'index-Abc123.js'), '1\n');
    const first = await unbuilt.inject({ method: 'GET', url: '/api/v1/console' });
    expect(first.statusCode).toBe(200);
    expect(first.body).toContain('index-Abc123.js');
    expect((await unbuilt.inject({ method: 'GET', url: '/api/v1/console/assets/index-Abc123.js' })).statusCode).toBe(
      200,
    );
    writeFileSync(join(missingDir, 'index.html'), PAGE.replace('Abc123', 'Def456'));
    // A rebuild within the same millisecond as the first write is not the case to test here.
    const later = new Date(Date.now() + 5000);
    utimesSync(join(missingDir, 'index.html'), later, later);
    expect((await unbuilt.inject({ method: 'GET', url: '/api/v1/console' })).body).toContain('index-Def456.js');
  });
});
