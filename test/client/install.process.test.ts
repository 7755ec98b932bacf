/**
 * The client installed the way code outside this repository gets it: the folder copied on its
 * own to a temporary directory (no dist/, no node_modules, nothing of the repository around it),
 * `npm install` run in it (its dependency, and dist/ built by its `prepare`), then
 * - an app that depends on the folder (`npm install <path>`), and
 * - an app that installs the tarball `npm pack` writes,
 * each running a script that creates a link through the real service, follows it and lists its
 * clicks. npm reads the registry (or its cache, `--prefer-offline`).
 */
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp, type TestCollection } from '../helpers/app.ts';

const CLIENT = resolve(import.meta.dirname, '../../clients/typescript');
const NPM = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];

/** Creates a link, follows it, waits for the click to be stored and prints the link's clicks. */
const SCRIPT = `
import { createClient } from '@collection-platform/client';
const api = createClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY });
const collectionId = process.env.COLLECTION_ID;
const link = await api.POST('/admin/collection/{collectionId}/links', {
  params: { path: { collectionId } },
  body: { url: 'https://example.com/from-a-copy' },
});
const { response } = await api.raw.GET('/l/{code}', { params: { path: { code: link.code } }, redirect: 'manual' });
let clicks;
for (let i = 0; i < 50; i++) {
  clicks = await api.GET('/admin/collection/{collectionId}/links/{linkId}/clicks', {
    params: { path: { collectionId, linkId: link.id } },
  });
  if (clicks.total > 0) break;
  await new Promise((r) => setTimeout(r, 100));
}
console.log(JSON.stringify({ status: response.status, location: response.headers.get('location'), total: clicks.total }));
`;

let t: TestApp;
let c: TestCollection;
let baseUrl: string;
let dir: string;

beforeAll(async () => {
  t = await createTestApp({ CLICK_FLUSH_MS: '5' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  c = await t.createCollection();
  dir = mkdtempSync(join(tmpdir(), 'client-copy-'));
  // The package's own files only: what a copy of the folder, or a checkout of it alone, holds.
  mkdirSync(join(dir, 'client'));
  for (const name of ['package.json', 'package-lock.json', 'tsconfig.json', 'README.md', 'src']) {
    cpSync(join(CLIENT, name), join(dir, 'client', name), { recursive: true });
  }
  execFileSync('npm', ['install', ...NPM], { cwd: join(dir, 'client'), stdio: 'pipe' });
}, 300_000);
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * An app of its own in the temporary directory, with `dependency` installed and the script run
 * (asynchronously: the service it calls answers from this process).
 */
async function appWith(name: string, dependency: string): Promise<{ status: number; location: string; total: number }> {
  const app = join(dir, name);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name, version: '1.0.0', type: 'module', private: true }));
  writeFileSync(join(app, 'main.js'), SCRIPT);
  execFileSync('npm', ['install', ...NPM, dependency], { cwd: app, stdio: 'pipe' });
  const { stdout } = await promisify(execFile)(process.execPath, ['main.js'], {
    cwd: app,
    env: { ...process.env, BASE_URL: baseUrl, API_KEY: c.key, COLLECTION_ID: c.id },
  });
  return JSON.parse(stdout);
}

describe('the client from a copy of its folder', () => {
  it('builds on npm install, and works as a path dependency', async () => {
    expect(readdirSync(join(dir, 'client', 'dist'))).toContain('index.js');
    expect(await appWith('by-path', join(dir, 'client'))).toEqual({
      status: 302,
      location: 'https://example.com/from-a-copy',
      total: 1,
    });
  }, 120_000);

  it('packs, and works installed from the tarball', async () => {
    execFileSync('npm', ['pack', '--loglevel=error'], { cwd: join(dir, 'client'), stdio: 'pipe' });
    const tarball = readdirSync(join(dir, 'client')).find((f) => f.endsWith('.tgz'));
    expect(tarball).toBeDefined();
    expect(await appWith('by-tarball', join(dir, 'client', tarball as string))).toEqual({
      status: 302,
      location: 'https://example.com/from-a-copy',
      total: 1,
    });
  }, 120_000);
});
