/**
 * The log: JSON lines for machines (a log shipper, `LOG_FORMAT=json`, or whenever standard
 * output is not a terminal), one readable line per entry for a person at a terminal
 * (`LOG_FORMAT=pretty`, the default there). Either way a request is one line, written when it
 * is answered (method, path, status, time), instead of Fastify's two.
 */
import type { FastifyInstance } from 'fastify';
import { type Logger, levels, pino } from 'pino';
import pretty from 'pino-pretty';

export type LogFormat = 'pretty' | 'json';

/** LOG_FORMAT, or by where standard output goes when it is unset. */
export function logFormat(setting: 'pretty' | 'json' | undefined, isTerminal: boolean): LogFormat {
  return setting ?? (isTerminal ? 'pretty' : 'json');
}

export function createLogger(level: string, format: LogFormat): Logger {
  if (format === 'json') return pino({ level });
  // In this process and synchronous: a development log, where a worker thread's transport
  // would only add start-up time and lose the last lines of a crash.
  return pino(
    { level },
    pretty({
      colorize: true,
      singleLine: true,
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,reqId,req,res,responseTime,statusCode,ms',
      sync: true,
    }),
  );
}

/**
 * One line per answered request, at info (warn for a 5xx): `GET /l/abc 302 0.4 ms`. Nothing is
 * built when the level is off (LOG_LEVEL=warn in production or a bench): this runs on every
 * request, the redirect's included.
 */
export function logRequests(app: FastifyInstance): void {
  app.addHook('onResponse', (req, reply, done) => {
    const level = reply.statusCode >= 500 ? 'warn' : 'info';
    if ((levels.values[req.log.level] ?? Number.POSITIVE_INFINITY) <= levels.values[level]) {
      const ms = reply.elapsedTime;
      const line = `${req.method} ${req.url} ${reply.statusCode} ${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
      req.log[level]({ statusCode: reply.statusCode, ms }, line);
    }
    done();
  });
}

/** What a person starting the service reads first: where it is, and a generated key once. */
export function startBanner(o: {
  address: string;
  basePath: string;
  role: string;
  storage: string;
  generatedSuperKey: string | undefined;
}): string {
  const base = `${o.address}${o.basePath}`;
  const lines = [
    `ready (role ${o.role}, storage ${o.storage})`,
    `  API       ${base}`,
    `  console   ${base}/console`,
    `  API docs  ${base}/docs`,
  ];
  if (o.generatedSuperKey) {
    lines.push(
      `  super admin key (generated, shown only now; \`npm run cli -- super-key\` shows it again): ${o.generatedSuperKey}`,
    );
  }
  return lines.join('\n');
}
