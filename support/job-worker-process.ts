/**
 * Starts job worker processes (by default support/job-worker-main.ts, a JobEngine) and follows
 * their standard output, one JSON event a line. Used by the crash and contention tests and the
 * jobs bench.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { ROOT } from './service-process.ts';

export interface WorkerEvent {
  event: string;
  id?: number;
  attempt?: number;
  worker?: string;
  at?: number;
  /** `at` with a fraction of a millisecond (performance.timeOrigin + performance.now()), on start events. */
  atHr?: number;
}

export interface WorkerProcess {
  child: ChildProcess;
  events: WorkerEvent[];
  stderr: string[];
  /** Resolves with the first event matching, or rejects after `timeoutMs`. */
  waitFor(match: (e: WorkerEvent) => boolean, timeoutMs?: number): Promise<WorkerEvent>;
  exited: Promise<number | null>;
}

/** Starts `entry` (default: the JobEngine worker of support/job-worker-main.ts). */
export function startWorker(env: Record<string, string>, entry = 'support/job-worker-main.ts'): WorkerProcess {
  // `entry` relative to the checkout, or absolute (another commit's worktree: bench/jobs.bench.ts).
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, entry)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: WorkerEvent[] = [];
  const stderr: string[] = [];
  const listeners = new Set<() => void>();
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl = buffer.indexOf('\n');
    while (nl >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.startsWith('{')) events.push(JSON.parse(line));
      nl = buffer.indexOf('\n');
    }
    for (const l of listeners) l();
  });
  child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    events,
    stderr,
    exited,
    waitFor(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found) {
            clearTimeout(timer);
            listeners.delete(check);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(
              `worker ${child.pid}: no matching event in ${timeoutMs} ms; stderr: ${stderr.join('').slice(-2000)}`,
            ),
          );
        }, timeoutMs);
        listeners.add(check);
        void exited.then(() => {
          check();
        });
        check();
      });
    },
  };
}
