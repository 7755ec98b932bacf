/**
 * One owner of an embedded (PGlite) data directory at a time. PGlite is PostgreSQL in one
 * process's memory: two processes opening the same files (the server and a CLI run, or two CLI
 * runs) each keep their own buffers and WAL position, so what one writes the other never sees
 * and may overwrite; two writers once crashed PGlite (`Aborted()`). Whoever opens a data
 * directory takes this lock first, and a second opener is refused until it is released.
 *
 * The lock is a file in the directory holding the owner's pid, created with `wx` (exclusive
 * create: exactly one of several openers succeeds). It is removed on close and, failing that,
 * when the process exits. A process killed outright (`kill -9`, a crash, a power cut) leaves
 * it behind: a lock whose pid no longer runs is stale and is taken over. In-memory PGlite and
 * PostgreSQL need no lock (PostgreSQL is a server of many clients).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The lock's file name inside the data directory. */
export const LOCK_FILE = 'service.lock';

interface LockContent {
  pid: number;
  /** Tells our own lock from one that replaced it (a stale takeover by another process). */
  token: string;
  /** Who holds it, for the refusal's message: `server`, `cli collection:create`, … */
  owner: string;
  since: string;
}

/** The data directory is held by another live process. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly lockFile: string,
    readonly holder: { pid: number; owner: string; since: string },
  ) {
    super(
      `The data directory ${dataDir} is in use by process ${holder.pid} (${holder.owner}, since ${holder.since}): ` +
        `an embedded database has one owner at a time. (Lock file: ${lockFile}.)`,
    );
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  readonly file: string;
  /** Removes the lock if it is still ours. Safe to call more than once. */
  release(): void;
}

/** Directories this process holds: a second open in the same process is refused too. */
const held = new Map<string, DataDirLock>();

function alive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists, under another user. ESRCH: it does not.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function read(file: string): LockContent | undefined {
  try {
    const content = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockContent>;
    if (typeof content.pid !== 'number' || !Number.isInteger(content.pid) || content.pid <= 0) return undefined;
    return {
      pid: content.pid,
      token: String(content.token ?? ''),
      owner: String(content.owner ?? 'unknown'),
      since: String(content.since ?? ''),
    };
  } catch {
    return undefined;
  }
}

/**
 * The lock's content; one that cannot be read is read again a moment later, since another
 * opener may be between creating the file and writing its pid.
 */
function readSettled(file: string): LockContent | undefined {
  const first = read(file);
  if (first) return first;
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  return read(file);
}

function createExclusive(file: string, content: LockContent): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify(content));
  } finally {
    closeSync(fd);
  }
  return true;
}

function removeIfUnchanged(file: string, token: string | undefined): void {
  const now = read(file);
  // A lock whose content cannot be read (half written by an opener that died) is stale too.
  if (now === undefined || now.token === token) {
    try {
      unlinkSync(file);
    } catch {}
  }
}

/**
 * Takes the lock of `dataDir` (which must exist) for `owner`, or throws DataDirLockedError
 * naming the live process that holds it. A stale lock (its pid is gone, or its content is
 * unreadable) is taken over: under a guard file of its own, so that two processes finding
 * the same stale lock cannot both remove it, one of them removing the other's fresh lock.
 */
export function lockDataDir(dataDir: string, owner: string): DataDirLock {
  const dir = resolve(dataDir);
  const file = join(dir, LOCK_FILE);
  if (held.has(dir)) {
    const since = read(file)?.since ?? '';
    throw new DataDirLockedError(dataDir, file, { pid: process.pid, owner: 'this very process', since });
  }
  const content: LockContent = {
    pid: process.pid,
    token: randomBytes(12).toString('hex'),
    owner,
    since: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (createExclusive(file, content)) {
      const onExit = () => removeIfUnchanged(file, content.token);
      process.once('exit', onExit);
      const lock: DataDirLock = {
        file,
        release() {
          if (held.get(dir) !== lock) return;
          held.delete(dir);
          process.off('exit', onExit);
          removeIfUnchanged(file, content.token);
        },
      };
      held.set(dir, lock);
      return lock;
    }
    const holder = readSettled(file);
    if (holder && alive(holder.pid)) throw new DataDirLockedError(dataDir, file, holder);
    takeOverStale(file, holder?.token);
  }
  const holder = read(file);
  throw new DataDirLockedError(dataDir, file, holder ?? { pid: 0, owner: 'unknown', since: '' });
}

/** Removes a stale lock, unless another opener is doing the same right now. */
function takeOverStale(file: string, staleToken: string | undefined): void {
  const guard = `${file}.takeover`;
  const guardContent: LockContent = { pid: process.pid, token: '', owner: 'takeover', since: new Date().toISOString() };
  if (!createExclusive(guard, guardContent)) {
    // A guard whose process is gone was left by an opener that died mid-takeover.
    const other = readSettled(guard);
    if (!other || !alive(other.pid)) {
      try {
        unlinkSync(guard);
      } catch {}
    }
    return;
  }
  try {
    // Still the stale lock we read (not one taken meanwhile by another opener)?
    const now = read(file);
    if (now === undefined ? staleToken === undefined : now.token === staleToken && !alive(now.pid)) {
      try {
        unlinkSync(file);
      } catch {}
    }
  } finally {
    try {
      unlinkSync(guard);
    } catch {}
  }
}
