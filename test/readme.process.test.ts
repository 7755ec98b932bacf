/**
 * The README's first session, run as written: its shell block, with bash and curl, against the
 * service started as the README says (`SUPER_ADMIN_KEY`, `WEBHOOK_ALLOW_PRIVATE_NETWORKS` for
 * the local receiver). Only the addresses change: the service's port and the receiver's are
 * whatever is free here. A step that stops working, or a line that no longer pastes, fails it.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, ROOT, type RunningProcess, spawnTs } from '../support/service-process.ts';
import { type ChildStorage, childStorage } from './helpers/db.ts';

const SUPER = 'my-long-local-super-key';

/** The README's first shell block that starts with the session's variables. */
function session(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.startsWith(`SUPER=${SUPER}`));
  if (!block) throw new Error('README.md has no shell block starting with the session variables');
  return block;
}

let storage: ChildStorage;
let service: RunningProcess;

beforeAll(async () => {
  storage = await childStorage('readme');
  service = await spawnTs('src/server.ts', {
    env: {
      ...storage.env,
      SUPER_ADMIN_KEY: SUPER,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      // A machine slower than the README's `sleep 1` to start the receiver: the missed attempt
      // is made again at once, not in a minute.
      WEBHOOK_RETRY_BASE_MS: '100',
      WEBHOOK_RETRY_FACTOR: '1',
      WEBHOOK_BACKOFF_BASE_MS: '0',
    },
  });
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await storage?.release();
});

describe('the README', () => {
  it('runs its first session as written, receiver step included', async () => {
    const receiverPort = await freePort();
    const script = session()
      .replace('BASE=http://localhost:3000', `BASE=${service.url}`)
      .replaceAll('127.0.0.1:8080', `127.0.0.1:${receiverPort}`)
      .replace('.listen(8080, "127.0.0.1")', `.listen(${receiverPort}, "127.0.0.1")`);
    expect(script).not.toContain('8080'); // every address of the receiver was found
    // The receiver runs in the background, as the README has it; stopped once the session ends.
    const { stdout } = await promisify(execFile)('bash', ['-e', '-c', `${script}\nkill $! 2>/dev/null || true\n`], {
      cwd: ROOT,
      timeout: 60_000,
    });
    expect(stdout).toContain('"id":"acme"');
    expect(stdout).toContain('Berlin Flagship Store');
    expect(stdout).toContain('302 https://example.com/hello');
    expect(stdout).toContain('verified link.created');
    expect(stdout).not.toContain('BAD SIGNATURE');
  }, 90_000);
});
