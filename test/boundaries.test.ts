/**
 * The module boundaries, read from the import graph of src/ (docs/architecture.md, Layout):
 * - a module is reached from outside only through its `index.ts` (its manifest and exports);
 * - `src/platform` and `src/db` are below the modules and never import one;
 * - the files of one module import each other without cycles.
 * Every import and `export … from` counts, type-only ones too (a type-only edge is still a
 * dependency a reader must follow, and the next edit may make it a value).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');

const rel = (abs: string) => relative(ROOT, abs).split(sep).join('/');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

interface Edge {
  from: string;
  to: string;
  line: number;
}

/** Relative imports of every file under src/, resolved to paths relative to the repository. */
function importGraph(): Edge[] {
  const edges: Edge[] = [];
  for (const file of tsFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    // Imports, `export … from`, `import()` and `import x = require()`: the compiler's own scanner.
    const { importedFiles } = ts.preProcessFile(text, true, true);
    for (const imp of importedFiles) {
      if (!imp.fileName.startsWith('.')) continue; // packages and node: built-ins
      const line = text.slice(0, imp.pos).split('\n').length;
      edges.push({ from: rel(file), to: rel(resolve(dirname(file), imp.fileName)), line });
    }
  }
  return edges;
}

/** `src/modules/<name>/…` → name; anything else → undefined. */
const moduleOf = (path: string) => /^src\/modules\/([^/]+)\//.exec(path)?.[1];

/** The boundary rule an edge breaks, if any. */
function violation(e: Edge): string | undefined {
  const target = moduleOf(e.to);
  if (target === undefined) return undefined;
  if (/^src\/(platform|db)\//.test(e.from)) {
    return `src/platform and src/db never import a module, but ${e.from}:${e.line} imports ${e.to}`;
  }
  if (moduleOf(e.from) === target) return undefined;
  if (e.to === `src/modules/${target}/index.ts`) return undefined;
  return `${e.from}:${e.line} imports ${e.to}, an internal file of module "${target}"; import src/modules/${target}/index.ts instead (export what is needed there)`;
}

/** The cycles among the files of each module (strongly connected components with an edge back). */
function cyclesWithinModules(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    const m = moduleOf(e.from);
    if (m === undefined || moduleOf(e.to) !== m) continue;
    next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  }
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const selfLoop = (next.get(v) ?? []).includes(v);
      if (component.length > 1 || selfLoop) cycles.push(component.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe('module boundaries', () => {
  const edges = importGraph();

  it('reads the import graph', () => {
    // A parser that found nothing would make every rule below pass.
    expect(edges.length).toBeGreaterThan(50);
    expect(edges).toContainEqual(expect.objectContaining({ from: 'src/app.ts', to: 'src/modules/links/index.ts' }));
  });

  it('reaches another module only through its index.ts; platform and db import no module', () => {
    const broken = edges.map(violation).filter((v): v is string => v !== undefined);
    expect(broken, `Module boundaries broken:\n${broken.join('\n')}`).toEqual([]);
  });

  it('has no import cycle among the files of one module', () => {
    const cycles = cyclesWithinModules(edges).map((c) => c.join(' ↔ '));
    expect(cycles, `Import cycles inside a module:\n${cycles.join('\n')}`).toEqual([]);
  });

  it('the rules catch what they are meant to', () => {
    expect(violation({ from: 'src/modules/links/x.ts', to: 'src/modules/webhooks/sender.ts', line: 1 })).toMatch(
      /internal file of module "webhooks"/,
    );
    expect(violation({ from: 'src/app.ts', to: 'src/modules/jobs/engine.ts', line: 1 })).toBeDefined();
    expect(violation({ from: 'src/db/index.ts', to: 'src/modules/jobs/index.ts', line: 1 })).toMatch(/never import/);
    expect(violation({ from: 'src/modules/links/x.ts', to: 'src/modules/webhooks/index.ts', line: 1 })).toBeUndefined();
    expect(violation({ from: 'src/modules/links/x.ts', to: 'src/modules/links/y.ts', line: 1 })).toBeUndefined();
    expect(
      cyclesWithinModules([
        { from: 'src/modules/a/x.ts', to: 'src/modules/a/y.ts', line: 1 },
        { from: 'src/modules/a/y.ts', to: 'src/modules/a/x.ts', line: 1 },
      ]),
    ).toEqual([['src/modules/a/x.ts', 'src/modules/a/y.ts']]);
  });
});
