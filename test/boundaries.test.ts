/**
 * The module boundaries, read from the import graph of src/ (docs/architecture.md, Layout):
 * - a module is reached from outside only through its `index.ts` (its manifest and exports);
 * - `src/platform` and `src/db` are below the modules and never import one;
 * - the files of one module import each other without cycles.
 * Every import and `export … from` counts, type-only ones too (a type-only edge is still a
 * dependency a reader must follow, and the next edit may make it a value).
 *
 * Tables are part of the boundary too: each manifest declares the tables it owns and the other
 * modules' tables it reads (`tables`, platform/module.ts). The SQL of a module's files and the
 * migrations (triggers hung on a table, foreign keys) may name only those; every table a
 * migration creates has exactly one owner.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import type { AnyModule } from '../src/platform/module.ts';

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

// ------------------------------------------------------------------------------- tables

const MIGRATIONS = join(ROOT, 'migrations');
const migrations = () =>
  readdirSync(MIGRATIONS)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => ({ file: `migrations/${f}`, text: readFileSync(join(MIGRATIONS, f), 'utf8') }));

/** Every table the migrations create. */
const createdTables = () =>
  new Set(
    migrations().flatMap(({ text }) =>
      [...text.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)/gi)].map((m) =>
        m[1].toLowerCase(),
      ),
    ),
  );

/** The tables named by SQL in a text: after FROM, JOIN, INTO, UPDATE, TABLE, USING, TRUNCATE. */
function tablesNamed(text: string, known: Set<string>): Set<string> {
  const found = new Set<string>();
  for (const m of text.matchAll(
    /\b(?:FROM|JOIN|INTO|UPDATE|TABLE|USING|TRUNCATE)\s+(?:ONLY\s+)?([a-z_][a-z0-9_]*)/gi,
  )) {
    const name = m[1].toLowerCase();
    if (known.has(name)) found.add(name);
  }
  return found;
}

interface Declared {
  name: string;
  dir: string;
  owns: readonly string[];
  reads: readonly string[];
}

async function manifests(): Promise<Declared[]> {
  const dirs = readdirSync(join(SRC, 'modules'), { withFileTypes: true }).filter((e) => e.isDirectory());
  const out: Declared[] = [];
  for (const d of dirs) {
    const exports = (await import(join(SRC, 'modules', d.name, 'index.ts'))) as Record<string, unknown>;
    const m = Object.values(exports).find(
      (v): v is AnyModule => typeof v === 'object' && v !== null && 'tables' in v && 'create' in v,
    );
    if (!m) throw new Error(`src/modules/${d.name}/index.ts exports no manifest`);
    out.push({ name: m.name, dir: d.name, owns: m.tables.owns, reads: m.tables.reads ?? [] });
  }
  return out;
}

/** Undeclared tables in each module's SQL. */
function undeclaredInCode(mods: Declared[], known: Set<string>, extra?: { dir: string; text: string }): string[] {
  const problems: string[] = [];
  for (const m of mods) {
    const allowed = new Set([...m.owns, ...m.reads]);
    const files = tsFiles(join(SRC, 'modules', m.dir)).map((f) => ({ file: rel(f), text: readFileSync(f, 'utf8') }));
    if (extra?.dir === m.dir) files.push({ file: `src/modules/${m.dir}/(scratch)`, text: extra.text });
    for (const { file, text } of files) {
      for (const t of tablesNamed(text, known)) {
        if (!allowed.has(t))
          problems.push(
            `${file} names table "${t}", which module "${m.name}" neither owns nor declares in tables.reads (its manifest, src/modules/${m.dir}/index.ts)`,
          );
      }
    }
  }
  return problems;
}

/** Triggers and foreign keys of the migrations that reach a table the owning module did not declare. */
function undeclaredInMigrations(mods: Declared[], known: Set<string>): string[] {
  const owner = new Map<string, Declared>();
  for (const m of mods) for (const t of m.owns) owner.set(t, m);
  const all = migrations();
  const bodies = new Map<string, string>();
  for (const { text } of all) {
    // Bodies in dollar quotes, tagged or not ($$ … $$, $fn$ … $fn$).
    const fns = /CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+([a-z_][a-z0-9_]*)[\s\S]*?\$(\w*)\$([\s\S]*?)\$\2\$/gi;
    for (const m of text.matchAll(fns)) {
      bodies.set(m[1].toLowerCase(), `${bodies.get(m[1].toLowerCase()) ?? ''}\n${m[3]}`);
    }
  }
  const problems: string[] = [];
  const check = (file: string, by: Declared | undefined, table: string, what: string) => {
    if (!by) return;
    if (!by.owns.includes(table) && !by.reads.includes(table))
      problems.push(`${file}: ${what} reaches "${table}", which module "${by.name}" does not declare in tables.reads`);
  };
  for (const { file, text } of all) {
    // A trigger on table T running a function that writes module M's tables: M reads T.
    for (const m of text.matchAll(
      /CREATE\s+TRIGGER\s+(\w+)[\s\S]*?\bON\s+([a-z_][a-z0-9_]*)[\s\S]*?EXECUTE\s+(?:FUNCTION|PROCEDURE)\s+([a-z_][a-z0-9_]*)/gi,
    )) {
      const [, trigger, table, fn] = m;
      const body = bodies.get(fn.toLowerCase()) ?? '';
      const writes = [...body.matchAll(/\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_][a-z0-9_]*)/gi)]
        .map((w) => w[1].toLowerCase())
        .filter((t) => known.has(t));
      // The module whose tables the trigger writes runs it: the table it hangs on, and every table
      // its function names, must be its own or declared.
      for (const by of new Set(writes.map((w) => owner.get(w)))) {
        for (const t of new Set([table.toLowerCase(), ...tablesNamed(body, known)]))
          check(file, by, t, `trigger ${trigger} (function ${fn})`);
      }
    }
    // A foreign key from a table of module M to table T: M reads T.
    for (const stmt of text.split(/;\s*\n/)) {
      const head =
        /(?:CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?|ALTER\s+TABLE\s+(?:ONLY\s+)?)([a-z_][a-z0-9_]*)/i.exec(stmt);
      if (!head) continue;
      for (const r of stmt.matchAll(/\bREFERENCES\s+([a-z_][a-z0-9_]*)/gi)) {
        check(file, owner.get(head[1].toLowerCase()), r[1].toLowerCase(), `a foreign key of ${head[1]}`);
      }
    }
  }
  return problems;
}

describe('tables are part of the boundary', () => {
  const known = createdTables();

  it('every table a migration creates has exactly one owning module', async () => {
    expect(known.size).toBeGreaterThan(20);
    const mods = await manifests();
    const owners = new Map<string, string[]>();
    for (const m of mods) for (const t of m.owns) owners.set(t, [...(owners.get(t) ?? []), m.name]);
    const problems = [...known].flatMap((t) => {
      const o = owners.get(t) ?? [];
      return o.length === 1 ? [] : [`table "${t}" is owned by ${o.length === 0 ? 'no module' : o.join(' and ')}`];
    });
    for (const t of owners.keys()) if (!known.has(t)) problems.push(`"${t}" is declared but no migration creates it`);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it("a module's SQL names only the tables it owns or declares that it reads", async () => {
    const problems = undeclaredInCode(await manifests(), known);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it("the migrations' triggers and foreign keys reach only declared tables", async () => {
    const problems = undeclaredInMigrations(await manifests(), known);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('the table rules catch what they are meant to', async () => {
    const mods = await manifests();
    // A links repository querying the webhooks' deliveries is caught, naming the manifest.
    const leak = undeclaredInCode(mods, known, { dir: 'links', text: 'SELECT count(*) FROM webhook_deliveries' });
    expect(leak).toEqual([expect.stringMatching(/"webhook_deliveries".*module "links".*tables\.reads/)]);
    expect(tablesNamed('INSERT INTO jobs (x) SELECT 1 FROM links l JOIN link_clicks c ON true', known)).toEqual(
      new Set(['jobs', 'links', 'link_clicks']),
    );
    // Without its declaration, journeys' triggers on interaction_events are caught.
    const journeys = mods.find((m) => m.name === 'journeys')!;
    const undeclared = mods.map((m) =>
      m === journeys ? { ...m, reads: m.reads.filter((t) => t !== 'interaction_events') } : m,
    );
    expect(undeclaredInMigrations(undeclared, known).join('\n')).toMatch(
      /trigger journey_progress_insert.*"interaction_events"/,
    );
  });
});
