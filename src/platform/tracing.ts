/**
 * OpenTelemetry traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operations.md, "Metrics
 * and traces"): the official Node SDK, exporting over OTLP as the standard OTEL_* variables say
 * (OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf by default, or http/json, grpc), with spans for
 * each request (@fastify/otel: the route, its hooks and handler; the HTTP server span, which
 * carries an incoming `traceparent`) and each database statement (node-postgres; PGlite runs in
 * the process and has no driver to instrument). OTEL_SERVICE_NAME names the service
 * (default `platform-api`). Metrics stay Prometheus' (platform/metrics.ts): the SDK exports
 * no metrics and no logs.
 *
 * Design
 * - Unset, nothing is loaded: this module imports only `node:module`, and the SDK is required
 *   on demand. That is why it is CommonJS `require` and not `import`: it is synchronous, so
 *   the whole start happens while this module is evaluated.
 * - Order: instrumentation patches a library when it is loaded, so this module is server.ts's
 *   first import (ES modules are evaluated in import order: it runs before app.ts and, through
 *   it, before `pg` is evaluated), and `pg` is required here once the SDK has started, so that
 *   the patched module is the one the database layer gets. Fastify needs no such order:
 *   @fastify/otel hears of each new instance on Fastify's diagnostics channel.
 * - The SDK's batch processor sends spans in the background; `stopTracing` flushes what is
 *   left when the process stops.
 */
import { createRequire } from 'node:module';
import type { Env } from './settings.ts';

interface Tracing {
  shutdown(): Promise<void>;
}

const DEFAULT_SERVICE_NAME = 'platform-api';

function startTracing(env: Env): Tracing | undefined {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  const require = createRequire(import.meta.url);
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } =
    require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } =
    require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { FastifyOtelInstrumentation } = require('@fastify/otel') as typeof import('@fastify/otel');
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || DEFAULT_SERVICE_NAME,
    // Traces only: metrics are scraped from /metrics, logs are the process's own lines.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation(),
      // requireParentSpan: a statement outside any request (the job engine's claims, every
      // poll) makes no trace of its own; the statements of a request are spans of its trace.
      new PgInstrumentation({ requireParentSpan: true }),
      new FastifyOtelInstrumentation({ registerOnInitialization: true }),
    ],
  });
  sdk.start();
  // Loaded now, through the instrumentation's hook (see "Order").
  require('pg');
  return sdk;
}

const tracing = startTracing(process.env);

/** Sends the spans not yet exported; the process is stopping. */
export async function stopTracing(): Promise<void> {
  await tracing?.shutdown().catch(() => {});
}
