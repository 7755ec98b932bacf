/**
 * The console in a real browser: Debian's Chromium (`/usr/bin/chromium`, or CHROMIUM_PATH)
 * driven by playwright-core, against the real service started as a child process with
 * BASE_PATH=/api/v1, on PGlite (a data directory) or on PostgreSQL when TEST_DATABASE_URL is
 * set. The console is built afresh from console/ into a temporary folder (CONSOLE_DIR), so the
 * test always drives the current sources.
 *
 * One session, in order: sign in; create a link, follow it five times, read five clicks in the
 * chart's table and the breakdowns; read the event catalogue; register a webhook (a family, a
 * filter) to a receiver that fails, read the failed attempts and the disabled state, be asked to
 * enable it first, recover once it answers again, read the log's rows, opened and filtered;
 * enqueue a records.import job and follow its progress to done; declare an app task and see it
 * offered; create, disable, enable, run now and delete a schedule; read a funnel built from known
 * events; read the case summary; sign out, and as collection B see nothing of A.
 *
 * Screenshots of each page go to test-results/console/ (git-ignored). The first load's
 * JavaScript (gzip bytes of the files it fetched, from the build) and its time to interactive
 * (the console's `console-interactive` mark, when the sign-in form is usable) are printed, not
 * asserted (docs/benchmarks.md).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import jsqrModule from 'jsqr';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, ROOT, type RunningProcess, spawnTs } from '../support/service-process.ts';
import { BASE_PATH, CHROMIUM, HAVE_BROWSER, overflowing, rows, SHOTS, SUPER, text } from './helpers/console-browser.ts';
import { type ChildStorage, childStorage } from './helpers/db.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

// jsqr is CommonJS with an `exports.default`: Node hands its module object as the default import.
const jsQR = ((jsqrModule as unknown as { default?: unknown }).default ?? jsqrModule) as typeof jsqrModule.default;
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1';
const DESKTOP = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';

let storage: ChildStorage | undefined;
let service: RunningProcess | undefined;
let receiver: Receiver | undefined;
let browser: Browser | undefined;
let context: BrowserContext;
let page: Page;
let buildDir: string;
let api: string;
const keys = { a: '', b: '' };
const A = 'console-a';
const B = 'console-b';
/** What the browser asked for and logged, for the checks that the key never shows up there. */
const requested: string[] = [];
const logged: string[] = [];
const pageErrors: string[] = [];

async function call(method: string, path: string, body?: unknown, key = SUPER) {
  const res = await fetch(`${api}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Polls `read` until it answers `want` (or `timeoutMs`), running `between` after each miss. */
async function until<T>(
  what: string,
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  { timeoutMs = 30_000, between }: { timeoutMs?: number; between?: () => Promise<void> } = {},
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < end) {
    last = await read();
    if (ok(last)) return last;
    if (between) await between();
    else await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: still ${JSON.stringify(last)} after ${timeoutMs} ms`);
}

const shot = (name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
const nav = (name: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();

async function signIn(collectionId: string, key: string) {
  await page.getByLabel('Collection id').fill(collectionId);
  await page.getByLabel('Admin key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function signOut() {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
}

beforeAll(async () => {
  if (!HAVE_BROWSER) return;
  mkdirSync(SHOTS, { recursive: true });
  // The current sources, built as `npm install` builds them, into a folder of this run's own.
  buildDir = mkdtempSync(join(tmpdir(), 'console-dist-'));
  const { build } = await import('vite');
  await build({
    configFile: join(ROOT, 'console/vite.config.ts'),
    logLevel: 'warn',
    build: { outDir: buildDir, emptyOutDir: true },
  });

  storage = await childStorage('console');
  receiver = await startReceiver();
  const port = await freePort();
  api = `http://127.0.0.1:${port}${BASE_PATH}`;
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
      LOG_LEVEL: 'info',
      RATE_LIMIT_MAX: '100000',
      // The receiver is on loopback; a failing delivery is retried once after ~300 ms, and two
      // failures in a row disable the registration.
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_MAX_RETRIES: '1',
      WEBHOOK_RETRY_BASE_MS: '300',
      // One failed delivery (its two attempts) disables the registration.
      WEBHOOK_DISABLE_AFTER_FAILURES: '1',
    },
  });

  for (const [id, slot] of [
    [A, 'a'],
    [B, 'b'],
  ] as const) {
    await call('POST', '/platform/collections', { id, name: id });
    keys[slot] = (await call('POST', `/admin/collection/${id}/api-keys`, { name: 'console test' })).key as string;
  }
  await seedFunnel();
  await seedCases();

  browser = await chromium.launch({ executablePath: CHROMIUM });
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  context.on('request', (r) => requested.push(r.url()));
  page = await context.newPage();
  page.on('console', (m) => logged.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => pageErrors.push(e.message));
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await receiver?.close();
  await storage?.release();
  if (buildDir) rmSync(buildDir, { recursive: true, force: true });
});

/**
 * Journey "Checkout": s1 = view/success, s2 = buy/paid. u1..u4 and u10 enter two hours ago;
 * u1..u3 and u10 view an hour later; u1, u2 and u10 buy half an hour after that. Funnel: s1 5 → 4
 * (80 %, 60 min), s2 4 → 3 (75 %, 30 min). u10 is listed after u2 (numbers by their value). B has a journey event of its own that A's funnel must not count.
 */
async function seedFunnel() {
  for (const c of [A, B]) {
    for (const id of ['enter', 'view', 'buy']) {
      await call('POST', `/admin/collection/${c}/interactions`, { id, appId: 'shop' }, c === A ? keys.a : keys.b);
    }
  }
  const journey = await call(
    'POST',
    `/admin/collection/${A}/journeys`,
    {
      name: 'Checkout',
      journeyType: 'event_triggered',
      data: {
        steps: [
          { id: 's1', config: { interactionId: 'view' } },
          { id: 's2', config: { interactionId: 'buy', outcome: 'paid' } },
        ],
      },
    },
    keys.a,
  );
  const at = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
  const append = (userId: string, interactionId: string, outcome: string, msAgo: number, extra = {}) =>
    call(
      'POST',
      `/admin/collection/${A}/interactions/append`,
      { interactionId, userId, outcome, timestamp: at(msAgo), ...extra },
      keys.a,
    );
  for (const u of ['u1', 'u2', 'u3', 'u4', 'u10'])
    await append(u, 'enter', 'entered', 7_200_000, { journeyId: journey.id });
  for (const u of ['u1', 'u2', 'u3', 'u10']) await append(u, 'view', 'success', 3_600_000);
  for (const u of ['u1', 'u2', 'u10']) await append(u, 'buy', 'paid', 1_800_000);
  await call(
    'POST',
    `/admin/collection/${B}/interactions/append`,
    { interactionId: 'enter', userId: 'x9', outcome: 'entered', journeyId: journey.id },
    keys.b,
  );
}

/** App "desk": open ×3 (priorities 1, 2, none), closed ×1 (priority 2). */
async function seedCases() {
  for (const body of [
    { status: 'open', priority: 1 },
    { status: 'open', priority: 2 },
    { status: 'open' },
    { status: 'closed', priority: 2 },
  ]) {
    await call('POST', `/admin/collection/${A}/app/desk/cases`, body, keys.a);
  }
}

describe.skipIf(!HAVE_BROWSER)('the console in Chromium', () => {
  let linkId = '';

  it('loads under BASE_PATH and signs in; the first load is measured', async () => {
    const firstLoadJs: string[] = [];
    const onResponse = (r: { url(): string }) => {
      if (r.url().endsWith('.js')) firstLoadJs.push(r.url());
    };
    page.on('response', onResponse);
    const started = Date.now();
    await page.goto(`${api}/console`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    const wallMs = Date.now() - started;
    page.off('response', onResponse);
    const timing = await page.evaluate(() => ({
      interactive: performance.getEntriesByName('console-interactive')[0]?.startTime,
      domContentLoaded: (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming)
        .domContentLoadedEventEnd,
    }));
    const gzipOf = (url: string) =>
      gzipSync(readFileSync(join(buildDir, 'assets', basename(new URL(url).pathname)))).length;
    const firstGzip = firstLoadJs.reduce((n, u) => n + gzipOf(u), 0);
    const allJs = listJs(buildDir);
    const allGzip = allJs.reduce((n, f) => n + gzipSync(readFileSync(f)).length, 0);
    console.log(
      `console first load: ${firstLoadJs.length} JavaScript file(s), ${firstGzip} bytes gzipped ` +
        `(${firstLoadJs.map((u) => basename(u)).join(', ')}); every chunk of the console: ${allGzip} bytes gzipped; ` +
        `interactive at ${timing.interactive?.toFixed(0)} ms (performance mark), DOMContentLoaded ` +
        `${timing.domContentLoaded.toFixed(0)} ms, ${wallMs} ms from goto to a usable form`,
    );
    expect(timing.interactive).toEqual(expect.any(Number));
    expect(firstLoadJs.length).toBeGreaterThan(0);
    await shot('sign-in');

    // A key of another collection is refused, in words, with the request id.
    await signIn(A, keys.b);
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    expect(await text(refusal)).toMatch(/Could not sign in: .+401 FORBIDDEN · request id \S+/);

    await signIn(A, keys.a);
    await page.getByRole('heading', { name: 'Links', exact: true }).waitFor();
    expect(await page.evaluate(() => Object.keys(sessionStorage))).toEqual(['console.session']);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(new URL(page.url()).pathname).toBe(`${BASE_PATH}/console/links`);
  });

  it('creates a link, and after five visits shows five clicks in the chart, its table and the breakdowns', async () => {
    const form = page.getByRole('region', { name: 'New link' });
    await form.getByLabel('Destination').fill('https://example.com/console-test');
    await form.getByLabel('Title (optional)').fill('Console test');
    await form.getByRole('button', { name: 'Create link' }).click();
    const created = page.getByRole('status').filter({ hasText: 'Created' });
    await created.waitFor();
    const shortUrl = await text(created.getByRole('link'));
    expect(shortUrl).toMatch(new RegExp(`^${api}/l/[A-Za-z0-9]{7}$`));
    const list = page.getByRole('table').filter({ hasText: 'Console test' });
    await list.waitFor();
    await shot('links');

    for (const [ua, referer] of [
      [IPHONE, 'https://news.example/a'],
      [IPHONE, 'https://news.example/b'],
      [IPHONE, ''],
      [DESKTOP, 'https://news.example/c'],
      [DESKTOP, ''],
    ]) {
      const res = await fetch(shortUrl, {
        redirect: 'manual',
        headers: { 'user-agent': ua, ...(referer ? { referer } : {}) },
      });
      expect(res.status).toBe(302);
    }

    await created.getByRole('link').click();
    await page.getByRole('heading', { name: /^Link / }).waitFor();
    linkId = new URL(page.url()).pathname.split('/').at(-1) ?? '';
    // Clicks are stored a moment after the redirect (CLICK_FLUSH_MS): refresh until they are.
    await until(
      'clicks in the window, and on the link',
      async () => [await text(page.locator('[data-total-clicks]')), await text(page.locator('dl.facts dd').nth(2))],
      ([inWindow, allTime]) => inWindow === '5' && allTime === '5',
      { between: () => page.getByRole('button', { name: 'Refresh', exact: true }).click() },
    );
    const figure = page.getByRole('figure', { name: 'Clicks per hour' });
    await figure.locator('[data-drawn="true"]').waitFor();
    // The chart's table is folded away (<details>) until asked for: hidden, but there.
    const series = await rows(figure.getByRole('table', { name: 'Clicks per hour (UTC)', includeHidden: true }));
    expect(series.reduce((n, r) => n + Number(r[1]), 0)).toBe(5);
    expect(series.find((r) => r[1] === '5')?.[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00Z$/);
    // The analytics: clicks and unique visitors (one per user agent here: one address), by device.
    const analytics = page.getByRole('region', { name: 'Analytics', exact: true });
    await until(
      'clicks and uniques in the analytics',
      async () => [
        await text(analytics.locator('[data-analytics-clicks]')),
        await text(analytics.locator('[data-analytics-uniques]')),
      ],
      ([clicks, uniques]) => clicks === '5' && uniques === '2',
      { between: () => analytics.getByRole('button', { name: 'Refresh the analytics' }).click() },
    );
    await analytics.getByLabel('Break down by').selectOption('device');
    await until(
      'the analytics by device',
      async () => (await rows(analytics.getByRole('table', { name: 'Clicks by device' }))).map((r) => r.slice(0, 3)),
      (r) =>
        JSON.stringify(r) ===
        JSON.stringify([
          ['mobile', '3', '1'],
          ['desktop', '2', '1'],
        ]),
    );
    // Every breakdown is the analytics' (bots left out): an empty value is named for what it
    // means, and an unknown country says where countries come from.
    await analytics.getByLabel('Break down by').selectOption('referer');
    await until(
      'the analytics by referer',
      async () =>
        (await rows(analytics.getByRole('table', { name: 'Clicks by referer (host)' }))).map((r) => r.slice(0, 2)),
      (r) =>
        JSON.stringify(r) ===
        JSON.stringify([
          ['news.example', '3'],
          ['(direct)', '2'],
        ]),
    );
    await analytics.getByLabel('Break down by').selectOption('country');
    await until(
      'the analytics by country',
      async () => (await rows(analytics.getByRole('table', { name: 'Clicks by country' }))).map((r) => r.slice(0, 2)),
      (r) => JSON.stringify(r) === JSON.stringify([['(unknown)', '5']]),
    );
    expect(await text(analytics.locator('.geoip-hint'))).toContain('GEOIP_DB');
    await analytics.getByLabel('Break down by').selectOption('device');
    await page.getByText('Clicks per hour: the data as a table').click();
    await shot('link');
    // The collection's analytics on the list, by link.
    await nav('Links');
    const all = page.getByRole('region', { name: 'Analytics of every link' });
    await until(
      'the collection’s clicks by link',
      async () => (await rows(all.getByRole('table', { name: 'Clicks by link' }))).map((r) => r.slice(0, 2)),
      (r) => JSON.stringify(r) === JSON.stringify([[linkId, '5']]),
    );
  });

  it('gives a link’s QR code: a preview, and a PNG download that decodes to its address', async () => {
    await page.goto(`${api}/console/links/${linkId}`);
    const panel = page.getByRole('region', { name: 'QR code' });
    const preview = panel.getByRole('img', { name: /^QR code of / });
    await preview.waitFor();
    await until(
      'the preview drawn',
      () => preview.evaluate((img) => (img as HTMLImageElement).naturalWidth),
      (w) => w > 0,
    );
    const shortUrl = (await call('GET', `/admin/collection/${A}/links/${linkId}`, undefined, keys.a)).shortUrl;
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      panel.getByRole('button', { name: 'Download PNG' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^qr-[A-Za-z0-9]+\.png$/);
    const png = PNG.sync.read(readFileSync(await download.path()));
    const decoded = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
    expect(decoded?.data).toBe(`${shortUrl}?qr=1`);
    // The list's QR button downloads the same code.
    await nav('Links');
    const [fromList] = await Promise.all([
      page.waitForEvent('download'),
      page
        .getByRole('button', { name: /^Download the QR code of / })
        .first()
        .click(),
    ]);
    expect(fromList.suggestedFilename()).toMatch(/^qr-.+\.png$/);
  });

  it('adds a domain and shows both proofs; links offer only verified domains', async () => {
    await nav('Domains');
    await page.getByRole('heading', { level: 1, name: 'Domains' }).waitFor();
    await page.getByText('No domains yet').waitFor();
    await page.getByRole('textbox', { name: 'Domain', exact: true }).fill('Go.Console-Test.io');
    await page.getByRole('button', { name: 'Add domain' }).click();
    const card = page.locator('article[data-domain="go.console-test.io"]');
    await card.waitFor();
    expect(await card.locator('[data-domain-state]').getAttribute('data-domain-state')).toBe('pending');
    expect(await text(card)).toContain('_platform-verify.go.console-test.io');
    expect(await text(card)).toContain('/.well-known/platform-verify.txt');
    // A name that is no host name is refused in words.
    await page.getByRole('textbox', { name: 'Domain', exact: true }).fill('https://x.example.com/path');
    await page.getByRole('button', { name: 'Add domain' }).click();
    expect(await text(page.getByRole('alert').first())).toMatch(/Could not add the domain: .*400/);
    await shot('domains');
    // Not verified: the new-link form does not offer it.
    await nav('Links');
    await page.locator('select[name="domain"] option').first().waitFor({ state: 'attached' });
    await page.waitForLoadState('networkidle');
    const options = await page.locator('select[name="domain"] option').allTextContents();
    expect(options).toEqual(['the service’s own']);
  });

  it('lists the event catalogue by family, each type with its schema and an example', async () => {
    await nav('Webhooks');
    await page.getByRole('link', { name: 'The event catalogue' }).click();
    await page.getByRole('heading', { name: 'Event catalogue' }).waitFor();
    const served = (await (await fetch(`${api}/v1/webhooks/event-types`)).json()) as {
      items: { type: string; family: string; schema: Record<string, unknown>; example: Record<string, unknown> }[];
    };
    const entries = page.locator('details[data-event-type]');
    await entries.first().waitFor();
    const listed = await entries.evaluateAll((ds) => ds.map((d) => d.getAttribute('data-event-type')));
    expect([...listed].sort()).toEqual(served.items.map((t) => t.type).sort());
    const families = await page
      .locator('section[data-family]')
      .evaluateAll((ss) => ss.map((s) => s.getAttribute('data-family')));
    expect(families).toEqual([...new Set(served.items.map((t) => t.family))].sort());
    expect(families).toEqual(expect.arrayContaining(['link', 'webhook']));

    // Folded until opened; opened, the schema and the example are the catalogue's own.
    const clicked = page.locator('details[data-event-type="link.clicked"]');
    expect(await clicked.locator('pre[data-schema]').isVisible()).toBe(false);
    await clicked.locator('summary').click();
    const schema = JSON.parse(await text(clicked.locator('pre[data-schema]')));
    const served1 = served.items.find((t) => t.type === 'link.clicked');
    expect(schema).toEqual(served1?.schema);
    expect(schema.properties).toHaveProperty('link_id');
    expect(JSON.parse(await text(clicked.locator('pre[data-example]')))).toEqual(served1?.example);
    const fields = await rows(clicked.getByRole('table', { name: 'Fields of link.clicked data' }));
    expect(fields.find((r) => r[0] === 'link_id')?.slice(1, 3)).toEqual(['string', 'yes']);
    // The opened type at the top of the window (the whole catalogue is a long page).
    await clicked.evaluate((d) => d.scrollIntoView());
    await page.screenshot({ path: join(SHOTS, 'webhook-catalogue.png') });
  });

  it('registers from the catalogue with a filter; a failing receiver is disabled; enable-first, recover, and a log of compact rows that open onto attempts and payload, filtered by event type', async () => {
    const hook = receiver!;
    hook.answer('/hook', { status: 503, body: 'receiver down for maintenance' });
    await nav('Webhooks');
    const form = page.getByRole('region', { name: 'New registration' });
    await form.getByLabel('Receiver address').fill(`${hook.url}/hook`);
    // Nothing chosen yet: said in words, nothing sent.
    await form.getByRole('button', { name: 'Register' }).click();
    expect(await text(form.getByRole('alert'))).toBe(
      'Could not register the receiver: Choose at least one event (a type, a family or every event).',
    );
    await form.getByLabel('link.*', { exact: true }).check();
    // The family covers its types: they show checked and cannot be unchecked alone.
    expect(await form.getByLabel('link.updated', { exact: true }).isChecked()).toBe(true);
    expect(await form.getByLabel('link.updated', { exact: true }).isDisabled()).toBe(true);
    await form.getByLabel('Link ids').fill(` ${linkId}, ${linkId} `);
    // A chosen type the filter cannot apply to is named: with link ids set it would never come.
    await form.getByLabel('webhook.*', { exact: true }).check();
    expect(await text(form.locator('[data-silenced="linkIds"]'))).toBe(
      'With link ids set, these chosen types are never sent (they are not about links): webhook.disabled.',
    );
    await shot('webhook-new');
    await form.getByLabel('webhook.*', { exact: true }).uncheck();
    expect(await form.locator('[data-silenced]').count()).toBe(0);
    await form.getByRole('button', { name: 'Register' }).click();
    const secret = page.locator('code.secret');
    await secret.waitFor();
    expect(await text(secret)).toMatch(/^whsec_/);
    const [registered] = (await call('GET', '/v1/webhooks', undefined, keys.a)).items as {
      id: string;
      events: string[];
      filters: unknown;
    }[];
    expect(registered.events).toEqual(['link.*']);
    expect(registered.filters).toEqual({ linkIds: [linkId] });
    await page.getByRole('link', { name: `${hook.url}/hook` }).click();
    expect(await text(page.locator('[data-filters]'))).toBe(`linkIds: ${linkId}`);
    await page.getByRole('button', { name: 'Send test event' }).click();

    const state = page.locator('[data-state]');
    const deliveries = page.locator('table.deliveries tbody[data-delivery]');
    const testRow = deliveries.first();
    await until(
      'the test delivery to fail twice and the registration to be disabled',
      async () => [await testRow.getAttribute('data-status'), await state.getAttribute('data-state')],
      ([status, s]) => status === 'failed' && s === 'disabled',
      { between: () => page.getByRole('button', { name: 'Refresh' }).click() },
    );
    expect(await text(state)).toMatch(/^Disabled .+: .+/);
    expect(await text(page.locator('[data-inactive="disabled"]'))).toMatch(
      /^Disabled \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: .+\. Nothing is sent to it meanwhile/,
    );
    // One compact row: time, type, status, attempts, last status code; closed.
    const summary = (await rows(page.locator('table.deliveries')))[0];
    expect(summary.slice(2)).toEqual(['webhook.test', 'failed', '2', '503']);
    expect(summary[1]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    expect(await testRow.locator('tr.detail').count()).toBe(0);

    // Opened: every attempt, and the payload the receiver was sent.
    await testRow.getByRole('button', { name: /^Attempts and payload of delivery / }).click();
    const attempts = await rows(testRow.getByRole('table'));
    expect(attempts.map((r) => [r[0], r[1], r[3], r[4]])).toEqual([
      ['1', 'test', '503', 'failed'],
      ['2', 'retry', '503', 'failed'],
    ]);
    expect(attempts[0][5]).toMatch(/^\d+ ms$/);
    expect(attempts[0][7]).toBe('receiver down for maintenance');
    const payload = JSON.parse(await text(testRow.locator('pre[data-payload]')));
    expect(payload).toMatchObject({ type: 'webhook.test', id: expect.stringMatching(/^evt_/) });
    expect(hook.on('/hook')[0].body).toEqual(payload);
    await shot('webhook-failed');

    // Redeliver and recover on the disabled registration: the page asks to enable it first,
    // and does not call the API (which would answer 409).
    await testRow.getByRole('button', { name: 'Redeliver' }).click();
    const prompt = page.locator('[data-prompt="enable-first"]');
    expect(await text(prompt)).toMatch(
      /^To redeliver, enable the registration first: it was disabled .+ \(.+\), and nothing is sent to an inactive registration\. Enable it first Not now$/,
    );
    await page.getByRole('button', { name: 'Recover', exact: true }).click();
    expect(await text(prompt)).toMatch(/^To recover, enable the registration first/);
    expect(requested.filter((u) => /\/(redeliver|recover)$/.test(u))).toEqual([]);
    await shot('webhook-enable-first');

    hook.answer('/hook', { status: 200, body: 'ok, thanks' });
    await prompt.getByRole('button', { name: 'Enable it first' }).click();
    await until(
      'the registration to be active',
      () => state.getAttribute('data-state'),
      (s) => s === 'active',
    );
    await page.getByText('You can recover now.').waitFor();
    expect(await prompt.count()).toBe(0);
    // Since a day ago (the default): the one failed delivery is queued again, and succeeds.
    await page.getByRole('button', { name: 'Recover', exact: true }).click();
    const recovered = page.locator('[data-recovered]');
    await recovered.waitFor();
    expect(await text(recovered)).toBe('1 delivery queued again: follow them in the log.');
    await until(
      'the recovered delivery to succeed',
      () => testRow.getAttribute('data-status'),
      (s) => s === 'succeeded',
      { between: () => page.getByRole('button', { name: 'Refresh' }).click() },
    );
    const after = await rows(testRow.getByRole('table'));
    expect(after.at(-1)?.slice(0, 5)).toEqual(['3', 'redeliver', expect.any(String), '200', 'succeeded']);
    expect(after.at(-1)?.[7]).toBe('ok, thanks');

    // A link outside the filter sends nothing; the filtered link's change is delivered.
    await call('POST', `/admin/collection/${A}/links`, { url: 'https://example.com/not-filtered' }, keys.a);
    await call('PATCH', `/admin/collection/${A}/links/${linkId}`, { title: 'Console test, renamed' }, keys.a);
    await until(
      'the link.updated delivery to succeed',
      () =>
        deliveries.evaluateAll((ts) =>
          ts.map((t) => `${t.getAttribute('data-event-type')} ${t.getAttribute('data-status')}`),
        ),
      (v) => v.length === 2 && v[0] === 'link.updated succeeded',
      { between: () => page.getByRole('button', { name: 'Refresh' }).click() },
    );
    const types = () => deliveries.evaluateAll((ts) => ts.map((t) => t.getAttribute('data-event-type')));
    // Filtered by event type: only that type's rows.
    const byType = page.getByLabel('Event type');
    await byType.selectOption('link.updated');
    await until('link.updated rows', types, (v) => v.length === 1 && v[0] === 'link.updated');
    await byType.selectOption('webhook.test');
    await until('webhook.test rows', types, (v) => v.length === 1 && v[0] === 'webhook.test');
    await byType.selectOption('link.created');
    await page.getByText('No link.created deliveries.').waitFor();
    await byType.selectOption('');
    await until('every row', types, (v) => v.length === 2);

    // Active, redeliver goes straight through.
    const linkRow = deliveries.first();
    await linkRow.getByRole('button', { name: /^Attempts and payload of delivery / }).click();
    expect(JSON.parse(await text(linkRow.locator('pre[data-payload]')))).toMatchObject({
      type: 'link.updated',
      data: { link_id: linkId, title: 'Console test, renamed' },
    });
    await linkRow.getByRole('button', { name: 'Redeliver' }).click();
    await page.getByText(/^Delivery \S+ is sent again\.$/).waitFor();
    await until(
      'the redelivery to succeed',
      async () => (await rows(linkRow.getByRole('table'))).map((r) => `${r[1]} ${r[4]}`),
      (v) => v.join(', ') === 'automatic succeeded, redeliver succeeded',
      { between: () => page.getByRole('button', { name: 'Refresh' }).click() },
    );
    expect(hook.on('/hook').map((r) => r.body.type)).toEqual([
      'webhook.test',
      'webhook.test',
      'webhook.test',
      'link.updated',
      'link.updated',
    ]);
    await shot('webhooks');

    // The filter removed in the change form: null on PATCH.
    await page.getByText('Change the address, events, filters or description').click();
    const edit = page.locator('details.edit');
    await edit.getByLabel('Link ids').fill('');
    await edit.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved: later events are chosen and filtered this way.').waitFor();
    await until(
      'the filters removed',
      () => text(page.locator('[data-filters]')),
      (v) => v === 'none: every event of these types',
    );
    expect((await call('GET', `/v1/webhooks/${registered.id}`, undefined, keys.a)).filters).toBeNull();
  }, 120_000);

  it('enqueues a records.import job from the task picker and follows its progress to done', async () => {
    await nav('Jobs');
    // One bad item of 3,000: the job completes, and says one failed.
    const items: Record<string, unknown>[] = Array.from({ length: 3000 }, (_, i) => ({
      ref: `r${i}`,
      data: { label: `Item ${i}` },
    }));
    items[1500] = { ref: 'r-bad', startsAt: 'whenever' };
    const form = page.getByRole('region', { name: 'Enqueue a job' });
    // The picker offers the service's tasks; picking one shows its example payload.
    const picker = form.locator('select[name="task"]');
    await picker.locator('option', { hasText: 'cases.bulkStatus' }).waitFor({ state: 'attached' });
    await picker.selectOption('cases.bulkStatus');
    expect(JSON.parse(await form.getByLabel('Payload (JSON').inputValue())).toMatchObject({ status: 'closed' });
    await picker.selectOption('records.import');
    expect(JSON.parse(await form.getByLabel('Payload (JSON').inputValue())).toMatchObject({ appId: 'desk' });
    await form.getByLabel('Payload (JSON').fill(JSON.stringify({ appId: 'desk', items }));
    await form.getByRole('button', { name: 'Enqueue' }).click();
    const queued = page.getByRole('status').filter({ hasText: 'is queued' });
    await queued.waitFor();
    const jobId = /Job (\d+)/.exec(await text(queued))?.[1];
    expect(jobId).toBeDefined();

    const row = page.locator('table.jobs tbody tr').filter({ has: page.locator(`td:first-child:text-is("${jobId}")`) });
    const seen = new Set<string>();
    let shotWhileRunning = false;
    const final = await until(
      'the job to complete',
      async () => {
        // Read at once, without waiting for elements a row may not have yet (no progress while queued).
        const { status, progress } = await row.evaluate((tr) => ({
          status: tr.querySelector('[data-job-status]')?.getAttribute('data-job-status') ?? '',
          progress: tr.querySelector('[data-progress]')?.getAttribute('data-progress') ?? '',
        }));
        seen.add(`${status} ${progress}`.trim());
        if (status === 'running' && progress && !shotWhileRunning) {
          shotWhileRunning = true;
          await shot('jobs-running');
        }
        return { status, progress };
      },
      (v) => v.status === 'completed',
      { timeoutMs: 120_000, between: () => new Promise((r) => setTimeout(r, 100)) },
    );
    console.log(`console jobs: states seen while polling: ${[...seen].join(' | ')}`);
    expect(final.progress).toBe('3000 / 3000');
    // Completed with a failed item: a warning, not a success.
    expect(await text(row.locator('[data-job-status]'))).toBe('completed, 1 failed');
    expect(await row.locator('.badge.partial').count()).toBe(1);
    await row.getByText('Result and payload').click();
    expect(await text(row.locator('pre.json').first())).toMatch(/"total": 3000/);
    await shot('jobs');

    // A job due tomorrow waits: cancelled from its row, then found by the state filter.
    const later = await call(
      'POST',
      `/admin/collection/${A}/async/jobs`,
      { task: 'records.import', payload: { appId: 'desk', items: [{ ref: 'later' }] }, runAt: '2099-01-01' },
      keys.a,
    );
    await nav('Links');
    await nav('Jobs');
    const waiting = page
      .locator('table.jobs tbody tr')
      .filter({ has: page.locator(`td:first-child:text-is("${later.id}")`) });
    // Its row says when it runs.
    expect(await text(waiting)).toContain('2099-01-01 00:00:00 UTC');
    await waiting.getByRole('button', { name: 'Cancel' }).click();
    await waiting.locator('[data-job-status="cancelled"]').waitFor();
    await page.getByLabel('State').selectOption('cancelled');
    await until(
      'only the cancelled job listed',
      () => page.locator('table.jobs tbody tr td:first-child').allTextContents(),
      (ids) => ids.length === 1 && ids[0] === String(later.id),
    );
    // Retried from its row: queued again (due now: it runs with the next claim).
    await waiting.getByRole('button', { name: 'Retry' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Job ${later.id} is queued again.` })
      .waitFor();
    const retried = await call('GET', `/admin/collection/${A}/jobs/${later.id}`, undefined, keys.a);
    expect(['queued', 'running', 'completed']).toContain(retried.status);
  }, 150_000);

  it('shows the queues with their depth, pauses one, and sets its concurrency and rate', async () => {
    // A queue with a job due in the future: listed with one pending job.
    await call(
      'POST',
      `/admin/collection/${A}/async/jobs`,
      {
        task: 'records.import',
        payload: { appId: 'desk', items: [{ ref: 'q' }] },
        runAt: '2099-01-01',
        queueName: 'imports',
      },
      keys.a,
    );
    await nav('Queues');
    const table = page.getByRole('table', { name: 'Queues by name' });
    await table.waitFor();
    const row = table.locator('tbody tr').filter({ hasText: 'imports' });
    expect((await rows(table)).find((r) => r[0] === 'imports')?.slice(0, 5)).toEqual([
      'imports',
      'running',
      '1',
      '0',
      '0',
    ]);
    await row.getByRole('button', { name: 'Pause imports' }).click();
    await row.locator('[data-queue-state="paused"]').waitFor();
    expect((await call('GET', `/admin/collection/${A}/queues/imports`, undefined, keys.a)).paused).toBe(true);
    await row.getByRole('button', { name: 'Settings of imports' }).click();
    const form = page.getByRole('region', { name: 'Queue settings' });
    expect(await form.getByLabel('Queue name').inputValue()).toBe('imports');
    await form.getByLabel('Jobs at once').fill('3');
    await form.getByLabel('Starts a second').fill('2');
    await form.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Queue imports: 3 at a time, 2 a second.' }).waitFor();
    await until(
      'the row to show the settings',
      async () => (await rows(table)).find((r) => r[0] === 'imports')?.slice(8, 10),
      (v) => v?.[0] === '3' && v?.[1] === '2 / s',
    );
    await row.getByRole('button', { name: 'Resume imports' }).click();
    await row.locator('[data-queue-state="running"]').waitFor();
    await shot('queues');
  });

  it('declares an app task on the Tasks page, shows its template and worker, and offers it to the Jobs page', async () => {
    await nav('Tasks');
    // The service's own tasks, read-only, beside the app's (none yet).
    const service = page.getByRole('table', { name: 'The service’s tasks' });
    await service.waitFor();
    expect((await rows(service)).map((r) => r[0])).toEqual(
      expect.arrayContaining(['records.import', 'cases.bulkStatus']),
    );
    await page.getByText('No tasks of the app’s own yet').waitFor();

    const form = page.getByRole('region', { name: 'Declare a task' });
    await form.getByLabel('Name').fill('orders.ship');
    await form.getByLabel('Description').fill('Books the courier for an order');
    await form.getByLabel('Max attempts').fill('3');
    await form.getByLabel('Lease seconds').fill('120');
    // JSON that does not parse is refused in the page, before any call.
    await form.getByLabel('Payload schema').fill('{"type": "object",');
    const before = requested.length;
    await form.getByRole('button', { name: 'Declare' }).click();
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    expect(await text(refusal)).toMatch(/^Could not declare the task: The payload schema is not valid JSON: /);
    expect(requested.slice(before).filter((u) => u.endsWith(`/collection/${A}/tasks`))).toEqual([]);

    const schema = {
      type: 'object',
      required: ['orderId'],
      properties: { orderId: { type: 'string', maxLength: 40 }, rush: { type: 'boolean' } },
      additionalProperties: false,
    };
    await form.getByLabel('Payload schema').fill(JSON.stringify(schema));
    await form.getByLabel('Example payload').fill('{"orderId": "o-1"}');
    await form.getByRole('button', { name: 'Declare' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'Task orders.ship is declared: 3 attempts, leases of 120 s.' })
      .waitFor();
    expect(await call('GET', `/admin/collection/${A}/tasks/orders.ship`, undefined, keys.a)).toMatchObject({
      maxAttempts: 3,
      leaseSeconds: 120,
      payloadSchema: schema,
      example: { orderId: 'o-1' },
    });
    const table = page.getByRole('table', { name: 'The app’s tasks, by name' });
    await table.waitFor();
    const [row] = await rows(table);
    expect(row.slice(0, 4)).toEqual(['orders.ship', 'Books the courier for an order', '3', '120 s']);
    // The template: the example, and the schema folded under it.
    expect(row[4]).toContain('"orderId": "o-1"');
    expect(row[4]).toContain('"additionalProperties": false');
    // How a worker runs it: the typed client's runWorker for this task, with a Copy button.
    await table.getByText('The typed client’s runWorker').click();
    const snippet = await text(table.locator('pre[data-worker-snippet="orders.ship"]'));
    expect(snippet).toContain('runWorker({');
    expect(snippet).toContain(`collectionId: "${A}"`);
    expect(snippet).toContain('tasks: ["orders.ship"]');
    expect(snippet).toContain(`baseUrl: "${api}"`);
    await table.getByText('Schema', { exact: true }).click();
    await table.getByRole('button', { name: 'Copy the worker of orders.ship' }).waitFor();
    await shot('tasks');

    // The Jobs page's picker offers it, with its example as the payload.
    await nav('Jobs');
    const enqueue = page.getByRole('region', { name: 'Enqueue a job' });
    const picker = enqueue.locator('select[name="task"]');
    await picker.locator('option', { hasText: 'orders.ship' }).waitFor({ state: 'attached' });
    await picker.selectOption('orders.ship');
    expect(JSON.parse(await enqueue.getByLabel('Payload (JSON').inputValue())).toEqual({ orderId: 'o-1' });
  });

  it('creates a schedule, shows its next run, disables and enables it, runs it now, refuses a bad cron and deletes it', async () => {
    // One that stays (for the app's task, in another zone), for the screenshots and for B's check.
    await call(
      'POST',
      `/admin/collection/${A}/schedules`,
      {
        name: 'ship on weekdays',
        cron: '0 9 * * 1-5',
        timezone: 'Europe/Berlin',
        task: 'orders.ship',
        payload: { orderId: 'o-2' },
      },
      keys.a,
    );
    await nav('Schedules');
    const form = page.getByRole('region', { name: 'New schedule' });
    const picker = form.locator('select[name="task"]');
    // Both kinds of tasks are offered: the app's declared one, the service's.
    await picker.locator('option', { hasText: 'orders.ship' }).waitFor({ state: 'attached' });
    await picker.selectOption('records.import');
    expect(JSON.parse(await form.getByLabel('Payload (JSON').inputValue())).toMatchObject({ appId: 'desk' });
    await form.getByLabel('Name').fill('nightly import');

    // A cron of four fields: refused with the service's message, which says what a cron is.
    await form.getByLabel('Cron').fill('0 3 * *');
    await form.getByRole('button', { name: 'Create schedule' }).click();
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    expect(await text(refusal)).toMatch(
      /^Could not create the schedule: cron "0 3 \* \*" must have five fields: minute hour day-of-month month day-of-week .* 400 BAD_REQUEST · request id \S+$/,
    );
    // A cron with a seconds field (six fields): refused with the service's message.
    await form.getByLabel('Cron').fill('0 0 3 * * *');
    await form.getByRole('button', { name: 'Create schedule' }).click();
    await until(
      'the six-field refusal',
      () => text(refusal),
      (v) =>
        /^Could not create the schedule: cron "0 0 3 \* \* \*" must have five fields: .* 400 BAD_REQUEST · request id \S+$/.test(
          v,
        ),
      { timeoutMs: 10_000 },
    );

    await form.getByLabel('Cron').fill('0 3 * * *');
    expect(await form.getByLabel('Time zone').inputValue()).toBe('UTC');
    await form.getByRole('button', { name: 'Create schedule' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^Schedule nightly import is created: next run \d{4}-\d\d-\d\d 03:00:00 UTC\.$/ })
      .waitFor();
    const table = page.getByRole('table', { name: 'Schedules by name' });
    const row = table.locator('tbody tr').filter({ hasText: 'nightly import' });
    await row.waitFor();
    const cells = (await rows(table)).find((r) => r[0] === 'nightly import') ?? [];
    expect(cells.slice(0, 4)).toEqual(['nightly import', '0 3 * * * UTC', 'records.import', 'enabled']);
    expect(cells[4]).toMatch(/^\d{4}-\d\d-\d\d 03:00:00 UTC$/);
    expect((await rows(table)).find((r) => r[0] === 'ship on weekdays')?.[1]).toBe('0 9 * * 1-5 Europe/Berlin');
    const id = (
      (
        (await call('GET', `/admin/collection/${A}/schedules`, undefined, keys.a)).items as {
          id: string;
          name: string;
        }[]
      ).find((s) => s.name === 'nightly import') ?? { id: '' }
    ).id;
    expect(id).toMatch(/^sch_/);

    // Disabled: no next run; enabled: its next run again.
    await row.getByRole('button', { name: 'Disable nightly import' }).click();
    await row.locator('[data-schedule-state="disabled"]').waitFor();
    expect(await call('GET', `/admin/collection/${A}/schedules/${id}`, undefined, keys.a)).toMatchObject({
      enabled: false,
      nextRunAt: null,
    });
    expect(await text(row.locator('[data-next-run]'))).toBe('—');
    await row.getByRole('button', { name: 'Enable nightly import' }).click();
    await row.locator('[data-schedule-state="enabled"]').waitFor();
    expect(await text(row.locator('[data-next-run]'))).toMatch(/^\d{4}-\d\d-\d\d 03:00:00 UTC$/);

    // Run now: a job of the task, listed with the others, and the schedule's last job.
    await row.getByRole('button', { name: 'Run nightly import now' }).click();
    const queued = page.getByRole('status').filter({ hasText: /^Job \d+ is queued\.$/ });
    await queued.waitFor();
    const jobId = /Job (\d+)/.exec(await text(queued))?.[1];
    const job = await call('GET', `/admin/collection/${A}/jobs/${jobId}`, undefined, keys.a);
    expect(job).toMatchObject({ task: 'records.import', payload: { appId: 'desk' } });
    expect(job.key).toMatch(new RegExp(`^schedule:${id}:run:`));
    await row.locator(`[data-last-job="${jobId}"]`).waitFor();
    expect(await text(row.locator('td').nth(5))).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    await shot('schedules');

    // Delete asks first, in the page; only Yes deletes.
    await row.getByRole('button', { name: 'Delete nightly import' }).click();
    expect(((await call('GET', `/admin/collection/${A}/schedules`, undefined, keys.a)).items as unknown[]).length).toBe(
      2,
    );
    await row.getByRole('button', { name: 'Yes, delete nightly import' }).click();
    await page.getByRole('status').filter({ hasText: 'Schedule nightly import is deleted' }).waitFor();
    await until(
      'only the weekday schedule listed',
      async () => (await rows(table)).map((r) => r[0]),
      (names) => names.join() === 'ship on weekdays',
    );
    expect(
      ((await call('GET', `/admin/collection/${A}/schedules`, undefined, keys.a)).items as { name: string }[]).map(
        (s) => s.name,
      ),
    ).toEqual(['ship on weekdays']);
  });

  it('reads the funnel of a journey built from known events, and the people of a step', async () => {
    await nav('Journeys');
    const steps = page.getByRole('table', { name: 'Steps', exact: true });
    await steps.waitFor();
    expect((await rows(steps)).map((r) => r.slice(0, 7))).toEqual([
      ['s1', 'view · success', '5', '4', '80 %', '80 %', '60 min'],
      ['s2', 'buy · paid', '4', '3', '75 %', '60 %', '30 min'],
    ]);
    await page.locator('figure [data-drawn="true"]').first().waitFor();
    await steps.getByRole('button', { name: 'People of s2' }).click();
    const ids = page.locator('[data-people]');
    await page.getByRole('tab', { name: 'Converted (3)' }).click();
    // In the service's order, by id as text, page after page (test/console-funnels… reads the rest).
    await until(
      'converted at s2',
      () => ids.getAttribute('data-people'),
      (v) => v === 'u1 u10 u2',
    );
    await page.getByRole('tab', { name: 'Dropped off (1)' }).click();
    await until(
      'dropped off at s2',
      () => ids.getAttribute('data-people'),
      (v) => v === 'u3',
    );
    await shot('journeys');
  });

  it('shows an app’s cases by status, priority and week', async () => {
    await nav('Cases');
    // The apps that hold cases are offered before anything is typed.
    await page.getByText('Pick an app to see its cases: desk.').waitFor();
    expect(
      await page.locator('datalist#case-apps option').evaluateAll((os) => os.map((o) => o.getAttribute('value'))),
    ).toEqual(['desk']);
    await page.getByLabel('App id').fill('desk');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('[data-total-cases="4"]').waitFor();
    expect(await rows(page.getByRole('table', { name: 'Cases by status', includeHidden: true }))).toEqual([
      ['open', '3'],
      ['closed', '1'],
    ]);
    expect(await rows(page.getByRole('table', { name: 'Cases by priority', includeHidden: true }))).toEqual([
      ['1', '1'],
      ['2', '2'],
      ['none', '1'],
    ]);
    const weeks = await rows(page.getByRole('table', { name: /Cases opened per ISO week/, includeHidden: true }));
    expect(weeks).toEqual([[expect.stringMatching(/^\d{4}-W\d\d$/), expect.any(String), '4']]);
    await until(
      'the three charts',
      () => page.locator('figure [data-drawn="true"]').count(),
      (n) => n === 3,
    );
    await shot('cases');
  });

  it('fits every page on a phone (390 px) and a desktop (1280 px): nothing wider than the screen', async () => {
    const hookId = ((await call('GET', '/v1/webhooks', undefined, keys.a)).items as { id: string }[])[0]?.id;
    expect(hookId).toBeTruthy();
    /** [route, the page's heading, the screenshot's name] */
    const pages: [string, string | RegExp, string][] = [
      ['links', 'Links', 'links'],
      [`links/${linkId}`, /^Link /, 'link'],
      ['domains', 'Domains', 'domains'],
      ['webhooks', 'Webhooks', 'webhooks'],
      [`webhooks/${hookId}`, /^Webhook /, 'webhook'],
      ['webhooks/event-types', 'Event catalogue', 'event-types'],
      ['jobs', 'Jobs', 'jobs'],
      ['queues', 'Queues', 'queues'],
      ['schedules', 'Schedules', 'schedules'],
      ['tasks', 'Tasks', 'tasks'],
      ['journeys', 'Journeys', 'journeys'],
      ['cases', 'Cases', 'cases'],
    ];
    for (const width of [390, 1280]) {
      await page.setViewportSize({ width, height: 844 });
      for (const [route, heading, name] of pages) {
        await page.goto(`${api}/console/${route}`);
        await page.getByRole('heading', { level: 1, name: heading }).waitFor();
        await page.waitForLoadState('networkidle');
        expect(await overflowing(page), `${route} at ${width} px`).toEqual([]);
        await shot(`${width}-${name}`);
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('signs out (forgetting the key), and collection B’s admin sees nothing of A', async () => {
    await signOut();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await signIn(B, keys.b);
    await page.getByText('No links yet').waitFor();
    await nav('Domains');
    await page.getByText('No domains yet').waitFor();
    await nav('Webhooks');
    await page.getByText('No registrations yet').waitFor();
    await nav('Jobs');
    await page.getByText('No jobs yet.').waitFor();
    // A's task is not offered to B.
    await page
      .locator('select[name="task"] option', { hasText: 'records.import' })
      .first()
      .waitFor({ state: 'attached' });
    expect(await page.locator('select[name="task"] option').allTextContents()).not.toContain('orders.ship');
    await nav('Schedules');
    await page.getByText('No schedules yet').waitFor();
    await nav('Tasks');
    await page.getByText('No tasks of the app’s own yet').waitFor();
    await nav('Journeys');
    await page.getByText('No journeys yet.').waitFor();
    await nav('Cases');
    await page.getByLabel('App id').fill('desk');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText(`No cases of app desk were opened`).waitFor();
    // A's link, asked for by address, is not found for B.
    await page.goto(`${api}/console/links/${linkId}`);
    const error = page.getByRole('alert');
    await error.waitFor();
    expect(await text(error)).toMatch(/^Could not read the link: .*not found.* 404 NOT_FOUND · request id \S+$/i);
    await shot('tenancy-b');
    await signOut();
  });

  it('never put an admin key in an address, the browser’s log or the service’s log, and broke no CSP rule', () => {
    expect(keys.a).toMatch(/\S{16,}/);
    for (const key of [keys.a, keys.b]) {
      expect(requested.filter((u) => u.includes(key))).toEqual([]);
      expect(logged.filter((l) => l.includes(key))).toEqual([]);
      expect(service?.output()).not.toContain(key);
    }
    expect(requested.length).toBeGreaterThan(20);
    expect(logged.filter((l) => /Content Security Policy|Refused to/i.test(l))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

/** Every JavaScript file of a build (all the console's chunks, loaded or not). */
const listJs = (dir: string) =>
  readdirSync(join(dir, 'assets'))
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(dir, 'assets', f));
