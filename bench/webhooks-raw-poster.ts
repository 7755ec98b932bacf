/**
 * The raw baseline of the webhooks bench: one Node process posting signed requests (the same
 * signatureHeaders as a delivery, a fresh signature each) over undici keep-alive connections to
 * the bench's receiver, CONCURRENCY at a time, for SECONDS. Prints {"posts": n, "seconds": s}.
 */
import { Agent, request } from 'undici';
import { newSecret, signatureHeaders } from '../src/modules/webhooks/signing.ts';

const url = process.env.TARGET ?? '';
const concurrency = Number(process.env.CONCURRENCY ?? 8);
const seconds = Number(process.env.SECONDS ?? 5);
const secret = newSecret();
const agent = new Agent({ keepAliveTimeout: 4_000, connections: 64 });
let posts = 0;
let seq = 0;
const started = performance.now();
const until = started + seconds * 1000;

async function worker(): Promise<void> {
  while (performance.now() < until) {
    const id = `evt_raw${seq++}`;
    const body = JSON.stringify({ type: 'link.created', id, created_at: new Date().toISOString(), data: { n: seq } });
    const res = await request(url, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', ...signatureHeaders(secret, id, body, new Date(), null) },
      body,
    });
    await res.body.text();
    if (res.statusCode === 200) posts++;
  }
}

await Promise.all(Array.from({ length: concurrency }, worker));
process.stdout.write(`${JSON.stringify({ posts, seconds: (performance.now() - started) / 1000 })}\n`);
await agent.close();
