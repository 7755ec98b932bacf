/**
 * A streamed answer (a CSV export read a page at a time) whose first part is read before the
 * answer starts. Until the first bytes go out, a failure is still an ordinary answer: a value
 * the database refuses (a NUL byte in a filter: 400) or a database that is away (503 with
 * Retry-After), instead of a 200 whose connection is cut. Once streaming, a failure can only
 * end the stream early (the status went with the first line).
 */
import { Readable } from 'node:stream';

export async function startedStream<T>(source: AsyncIterable<T>): Promise<Readable> {
  const it = source[Symbol.asyncIterator]();
  const first = await it.next();
  async function* all() {
    if (first.done) return;
    yield first.value;
    for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
  }
  return Readable.from(all());
}
