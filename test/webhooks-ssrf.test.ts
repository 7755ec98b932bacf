/**
 * The SSRF guard with WEBHOOK_ALLOW_PRIVATE_NETWORKS off (the default): receivers on
 * loopback, private, link-local and other reserved addresses are refused at registration
 * when the address is literal, and on every attempt after DNS resolution; a refused attempt
 * never opens a connection, is logged as refused, and counts as a failure.
 */
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenAddressReason } from '../src/modules/webhooks/index.ts';
import { guardedLookup } from '../src/platform/ssrf.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { waitFor } from './helpers/jobs.ts';
import { type Receiver, startReceiver } from './helpers/webhook-receiver.ts';

let t: TestApp;
let a: TestCollection;
let v4: Receiver;
let v6: Receiver | undefined;

beforeAll(async () => {
  t = await createTestApp({ WEBHOOK_RETRY_BASE_MS: '10', WEBHOOK_RETRY_FACTOR: '1', JOBS_CONCURRENCY: '8' });
  a = await t.createCollection();
  v4 = await startReceiver('127.0.0.1');
  v6 = await startReceiver('::1').catch(() => undefined); // a host without IPv6 loopback skips that case
});
afterAll(async () => {
  await t.close();
  await v4.close();
  await v6?.close();
});

describe('address classification', () => {
  it('refuses every non-public range and accepts public addresses', () => {
    const refused = [
      '127.0.0.1',
      '127.255.255.254',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '192.0.2.10',
      '198.18.0.1',
      '224.0.0.1',
      '239.255.255.250',
      '240.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      '[::1]',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '::127.0.0.1',
      '64:ff9b::a00:1',
      '2002:7f00:1::',
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'fe80::1%eth0',
      'fec0::1',
      'ff02::1',
      '2001:db8::1',
      '2001::1',
      '100::1',
      'not-an-ip',
    ];
    for (const ip of refused) expect(forbiddenAddressReason(ip), ip).toBeDefined();
    const allowed = [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '192.169.0.1',
      '2606:4700:4700::1111',
      '::ffff:8.8.8.8',
      '2a00:1450::1',
    ];
    for (const ip of allowed) expect(forbiddenAddressReason(ip), ip).toBeUndefined();
    expect(forbiddenAddressReason('127.0.0.1')).toBe('loopback');
    expect(forbiddenAddressReason('169.254.169.254')).toBe('link-local');
    expect(forbiddenAddressReason('10.0.0.1')).toBe('private');
    expect(forbiddenAddressReason('fd00::1')).toBe('unique-local');
  });

  it('refuses a hostname that resolves to loopback, at lookup time', async () => {
    const lookup = promisify(guardedLookup(false) as (...args: unknown[]) => void) as (
      host: string,
      options: object,
    ) => Promise<unknown>;
    await expect(lookup('localhost', {})).rejects.toThrow(/refused: localhost resolves to/);
    const open = promisify(guardedLookup(true) as (...args: unknown[]) => void) as typeof lookup;
    await expect(open('localhost', { all: true })).resolves.toBeDefined();
  });
});

describe('registration', () => {
  it('refuses literal private addresses and localhost up front', async () => {
    for (const url of [
      'http://127.0.0.1/hook',
      'http://[::1]/hook',
      'http://10.0.0.8/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::ffff:127.0.0.1]/hook',
      'http://0x7f000001/hook',
      'http://2130706433/hook',
      'http://127.1/hook',
      'http://localhost:8080/hook',
      'http://api.localhost/hook',
    ]) {
      const res = await t.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: a.auth,
        payload: { url, events: ['link.created'] },
      });
      expect(res.statusCode, url).toBe(400);
      // The refusal says what to do for a receiver on this machine.
      expect(res.json().message, url).toMatch(/WEBHOOK_ALLOW_PRIVATE_NETWORKS=true/);
      expect(res.json().details, url).toMatchObject({ field: 'url', setting: 'WEBHOOK_ALLOW_PRIVATE_NETWORKS' });
    }
  });
});

describe('delivery', () => {
  /** A registration stored as if created while private networks were allowed. */
  async function storedHook(id: string, url: string) {
    await t.testDb.db.query(
      `INSERT INTO webhooks (collection_id, id, url, events, secret) VALUES ($1, $2, $3, '["link.created"]'::jsonb, 'whsec_dGVzdA==')`,
      [a.id, id, url],
    );
  }

  it('refuses 127.0.0.1, [::1], 10.x, 169.254.169.254 and a loopback hostname without connecting', async () => {
    const targets: [string, string][] = [
      ['wh_v4', `${v4.url}/x`],
      ['wh_name', `http://localhost:${v4.port}/x`],
      ['wh_private', 'http://10.20.30.40:81/x'],
      ['wh_metadata', 'http://169.254.169.254/latest/meta-data/'],
      ['wh_mapped', `http://[::ffff:127.0.0.1]:${v4.port}/x`],
    ];
    if (v6) targets.push(['wh_v6', `http://[::1]:${v6.port}/x`]);
    for (const [id, url] of targets) await storedHook(id, url);
    const link = await t.inject({
      method: 'POST',
      url: `/admin/collection/${a.id}/links`,
      headers: a.auth,
      payload: { url: 'https://example.com/' },
    });
    expect(link.statusCode).toBe(200);
    for (const [id] of targets) {
      const d = await waitFor(
        async () => {
          const res = await t.inject({ method: 'GET', url: `/v1/webhooks/${id}/deliveries`, headers: a.auth });
          const item = res.json().items[0];
          return item && item.status !== 'pending' ? item : undefined;
        },
        15_000,
        `delivery to ${id}`,
      );
      expect(d.status, id).toBe('failed');
      expect(d.attempts, id).toHaveLength(4);
      for (const attempt of d.attempts) {
        expect(attempt.outcome, id).toBe('refused');
        expect(attempt.statusCode).toBeNull();
        expect(attempt.error).toMatch(/^refused: .* \((loopback|private|link-local|IPv4-embedded loopback)\)/);
      }
      const hook = await t.inject({ method: 'GET', url: `/v1/webhooks/${id}`, headers: a.auth });
      // One failed delivery (its four attempts).
      expect(hook.json().consecutiveFailures, id).toBe(1);
    }
    expect(v4.connections).toBe(0);
    expect(v4.received).toEqual([]);
    if (v6) expect(v6.connections).toBe(0);
  });
});

describe('the sender', () => {
  it('closes once however often it is asked (a second close of the agent used to reject, unhandled)', async () => {
    const { WebhookSender } = await import('../src/modules/webhooks/index.ts');
    const sender = new WebhookSender({ allowPrivateNetworks: false, timeoutMs: 1000, responseExcerptBytes: 100 });
    await sender.close();
    let error: unknown;
    await Promise.all([sender.close(), sender.close()]).catch((err) => {
      error = err;
    });
    expect(error).toBeUndefined();
  });
});
