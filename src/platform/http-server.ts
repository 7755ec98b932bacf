/**
 * The HTTP server the service listens with. Its timeouts are set from the configuration
 * rather than left at Node's defaults (under which a client may take 60 s to send its headers
 * and 5 minutes to send a request), and everything it answers, including what Node's parser
 * and Fastify's router refuse before any route runs, carries the service's error body.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { FastifyServerOptions } from 'fastify';
import type { Config } from '../config.ts';
import { badRequest, clientErrorHandler, errorBody, frameworkErrorHandler } from './errors.ts';

type ServerSettings = Pick<
  Config,
  'httpHeadersTimeoutMs' | 'httpRequestTimeoutMs' | 'httpKeepAliveTimeoutMs' | 'httpIdleTimeoutMs'
>;

/**
 * Node enforces the headers and request timeouts by sweeping its connections on an interval
 * (30 s by default), so a deadline can be overrun by up to that much: the sweep runs every
 * second, or four times per headers timeout when that is shorter.
 */
export const checkingIntervalMs = (headersTimeoutMs: number) =>
  Math.max(25, Math.min(1000, Math.floor(headersTimeoutMs / 4)));

/**
 * Route path parameters may be this long (percent-encoded). Fastify's default of 100 is
 * shorter than ids the schemas accept (interaction type and event ids up to 200 characters,
 * more once non-ASCII characters are percent-encoded); the schemas bound each one.
 */
export const MAX_PARAM_LENGTH = 4096;

/** The parts of Fastify's options that make the server: timeouts, and the edge's errors. */
export function httpServerOptions(
  settings: ServerSettings,
): Pick<FastifyServerOptions, 'serverFactory' | 'clientErrorHandler' | 'frameworkErrors' | 'routerOptions'> {
  return {
    serverFactory: (handler) => {
      const server: Server = createServer(
        {
          headersTimeout: settings.httpHeadersTimeoutMs,
          requestTimeout: settings.httpRequestTimeoutMs,
          connectionsCheckingInterval: checkingIntervalMs(settings.httpHeadersTimeoutMs),
          // Node answers a missing Host with an empty 400; it is refused below in our body.
          requireHostHeader: false,
        },
        (req, res) => {
          // HTTP/1.1 requires Host (RFC 9112, 3.2); HTTP/1.0 does not.
          if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
            const requestId = randomUUID();
            const body = JSON.stringify(
              errorBody(badRequest('An HTTP/1.1 request must carry a Host header'), requestId),
            );
            res.writeHead(400, {
              'content-type': 'application/json; charset=utf-8',
              'content-length': Buffer.byteLength(body),
              'x-request-id': requestId,
              connection: 'close',
            });
            res.end(body);
            return;
          }
          handler(req, res);
        },
      );
      // Idle keep-alive connections are closed after this; longer than the usual 60 s idle
      // timeout of load balancers, so that the balancer, not us, closes a connection first.
      server.keepAliveTimeout = settings.httpKeepAliveTimeoutMs;
      // No byte in either direction for this long (a client that stopped reading its response,
      // a handler stuck without answering): the connection is closed.
      server.setTimeout(settings.httpIdleTimeoutMs);
      return server;
    },
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler(MAX_PARAM_LENGTH),
    routerOptions: {
      maxParamLength: MAX_PARAM_LENGTH,
      // Every route answers the same with or without a trailing slash: the original's SDK
      // sends `POST …/interactions/` and `GET …/interactions/?appId=…` (docs/compatibility.md).
      // Without this, `…/interactions/` is a 404 for a POST and the type *get* with an empty
      // id for a GET.
      ignoreTrailingSlash: true,
    },
  };
}
