/**
 * The CLI as a real process:
 * - it prints the OpenAPI document whole through a pipe. It ends with process.exit, which used
 *   to cut a piped document at the pipe's 64 KB buffer (the document is about 400 KB);
 * - one owner of an embedded data directory (src/db/data-dir-lock.ts): beside a running
 *   embedded server the CLI refuses, changes nothing and exits non-zero while the server goes
 *   on serving; once the server has stopped it works, and the server started after it sees
 *   what it wrote; a `kill -9`'d server's stale lock is taken over. Runs on PGlite whatever
 *   the backend of the run (the lock is PGlite's; PostgreSQL needs none).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../src/db/index.ts';
import { ROOT, type RunningProcess, spawnTs } from '../support/service-process.ts';

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

describe('one owner of an embedded data directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-lock-'));
  const SUPER = 'cli-lock-test-super-admin-key-0123';
  // PGlite in `dir`, whatever the run's backend.
  const env = { DATA_DIR: dir, DATABASE_URL: '', REDIS_URL: '', SUPER_ADMIN_KEY: SUPER, LOG_LEVEL: 'warn' };
  const lockFile = join(dir, LOCK_FILE);
  let server: RunningProcess | undefined;
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const cli = (...args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'src/cli.ts'), ...args],
        { cwd: ROOT, env: { ...process.env, ...env } },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });
  const start = () => spawnTs('src/server.ts', { env });
  const collections = async (s: RunningProcess) => {
    const res = await fetch(`${s.url}/platform/collections`, { headers: { authorization: `Bearer ${SUPER}` } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { items: { id: string }[] }).items.map((c) => c.id);
  };
  const create = (s: RunningProcess, id: string) =>
    fetch(`${s.url}/platform/collections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SUPER}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: id }),
    });
  const lockPid = () => (JSON.parse(readFileSync(lockFile, 'utf8')) as { pid: number }).pid;

  it('refuses beside a running server, changing nothing; works once it has stopped, and the server sees it', async () => {
    server = await start();
    const serverPid = server.child.pid;
    expect(lockPid()).toBe(serverPid);

    const refused = await cli('collection:create', '--id', 'beta', '--name', 'Beta');
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`in use by process ${serverPid} (server`);
    expect(refused.stderr).toContain('Nothing was changed');
    expect(refused.stderr).toContain('stop the server');
    expect(refused.stderr).toContain('POST /platform/collections');
    const key = await cli('key:create', '--collection', 'anything');
    expect(key.code).toBe(1);
    expect(key.stdout).toBe('');

    // A second server on the same directory stops at start-up, too.
    const second = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'src/server.ts')],
        { cwd: ROOT, env: { ...process.env, ...env, PORT: '0', HOST: '127.0.0.1' } },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      ),
    );
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`in use by process ${serverPid}`);

    // The server was not disturbed: it serves, reads and writes, and holds the lock still.
    expect((await create(server, 'gamma')).status).toBe(200);
    expect(await collections(server)).toEqual(expect.arrayContaining(['gamma']));
    expect(await collections(server)).not.toContain('beta');
    expect(lockPid()).toBe(serverPid);

    expect(await server.stop()).toBe(0);
    server = undefined;
    expect(existsSync(lockFile)).toBe(false);

    const done = await cli('collection:create', '--id', 'beta', '--name', 'Beta');
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ id: 'beta', name: 'Beta' });
    expect(existsSync(lockFile)).toBe(false);

    // What the CLI reported done is there for the server started after it.
    server = await start();
    expect(await collections(server)).toEqual(expect.arrayContaining(['beta', 'gamma']));
  });

  it("takes over a kill -9'd server's stale lock", async () => {
    server ??= await start();
    const deadPid = server.child.pid;
    await server.kill();
    server = undefined;
    // Left behind, naming a process that no longer runs.
    expect(lockPid()).toBe(deadPid);

    const listed = await cli('collection:list');
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((c) => c.id)).toEqual(
      expect.arrayContaining(['beta', 'gamma']),
    );
    expect(existsSync(lockFile)).toBe(false);

    // And a server after a kill -9 of its predecessor, likewise.
    server = await start();
    const again = server;
    await again.kill();
    server = await start();
    expect(lockPid()).toBe(server.child.pid);
    expect(await collections(server)).toEqual(expect.arrayContaining(['beta', 'gamma']));
  });
});
