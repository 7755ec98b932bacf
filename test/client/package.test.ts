/**
 * The client as a package, the way code outside this repository gets it (a file or workspace
 * dependency on clients/typescript): its `exports` point at the dist/ that `npm install`
 * builds (the root `prepare`), which offers what the sources offer and works.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as source from '../../clients/typescript/src/index.ts';

const DIR = resolve(import.meta.dirname, '../../clients/typescript');

describe('the client package', () => {
  const pkg = JSON.parse(readFileSync(resolve(DIR, 'package.json'), 'utf8'));

  it('is an ESM package whose exports and types exist once npm install has built it', () => {
    expect(pkg).toMatchObject({ name: expect.any(String), version: expect.any(String), type: 'module' });
    const entry = pkg.exports['.'];
    for (const file of [entry.types, entry.default, pkg.types]) {
      expect(existsSync(resolve(DIR, file)), `${file} exists (run npm install, or npm run client:build)`).toBe(true);
    }
    // Its one runtime dependency is pinned, and the same version the repository tests with.
    const root = JSON.parse(readFileSync(resolve(DIR, '../../package.json'), 'utf8'));
    expect(pkg.dependencies).toEqual({ 'openapi-fetch': root.devDependencies['openapi-fetch'] });
  });

  it('offers from dist what the sources offer, and works from there', async () => {
    const built = await import(pathToFileURL(resolve(DIR, pkg.exports['.'].default)).href);
    expect(Object.keys(built).sort()).toEqual(Object.keys(source).sort());
    const client = built.createClient({
      baseUrl: 'http://service.test',
      apiKey: 'k',
      fetch: async (req: Request) =>
        new Response(JSON.stringify({ items: [], auth: req.headers.get('authorization') }), {
          headers: { 'content-type': 'application/json' },
        }),
    });
    expect(await client.GET('/v1/webhooks')).toEqual({ items: [], auth: 'Bearer k' });
  });
});
