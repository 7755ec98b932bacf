/**
 * The typed client's generated types (clients/typescript/src/schema.ts) against the service:
 * - not stale: generated afresh (as `npm run client:generate` does) they equal the committed file;
 * - complete: every operation of the served /openapi.json is in the generated `paths`, under
 *   its method and path, pointing at `operations[<its operationId>]`, and nothing more.
 * The generated file is read with the TypeScript compiler's parser, not with patterns.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateClientSchema, SCHEMA_FILE } from '../../support/client-schema.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** `METHOD path → operationId` of every operation the generated `paths` interface declares. */
function generatedOperations(source: string): { routes: Map<string, string>; operationIds: Set<string> } {
  const file = ts.createSourceFile('schema.ts', source, ts.ScriptTarget.ES2022, true);
  const routes = new Map<string, string>();
  const operationIds = new Set<string>();
  const nameOf = (m: ts.TypeElement) =>
    m.name && (ts.isStringLiteral(m.name) || ts.isIdentifier(m.name)) ? m.name.text : undefined;
  for (const stmt of file.statements) {
    if (!ts.isInterfaceDeclaration(stmt)) continue;
    if (stmt.name.text === 'operations') {
      for (const m of stmt.members) operationIds.add(nameOf(m) ?? '?');
    }
    if (stmt.name.text !== 'paths') continue;
    for (const pathMember of stmt.members) {
      const path = nameOf(pathMember);
      if (!path || !ts.isPropertySignature(pathMember) || !pathMember.type || !ts.isTypeLiteralNode(pathMember.type))
        throw new Error(`unexpected member of paths: ${pathMember.getText()}`);
      for (const m of pathMember.type.members) {
        const method = nameOf(m);
        if (!method || !METHODS.includes(method) || !ts.isPropertySignature(m) || !m.type) continue;
        if (m.type.kind === ts.SyntaxKind.NeverKeyword) continue;
        // operations["links_create"]
        const ref = /^operations\["([^"]+)"\]$/.exec(m.type.getText());
        routes.set(`${method.toUpperCase()} ${path}`, ref ? ref[1] : `(inline: ${m.type.getText().slice(0, 60)})`);
      }
    }
  }
  return { routes, operationIds };
}

describe('the generated client types', () => {
  it('are what `npm run client:generate` makes now (regenerate after changing a route)', async () => {
    const fresh = await generateClientSchema();
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    if (fresh !== committed) {
      const tmp = join(tmpdir(), `client-schema-${process.pid}.ts`);
      writeFileSync(tmp, fresh);
      expect.fail(
        `clients/typescript/src/schema.ts is stale: run \`npm run client:generate\` and commit it (diff ${SCHEMA_FILE} ${tmp})`,
      );
    }
  });

  it('cover every operation of /openapi.json, by method, path and operation id', async () => {
    const res = await t.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json() as {
      paths: Record<string, Record<string, { operationId?: string }>>;
      webhooks: Record<string, Record<string, { operationId?: string }>>;
    };
    const served = new Map<string, string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!METHODS.includes(method)) continue;
        expect(op.operationId, `${method} ${path} has an operationId`).toEqual(expect.any(String));
        served.set(`${method.toUpperCase()} ${path}`, op.operationId as string);
      }
    }
    const { routes, operationIds } = generatedOperations(readFileSync(SCHEMA_FILE, 'utf8'));
    // Sorted lists, so that a failure shows which operation is missing or extra.
    expect([...routes].sort()).toEqual([...served].sort());
    // The webhooks section's operations (one per event type) are operations of the client too.
    const events = Object.values(doc.webhooks).map((item) => item.post.operationId as string);
    expect(events.length).toBeGreaterThan(10);
    expect([...operationIds].sort()).toEqual([...new Set([...served.values(), ...events])].sort());
    expect(served.size).toBeGreaterThan(80);
  });
});
