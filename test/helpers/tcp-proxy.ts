/**
 * A TCP proxy between the service and PostgreSQL that a test can cut and restore, so a fault
 * test takes the database away from one process without stopping the machine's shared server
 * (other suites use it). Cut: every open connection is destroyed (the service sees its sockets
 * reset) and new ones are refused until `restore()`.
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Connections forwarded so far (a reconnect shows as a new one). */
  readonly accepted: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let cut = false;
  let accepted = 0;
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    accepted++;
    const upstream = tcpConnect(target.port, target.host);
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    get accepted() {
      return accepted;
    },
    cut() {
      cut = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore() {
      cut = false;
    },
    async close() {
      cut = true;
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
