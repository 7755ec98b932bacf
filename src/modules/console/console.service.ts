/**
 * The built console's files: where they are, whether they are there, and its page with the
 * service's BASE_PATH written in. The console is built once for every deployment (Vite, with
 * relative asset addresses); the prefix it runs under is only known here, at run time, so the
 * page is given a `<base href>` (the folder its relative addresses and its own routes resolve
 * against) and a `console-api-base` meta tag (where the API is), not a rebuild per BASE_PATH.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConsoleSettings } from './console.settings.ts';

const escapeAttribute = (s: string) =>
  s.replace(/[&"<>]/g, (c) => ({ '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;' })[c] as string);

/** The console's page, or why it cannot be served. */
export type ConsolePage = { built: true; html: string } | { built: false };

export class ConsoleService {
  private cached: { mtimeMs: number; html: string } | undefined;

  constructor(readonly settings: ConsoleSettings) {}

  get assetsDir(): string {
    return join(this.settings.dir, 'assets');
  }

  /**
   * The page for a console served under `prefix` (BASE_PATH, '' for none). Read again when the
   * file changes, so a rebuild (`npm run console:build`, or `-- --watch` while working) is
   * served without a restart; otherwise from memory.
   */
  async page(prefix: string): Promise<ConsolePage> {
    const file = join(this.settings.dir, 'index.html');
    let mtimeMs: number;
    try {
      mtimeMs = (await stat(file)).mtimeMs;
    } catch {
      // Not built (an install without dev dependencies), or removed: the route says how to build it.
      this.cached = undefined;
      return { built: false };
    }
    if (this.cached?.mtimeMs !== mtimeMs) this.cached = { mtimeMs, html: await readFile(file, 'utf8') };
    return { built: true, html: withBase(this.cached.html, prefix) };
  }
}

/** Writes where the console lives and where its API is into the built page's head. */
export function withBase(html: string, prefix: string): string {
  const tags =
    `<base href="${escapeAttribute(`${prefix}/console/`)}">` +
    `<meta name="console-api-base" content="${escapeAttribute(prefix)}">`;
  const head = /<head[^>]*>/i.exec(html);
  if (!head) return tags + html;
  const at = head.index + head[0].length;
  return html.slice(0, at) + tags + html.slice(at);
}

/** What /console answers while there is nothing to serve: how to build it, in words. */
export const notBuiltPage = (prefix: string) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Console not built</title></head>
<body>
<h1>The console is not built</h1>
<p>This service serves its admin console from the Vite build in <code>console/dist</code>
(or the folder named by <code>CONSOLE_DIR</code>), and there is no <code>index.html</code> there.
This happens after an install without dev dependencies (<code>npm install --omit=dev</code>),
which has no bundler.</p>
<p>To build it, in the service's folder: <code>npm install</code> (its last step builds the
console), or <code>npm run console:build</code>. Then reload this page: no restart is needed.</p>
<p>The API works meanwhile; its reference is at <a href="${escapeAttribute(`${prefix}/docs`)}">${escapeAttribute(`${prefix}/docs`)}</a>.</p>
</body>
</html>
`;
