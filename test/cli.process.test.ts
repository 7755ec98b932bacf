/**
 * The CLI prints the OpenAPI document whole through a pipe. It ends with process.exit, which
 * used to cut a piped document at the pipe's 64 KB buffer (the document is about 400 KB).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { ROOT } from '../support/service-process.ts';

it('`cli openapi` writes the whole document to a pipe', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'src/cli.ts'), 'openapi'],
    {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  expect(stdout.length).toBeGreaterThan(64 * 1024);
  const doc = JSON.parse(stdout) as { openapi: string; paths: Record<string, unknown> };
  expect(doc.openapi).toMatch(/^3\./);
  expect(Object.keys(doc.paths).length).toBeGreaterThan(50);
});
