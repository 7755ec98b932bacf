/**
 * What the console's browser suites share: Debian's Chromium (`HAVE_BROWSER` is false without
 * it: suites skip themselves then, and fail under CI), the service's key and BASE_PATH, reading
 * tables and text as a person does, and what sticks out of a phone's screen. `startConsole` is
 * the whole set-up for a suite that needs nothing more (test/console-funnels.process.test.ts):
 * the current sources built into a temporary folder, the service started as a child process
 * with BASE_PATH /api/v1 on PGlite or on PostgreSQL (TEST_DATABASE_URL), and a browser page.
 * test/console.process.test.ts keeps its own set-up (a webhook receiver, every request and log
 * line kept to check that no key shows up in them).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { freePort, ROOT, type RunningProcess, spawnTs } from '../../support/service-process.ts';
import { type ChildStorage, childStorage } from './db.ts';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER) {
  const message = `console browser tests: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
  if (process.env.CI) throw new Error(message);
  console.warn(`${message}: skipped`);
}

export const SUPER = 'console-test-super-admin-key-0123456789';
export const BASE_PATH = '/api/v1';
/** Where screenshots go (git-ignored); the ones docs/console.md shows are copied from here. */
export const SHOTS = join(ROOT, 'test-results', 'console');

export interface ConsoleRun {
  /** The API's base address (…/api/v1). */
  api: string;
  page: Page;
  context: BrowserContext;
  /** Errors the page threw, and what it logged (a refused CSP rule among them): none is expected. */
  pageErrors: string[];
  logged: string[];
  call(method: string, path: string, body?: unknown, key?: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

export async function startConsole(prefix: string, env: Record<string, string> = {}): Promise<ConsoleRun> {
  mkdirSync(SHOTS, { recursive: true });
  const buildDir = mkdtempSync(join(tmpdir(), 'console-dist-'));
  const { build } = await import('vite');
  await build({
    configFile: join(ROOT, 'console/vite.config.ts'),
    logLevel: 'warn',
    build: { outDir: buildDir, emptyOutDir: true },
  });
  let storage: ChildStorage | undefined;
  let service: RunningProcess | undefined;
  let browser: Browser | undefined;
  const stop = async () => {
    await browser?.close();
    await service?.stop();
    await storage?.release();
    rmSync(buildDir, { recursive: true, force: true });
  };
  try {
    storage = await childStorage(prefix);
    const port = await freePort();
    const api = `http://127.0.0.1:${port}${BASE_PATH}`;
    service = await spawnTs('src/server.ts', {
      port,
      readyPath: '/readyz',
      capture: true,
      env: {
        ...storage.env,
        SUPER_ADMIN_KEY: SUPER,
        BASE_PATH,
        PUBLIC_BASE_URL: api,
        CONSOLE_DIR: buildDir,
        RATE_LIMIT_MAX: '100000',
        ...env,
      },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    const logged: string[] = [];
    page.on('console', (m) => logged.push(`${m.type()}: ${m.text()}`));
    const call = async (method: string, path: string, body?: unknown, key = SUPER) => {
      const res = await fetch(`${api}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = (await res.json()) as Record<string, unknown>;
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    return { api, page, context, pageErrors, logged, call, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Polls `read` until `ok` holds (or `timeoutMs`); the last value read is in the error. */
export async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < end) {
    last = await read();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: still ${JSON.stringify(last)} after ${timeoutMs} ms`);
}

/** What a person reads: rendered text (block elements apart), white space folded. */
// biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point (textContent runs paragraphs together)
export const text = async (l: Locator) => (await l.innerText()).replace(/\s+/g, ' ').trim();

/** The cells of a table's body rows, as text. */
export async function rows(table: Locator): Promise<string[][]> {
  return table
    .locator('tbody tr')
    .evaluateAll((trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => (td.textContent ?? '').trim())),
    );
}

export async function signIn(page: Page, collectionId: string, key: string) {
  await page.getByLabel('Collection id').fill(collectionId);
  await page.getByLabel('Admin key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/**
 * What sticks out of the page sideways: the page's own width past the screen, and every element
 * whose right edge is past it, except inside a box that scrolls (a table's, a payload's) or a
 * chart's canvas (the same rule as test/console.process.test.ts's).
 */
export const overflowing = (page: Page) =>
  page.evaluate(() => {
    const screen = document.documentElement.clientWidth;
    const out: string[] = [];
    if (document.documentElement.scrollWidth > screen)
      out.push(`the page is ${document.documentElement.scrollWidth} px wide on a ${screen} px screen`);
    for (const el of Array.from(document.querySelectorAll('body *'))) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || el.parentElement?.closest('.table-wrap, pre, .chart, details:not([open])')) continue;
      if (box.right > screen + 1)
        out.push(
          `${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).split(' ').join('.')}` : ''} ends at ${Math.round(box.right)} px`,
        );
    }
    return out.slice(0, 12);
  });
