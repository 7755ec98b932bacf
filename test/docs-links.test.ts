/**
 * The documentation's links lead somewhere: in README.md and every page under docs/ (the
 * design notes included), each relative link `[text](path)` or `[text](path#anchor)` names a
 * file that exists beside the linking page, and an anchor into a page names one of its headings
 * (by GitHub's slug) or an explicit `<a id="…">`. Links to the web, mail links and a page's own
 * `#anchor` are not checked. A failure lists every broken link with its page and line.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

const blank = (s: string) => s.replace(/[^\n]/g, ' ');

/** The text with fenced code blocks blanked out, line breaks kept. */
function withoutFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, blank);
}

/** The text with fenced code blocks and inline code blanked out, line breaks kept. */
function withoutCode(text: string): string {
  return withoutFences(text).replace(/`[^`\n]*`/g, blank);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped but `-` and `_`, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors a page offers: its headings' slugs (repeats numbered as GitHub does) and `<a id>`s. */
function anchorsOf(file: string): Set<string> {
  const known = anchorCache.get(file);
  if (known) return known;
  const text = withoutFences(readFileSync(file, 'utf8'));
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  anchorCache.set(file, anchors);
  return anchors;
}

interface Link {
  page: string;
  line: number;
  target: string;
}

function linksOf(file: string): Link[] {
  const text = withoutCode(readFileSync(file, 'utf8'));
  const links: Link[] = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1];
    if (/^(https?:|mailto:)/i.test(target) || target.startsWith('#')) continue;
    const line = text.slice(0, m.index).split('\n').length;
    links.push({ page: relative(ROOT, file), line, target });
  }
  return links;
}

/** Why a link is broken, or undefined when it leads somewhere. */
function problem(link: Link): string | undefined {
  const [path, anchor] = link.target.split('#', 2);
  const file = resolve(ROOT, dirname(link.page), decodeURIComponent(path));
  if (!existsSync(file)) return 'no such file';
  if (anchor === undefined || anchor === '') return undefined;
  if (!file.endsWith('.md') || statSync(file).isDirectory()) return undefined;
  return anchorsOf(file).has(decodeURIComponent(anchor).toLowerCase()) ? undefined : `no heading #${anchor}`;
}

const PAGES = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))];

describe('links in README.md and docs/', () => {
  it('finds the pages and their links', () => {
    expect(PAGES.length).toBeGreaterThan(10);
    expect(PAGES.flatMap(linksOf).length).toBeGreaterThan(100);
  });

  it('every relative link names an existing file, and every anchor a heading of it', () => {
    const broken = PAGES.flatMap(linksOf).flatMap((link) => {
      const why = problem(link);
      return why ? [`${link.page}:${link.line}: (${link.target}) ${why}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it('reads anchors as GitHub writes them', () => {
    expect(slug('Events: `job.completed`, `job.failed`')).toBe('events-jobcompleted-jobfailed');
    expect(slug('Console ([console.md](console.md))')).toBe('console-consolemd');
    expect(slug('Milestones (webhook events)')).toBe('milestones-webhook-events');
    expect(slug('Runs of 2026-11-27: fair rounds, a_b')).toBe('runs-of-2026-11-27-fair-rounds-a_b');
  });
});
