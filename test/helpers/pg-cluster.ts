/**
 * PostgreSQL servers of a test's own, on spare ports: a primary and streaming standbys made by
 * `pg_basebackup -R`, which the test can stop, kill (`pg_ctl stop -m immediate`: no shutdown
 * checkpoint, clients' sockets reset, as in a crash) and promote. The servers run as the
 * `postgres` OS user (`runuser`, since tests run as root) from /usr/lib/postgresql/15/bin, their
 * data directories under a temporary directory owned by postgres; `destroy()` stops every server
 * and removes it, and the test calls it in afterAll whatever happened.
 */
import { execFile } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../support/service-process.ts';

const run = promisify(execFile);
export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** Whether this machine can start servers of its own (the binaries and the postgres user). */
export function canRunClusters(): boolean {
  return existsSync(join(PG_BIN, 'pg_ctl')) && process.getuid?.() === 0;
}

async function asPostgres(cmd: string, args: string[], timeout = 60_000): Promise<string> {
  const { stdout } = await run('runuser', ['-u', 'postgres', '--', join(PG_BIN, cmd), ...args], { timeout });
  return stdout;
}

export interface PgServer {
  name: string;
  port: number;
  dataDir: string;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  running: boolean;
}

export class PgCluster {
  readonly servers: PgServer[] = [];
  private constructor(private readonly root: string) {}

  static async create(): Promise<PgCluster> {
    const root = mkdtempSync(join(tmpdir(), 'pg-cluster-'));
    chmodSync(root, 0o755);
    const { uid, gid } = await postgresIds();
    chownSync(root, uid, gid);
    return new PgCluster(root);
  }

  /**
   * A primary ready for streaming standbys; `synchronous: true` makes every commit wait until a
   * standby has it (synchronous_standby_names = '*', synchronous_commit = on).
   */
  async primary(options: { synchronous?: boolean; name?: string } = {}): Promise<PgServer> {
    const server = await this.newServer(options.name ?? 'primary');
    await asPostgres('initdb', ['-D', server.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    const conf = [
      `port = ${server.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${this.root}'`,
      'wal_level = replica',
      'max_wal_senders = 10',
      'hot_standby = on',
      'fsync = off',
      // The standby asks for rows the primary may have vacuumed away: no cancelled reads.
      'hot_standby_feedback = on',
      'shared_buffers = 32MB',
      'max_connections = 100',
      ...(options.synchronous ? ["synchronous_standby_names = '*'", 'synchronous_commit = on'] : []),
    ];
    await appendConf(server.dataDir, conf);
    await appendHba(server.dataDir, ['host replication all 127.0.0.1/32 trust', 'host all all 127.0.0.1/32 trust']);
    await this.start(server);
    return server;
  }

  /** A streaming standby of `primary`, from `pg_basebackup -R` (standby.signal and primary_conninfo). */
  async standby(primary: PgServer, name = 'standby'): Promise<PgServer> {
    const server = await this.newServer(name);
    await asPostgres('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      server.dataDir,
      '-R',
      '-X',
      'stream',
      '--no-sync',
      '-d',
      `application_name=${name}`,
    ]);
    // Promoted, it has no standby of its own: it must not wait for one to commit.
    await appendConf(server.dataDir, [`port = ${server.port}`, "synchronous_standby_names = ''"]);
    await this.start(server);
    return server;
  }

  async start(server: PgServer): Promise<void> {
    await asPostgres('pg_ctl', ['-D', server.dataDir, '-l', join(this.root, `${server.name}.log`), '-w', 'start']);
    server.running = true;
  }

  /** `immediate` kills the server as a crash would; `fast` shuts it down cleanly. */
  async stop(server: PgServer, mode: 'immediate' | 'fast' = 'fast'): Promise<void> {
    await asPostgres('pg_ctl', ['-D', server.dataDir, '-m', mode, '-w', 'stop']).catch(() => {});
    server.running = false;
  }

  async promote(server: PgServer): Promise<void> {
    await asPostgres('pg_ctl', ['-D', server.dataDir, '-w', 'promote']);
  }

  /** Runs one statement on a server with a connection of its own. */
  async query<T = Record<string, unknown>>(server: PgServer, sql: string, params: unknown[] = []): Promise<T[]> {
    const c = new pg.Client({ connectionString: server.url });
    c.on('error', () => {});
    await c.connect();
    try {
      return (await c.query(sql, params)).rows as T[];
    } finally {
      await c.end().catch(() => {});
    }
  }

  /** Waits until `standby` has replayed everything `primary` has written so far. */
  async waitForReplay(primary: PgServer, standby: PgServer, timeoutMs = 30_000): Promise<void> {
    const [{ lsn }] = await this.query<{ lsn: string }>(primary, 'SELECT pg_current_wal_lsn()::text AS lsn');
    const until = Date.now() + timeoutMs;
    for (;;) {
      const [{ done }] = await this.query<{ done: boolean }>(
        standby,
        'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done',
        [lsn],
      );
      if (done) return;
      if (Date.now() > until) throw new Error(`${standby.name} did not replay up to ${lsn} in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async destroy(): Promise<void> {
    for (const s of this.servers)
      if (s.running || existsSync(join(s.dataDir, 'postmaster.pid'))) await this.stop(s, 'immediate');
    rmSync(this.root, { recursive: true, force: true });
  }

  private async newServer(name: string): Promise<PgServer> {
    const port = await freePort();
    const server = {
      name,
      port,
      dataDir: join(this.root, name),
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      running: false,
    };
    this.servers.push(server);
    return server;
  }
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

async function appendConf(dataDir: string, lines: string[]): Promise<void> {
  await appendAs(join(dataDir, 'postgresql.conf'), lines);
}

async function appendHba(dataDir: string, lines: string[]): Promise<void> {
  await appendAs(join(dataDir, 'pg_hba.conf'), lines);
}

/** Appends lines to a file the postgres user owns, keeping its owner. */
async function appendAs(file: string, lines: string[]): Promise<void> {
  const { uid, gid } = statSync(file);
  appendFileSync(file, `\n${lines.join('\n')}\n`);
  chownSync(file, uid, gid);
}
