/**
 * Traces (docs/operations.md, "Metrics and traces"): the service as a real process with
 * OTEL_EXPORTER_OTLP_ENDPOINT pointing at a real OTLP/HTTP receiver on loopback (node:http,
 * collecting what is POSTed to /v1/traces as JSON: OTEL_EXPORTER_OTLP_PROTOCOL=http/json).
 * A request yields a server span naming its route template, in the service named by
 * OTEL_SERVICE_NAME, and on PostgreSQL a node-postgres span of its statement in the same trace.
 * PGlite runs inside the process with no driver to instrument: there the database part is
 * skipped. Without the variable no OpenTelemetry module is loaded. Also: METRICS_PORT serves
 * /metrics on a listener of its own, for a worker as for an API.
 */
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RunningProcess, spawnTs } from '../support/service-process.ts';
import { SUPER_KEY } from './helpers/app.ts';
import { type ChildStorage, childStorage, onPostgres } from './helpers/db.ts';
import { waitFor } from './helpers/jobs.ts';
import { parseExposition, sampleValue } from './helpers/prometheus.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}
interface ExportedSpan extends OtlpSpan {
  service: string;
}

let receiver: Server;
let endpoint = '';
const spans: ExportedSpan[] = [];
let storage: ChildStorage | undefined;
let service: RunningProcess | undefined;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? []) {
          const name = rs.resource?.attributes?.find((a: { key: string }) => a.key === 'service.name');
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? []) spans.push({ ...s, service: name?.value?.stringValue });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  storage = await childStorage('traces');
  service = await spawnTs('src/server.ts', {
    env: {
      ...storage.env,
      SUPER_ADMIN_KEY: SUPER_KEY,
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'platform-test',
      // Spans leave at once rather than after the default 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
    readyPath: '/readyz',
  });
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await storage?.release();
  await new Promise((resolve) => receiver?.close(resolve));
});

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes?.find((a) => a.key === key)?.value;
  return v?.stringValue ?? v?.intValue;
};

describe('traces over OTLP', () => {
  it('sends a span per request naming its route, and on PostgreSQL its statements in the same trace', async () => {
    const res = await fetch(`${service?.url}/platform/collections`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SUPER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'traced', name: 'Traced' }),
    });
    expect(res.status).toBe(200);
    const route = await waitFor(
      async () => spans.find((s) => attr(s, 'http.route') === '/platform/collections'),
      20_000,
      'a span of the route',
    );
    expect(route.service).toBe('platform-test');
    const server = await waitFor(
      async () => spans.find((s) => s.traceId === route.traceId && s.kind === 2),
      20_000,
      'the server span',
    );
    expect(attr(server, 'http.response.status_code') ?? attr(server, 'http.status_code')).toBe(200);
    if (!onPostgres) return; // PGlite: no driver, no database spans (see the top).
    const statement = await waitFor(
      async () => spans.find((s) => s.traceId === route.traceId && s.name.startsWith('pg.query:INSERT')),
      20_000,
      'a pg span in the same trace',
    );
    expect(statement.kind).toBe(3); // client
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let plain: RunningProcess | undefined;
  let plainStorage: ChildStorage | undefined;
  afterAll(async () => {
    await plain?.stop();
    await plainStorage?.release();
  });

  it('serves /metrics apart on METRICS_PORT, a worker too', async () => {
    plainStorage = await childStorage('untraced');
    const metricsPort = await freePort();
    plain = await spawnTs('src/server.ts', {
      env: {
        ...plainStorage.env,
        SUPER_ADMIN_KEY: SUPER_KEY,
        METRICS_PORT: String(metricsPort),
        ROLE: 'worker',
        LOG_LEVEL: 'info',
      },
      readyLine: 'worker started',
      capture: true,
    });
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    const samples = parseExposition(await res.text());
    expect(samples.some((s) => s.name === 'process_cpu_user_seconds_total')).toBe(true);
    expect(sampleValue(samples, 'link_click_buffer_size')).toBe(0);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/other`)).status).toBe(404);
  });

  it('loads no OpenTelemetry module when the variable is unset', async () => {
    expect(process.env.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    await import('../src/platform/tracing.ts');
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    // (The test runner itself may load @opentelemetry/api; the SDK and instrumentations are ours.)
    expect(loaded.filter((path) => /sdk-node|instrumentation|@fastify[/\\]otel/.test(path))).toEqual([]);
  });
});
