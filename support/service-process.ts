/**
 * Real child processes of the service, for tests where a process boundary is the subject
 * (restarts, kill -9) and for the bench. Starts `src/server.ts` (or another entry) through tsx.
 * Lives outside test/ so that bench/ and test/ share it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export async function waitForOk(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`process exited (${child.exitCode ?? child.signalCode}) before ${url} answered`);
    }
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

export interface RunningProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** SIGTERM and wait for exit: the graceful path. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit: the crash path. */
  kill(): Promise<void>;
  /** Its standard output so far (the last 1 MiB), when spawned with `capture`. */
  output(): string;
}

export interface SpawnOptions {
  /** The checkout whose entry runs (its own node_modules): this one unless another is named. */
  root?: string;
  env?: Record<string, string>;
  readyPath?: string;
  args?: string[];
  port?: number;
  /** Where the child's output goes; tests keep it quiet, the bench shows it. */
  stdio?: 'inherit' | 'ignore';
  /**
   * For a process without an HTTP listener (ROLE=worker): ready once a line of its standard
   * output contains this text (its log), instead of once `readyPath` answers.
   */
  readyLine?: string;
  /** Keep the child's standard output (its log) for `output()`. */
  capture?: boolean;
}

async function waitForLine(child: ChildProcess, text: string, timeoutMs = 60_000): Promise<void> {
  const out = child.stdout;
  if (!out) throw new Error('readyLine needs the standard output of the child');
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => done(new Error(`no line with "${text}" within ${timeoutMs} ms`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-4096);
      if (seen.includes(text)) done();
    };
    const onExit = () => done(new Error(`process exited (${child.exitCode ?? child.signalCode}) before "${text}"`));
    const done = (err?: Error) => {
      clearTimeout(timer);
      out.off('data', onData);
      child.off('exit', onExit);
      // Keep draining, so a chatty child never blocks on a full pipe.
      out.resume();
      if (err) reject(err);
      else resolve();
    };
    out.on('data', onData);
    child.once('exit', onExit);
  });
}

export async function spawnTs(entry: string, o: SpawnOptions = {}): Promise<RunningProcess> {
  const port = o.port ?? (await freePort());
  const root = o.root ?? ROOT;
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry), ...(o.args ?? [])], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...o.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', o.readyLine || o.capture ? 'pipe' : (o.stdio ?? 'ignore'), o.stdio ?? 'inherit'],
  });
  let captured = '';
  if (o.capture) {
    child.stdout?.on('data', (chunk: Buffer) => {
      captured += chunk.toString();
      if (captured.length > 2 ** 21) captured = captured.slice(-(2 ** 20));
    });
  }
  const url = `http://127.0.0.1:${port}`;
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const waitExit = () => new Promise<void>((resolve) => (exited() ? resolve() : child.once('exit', () => resolve())));
  try {
    if (o.readyLine) await waitForLine(child, o.readyLine);
    else await waitForOk(`${url}${o.readyPath ?? '/healthz'}`, child);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    url,
    port,
    child,
    async stop() {
      if (!exited()) child.kill('SIGTERM');
      await waitExit();
      return child.exitCode;
    },
    async kill() {
      if (!exited()) child.kill('SIGKILL');
      await waitExit();
    },
    output: () => captured,
  };
}
