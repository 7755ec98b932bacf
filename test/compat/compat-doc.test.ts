/**
 * docs/compatibility.md is complete: its route table names every operation of `/openapi.json`
 * and of the original's published document, and its list of deviations names every entry the
 * contract check leaves out (test/compat/original.ts). The checker itself is tried on answers
 * that must fail, so a check that passes everything is caught too.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { checkResponsesAgainstSchemas } from '../helpers/response-check.ts';
import { DEVIATIONS, mismatches, originalOperations } from './original.ts';

const DOC = readFileSync(new URL('../../docs/compatibility.md', import.meta.url), 'utf8');
const routeTable = DOC.slice(DOC.indexOf('## Routes'), DOC.indexOf('\n## ', DOC.indexOf('## Routes') + 1));

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('docs/compatibility.md', () => {
  it('lists every operation of /openapi.json in its route table', async () => {
    const spec = (await t.inject({ method: 'GET', url: `${t.config.basePath}/openapi.json` })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    const ours = Object.entries(spec.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(ours.length).toBeGreaterThan(50);
    expect(ours.filter((op) => !routeTable.includes(`\`${op}\``))).toEqual([]);
  });

  it("lists every operation of the original's published document", () => {
    // Ours are written with admin/public where the original writes {zone} for both.
    const missing = originalOperations().filter((op) => {
      const forms = [op, op.replace('/{zone}/', '/admin/'), op.replace('/{zone}/', '/public/')];
      return !forms.some((f) => routeTable.includes(`\`${f}\``));
    });
    expect(missing).toEqual([]);
  });

  it('names every deviation the contract check leaves out', () => {
    const section = DOC.slice(DOC.indexOf('## Deviations from the published document'));
    expect(DEVIATIONS.map((d) => d.field).filter((f) => !section.includes(`| ${f} |`))).toEqual([]);
  });
});

describe('the contract check', () => {
  const caseUrl = '/admin/collection/c1/app/support/cases/case_1';
  it('flags a missing required field, a wrong type and a null the original does not allow', () => {
    const found = mismatches('GET', caseUrl, 200, { id: 5, status: 'open', data: {}, owner: {}, admin: {} });
    expect(found.map((m) => m.path)).toEqual(expect.arrayContaining(['/id', '/orgId', '/collectionId']));
    const status = mismatches('GET', caseUrl, 200, { status: null });
    expect(status.map((m) => m.path)).toContain('/status');
  });

  it('leaves out only the listed deviations', () => {
    const nulls = mismatches('GET', caseUrl, 200, { ref: null, priority: null });
    expect(nulls.map((m) => m.path)).not.toContain('/ref');
    // The same null on a field no deviation names is still flagged.
    expect(mismatches('GET', caseUrl, 200, { createdAt: null }).map((m) => m.path)).toContain('/createdAt');
  });

  it('checks nothing for operations the original does not have', () => {
    expect(mismatches('GET', '/admin/collection/c1/links', 200, { anything: 1 })).toEqual([]);
  });
});

describe('the schema check of every answer (test/helpers/response-check.ts)', () => {
  it('catches a null the route\'s schema does not allow, which the serialiser would send as ""', async () => {
    const app = Fastify();
    const violations = checkResponsesAgainstSchemas(app);
    app.get(
      '/x',
      { schema: { response: { 200: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } } } },
      async () => ({ a: null }),
    );
    await app.ready();
    const res = await app.inject({ method: 'GET', url: '/x' });
    expect(res.json()).toEqual({ a: '' });
    expect(violations).toMatchObject([{ route: 'GET /x', status: 200, errors: [{ path: '/a' }] }]);
    await app.close();
  });
});
