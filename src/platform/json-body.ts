/**
 * The JSON body parser: Fastify's own (secure-json-parse, which refuses `__proto__` and
 * `constructor.prototype` keys), behind a nesting-depth check.
 *
 * Why a depth limit: JSON.parse accepts any depth, but everything after it recurses:
 * JSON.stringify of a 10,000-deep value (to store it as jsonb) throws RangeError, and
 * PostgreSQL refuses deep jsonb too. A body deeper than `JSON_MAX_DEPTH` (default 64) is a
 * 400 before it is parsed. The check is one pass over the text that skips string contents
 * with indexOf, a small fraction of what JSON.parse itself costs (see docs/architecture.md).
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.ts';
import { intFrom } from './settings.ts';

export const DEFAULT_JSON_MAX_DEPTH = 64;
/** Deeper values than this overflow the stack in JSON.stringify or PostgreSQL's jsonb. */
export const JSON_MAX_DEPTH_CEILING = 1000;

/** The character codes the scan looks for. */
const CODE = { quote: 0x22, backslash: 0x5c, openBrace: 0x7b, openBracket: 0x5b, closeBrace: 0x7d, closeBracket: 0x5d };

/**
 * Whether the JSON text nests objects and arrays deeper than maxDepth (`{}` is depth 1).
 * Brackets inside strings do not count. Malformed text is left for JSON.parse to refuse.
 */
export function jsonTooDeep(text: string, maxDepth: number): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === CODE.quote) {
      // Jump to the closing quote: the next one not escaped by an odd run of backslashes.
      let end = text.indexOf('"', i + 1);
      while (end !== -1) {
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === CODE.backslash) slashes++;
        if (slashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      if (end === -1) return false;
      i = end;
    } else if (c === CODE.openBrace || c === CODE.openBracket) {
      if (++depth > maxDepth) return true;
    } else if (c === CODE.closeBrace || c === CODE.closeBracket) {
      depth--;
    }
  }
  return false;
}

export function jsonMaxDepth(env: Readonly<Record<string, string | undefined>>): number {
  return intFrom(env, 'JSON_MAX_DEPTH', DEFAULT_JSON_MAX_DEPTH, 1, JSON_MAX_DEPTH_CEILING);
}

/** Replaces the application/json parser with the depth-checked one. */
export function registerJsonBodyParser(app: FastifyInstance, env: Readonly<Record<string, string | undefined>>): void {
  const maxDepth = jsonMaxDepth(env);
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (jsonTooDeep(body as string, maxDepth)) {
      done(
        new AppError(400, 'BAD_REQUEST', `The JSON body nests deeper than ${maxDepth} levels`, { maxDepth }),
        undefined,
      );
      return;
    }
    parse(req, body as string, done);
  });
}
