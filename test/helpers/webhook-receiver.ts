/**
 * A real HTTP receiver on loopback for the webhook suites: records every request (raw body
 * bytes, headers, path, time) and answers as the test says, per path: a status (with
 * headers and a body), a delay, or "hang" (answer nothing until the client gives up).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  body: { type: string; id: string; created_at: string; data: Record<string, unknown> };
  at: number;
}

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  hang?: boolean;
}

export interface Receiver {
  url: string;
  port: number;
  server: Server;
  received: Received[];
  connections: number;
  /** How to answer requests to `path`: a fixed answer, or one per request in turn (last repeats). */
  answer(path: string, answer: Answer | Answer[]): void;
  on(path: string): Received[];
  close(): Promise<void>;
}

export async function startReceiver(host = '127.0.0.1'): Promise<Receiver> {
  const answers = new Map<string, Answer[]>();
  const served = new Map<string, number>();
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const path = (req.url ?? '/').split('?')[0];
      let body: Received['body'];
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        body = { type: '', id: '', created_at: '', data: {} };
      }
      received.push({ path, headers: req.headers, raw, body, at: Date.now() });
      const list = answers.get(path) ?? [{ status: 200 }];
      const n = served.get(path) ?? 0;
      served.set(path, n + 1);
      const a = list[Math.min(n, list.length - 1)];
      if (a.hang) return; // never answer; the sender's timeout ends it
      const send = () => {
        res.writeHead(a.status ?? 200, { 'content-type': 'text/plain', ...(a.headers ?? {}) });
        res.end(a.body ?? 'ok');
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  const r: Receiver = {
    url: '',
    port: 0,
    server,
    received,
    connections: 0,
    answer(path, answer) {
      answers.set(path, Array.isArray(answer) ? answer : [answer]);
      served.set(path, 0);
    },
    on(path) {
      return received.filter((x) => x.path === path);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on('connection', () => {
    r.connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  r.port = port;
  r.url = host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
  return r;
}
