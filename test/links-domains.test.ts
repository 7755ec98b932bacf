/**
 * Issue 28, part A: a collection's own domains (registration, verification through an injected
 * resolver and a real local HTTP server, codes per domain, the redirect by Host, short_url),
 * QR codes (decoded with jsqr, a scan recorded with trigger qr) and attribution (click ids,
 * conversions, a journey from a link's clicks to a purchase).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import jsqrModule from 'jsqr';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DomainChecks, defaultDomainChecks } from '../src/modules/links/index.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { type CollectionWithUser, subscribe, twoCollections } from './helpers/fixtures.ts';

// jsqr is CommonJS with an `exports.default`: Node hands its module object as the default import.
const jsQR = ((jsqrModule as unknown as { default?: unknown }).default ?? jsqrModule) as typeof jsqrModule.default;

let t: TestApp;
let a: CollectionWithUser;
let b: CollectionWithUser;

/** A resolver the test controls: TXT records by name, as node:dns answers them. */
const txt = new Map<string, string[][]>();
const localResolver: DomainChecks = {
  async resolveTxt(name) {
    const records = txt.get(name);
    if (!records) throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return records;
  },
  async fetchHttpToken() {
    return { error: 'no HTTP in this resolver' };
  },
};

beforeAll(async () => {
  t = await createTestApp({ CLICK_FLUSH_MS: '5', ROLE: 'api' });
  ({ a, b } = await twoCollections(t));
  t.app.services.links.domains.useChecks(localResolver);
  for (const c of [a, b]) await subscribe(t, c, 'https://receiver.example/hook', ['link.created', 'link.updated']);
});
afterAll(() => t.close());

const domains = (c: TestCollection) => `/admin/collection/${c.id}/domains`;
const links = (c: TestCollection) => `/admin/collection/${c.id}/links`;
const post = (url: string, payload: unknown, headers: Record<string, string>) =>
  t.inject({ method: 'POST', url, headers, payload: payload as Record<string, unknown> });

async function register(c: CollectionWithUser, domain: string) {
  const res = await post(domains(c), { domain }, c.auth);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** Registers and verifies a domain through the DNS proof. */
async function verifiedDomain(c: CollectionWithUser, domain: string) {
  const d = await register(c, domain);
  txt.set(d.verification.dns.name, [[d.verification.dns.value]]);
  const res = await post(`${domains(c)}/${domain}/verify`, { method: 'dns' }, c.auth);
  expect(res.json().verified, res.body).toBe(true);
  return res.json();
}

async function createLink(c: CollectionWithUser, payload: Record<string, unknown>) {
  const res = await post(links(c), payload, c.auth);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

const visit = (url: string, host?: string) => t.inject({ method: 'GET', url, headers: host ? { host } : {} });

async function clicksOf(c: CollectionWithUser, linkId: string) {
  await t.app.services.links.redirects.flush();
  const res = await t.inject({ method: 'GET', url: `${links(c)}/${linkId}/clicks`, headers: c.auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().items as { trigger: string; clickId: string | null; route: string }[];
}

async function eventsOf(c: TestCollection, type: string) {
  const { rows } = await t.testDb.db.query<{ body: string }>(
    'SELECT body FROM webhook_events WHERE collection_id = $1 AND type = $2 ORDER BY created_at, id',
    [c.id, type],
  );
  return rows.map((r) => JSON.parse(r.body));
}

describe('domains: registration', () => {
  it('normalises the name and answers both proofs', async () => {
    const d = await register(a, '  Go.Brand-A.COM. ');
    expect(d).toMatchObject({
      domain: 'go.brand-a.com',
      verified: false,
      verifiedAt: null,
      checkError: null,
      verification: {
        dns: { type: 'TXT', name: '_platform-verify.go.brand-a.com', value: `platform-verify=${d.verification.token}` },
        http: { url: 'http://go.brand-a.com/.well-known/platform-verify.txt', body: d.verification.token },
      },
    });
    expect(d.verification.token).toMatch(/^[0-9a-f]{32}$/);
    const list = await t.inject({ method: 'GET', url: domains(a), headers: a.auth });
    expect(list.json().items.map((x: { domain: string }) => x.domain)).toContain('go.brand-a.com');
  });

  it('refuses what is not a host name of its own, naming why', async () => {
    for (const [domain, why] of [
      ['https://x.example.org', 'no scheme'],
      ['x.example.org:8080', 'no scheme, port'],
      ['x.example.org/path', 'no scheme, port, path'],
      ['127.0.0.1', 'not an IP address'],
      ['[::1]', 'no scheme, port'],
      ['localhost', 'at least two labels'],
      ['intranet.local', 'reserved'],
      ['short.test', "deployment's own host"],
      ['-bad.example.org', 'label'],
      ['a.b.123', 'not a valid host name'],
    ]) {
      const res = await post(domains(a), { domain }, a.auth);
      expect(res.statusCode, domain).toBe(400);
      expect(res.json().message, domain).toContain(why);
    }
    expect((await post(domains(a), { domain: 'x'.repeat(254) }, a.auth)).statusCode).toBe(400);
  });

  it('belongs to one collection: another registering it is 409, as is registering it twice', async () => {
    await register(a, 'links.shared-brand.com');
    const other = await post(domains(b), { domain: 'LINKS.shared-brand.com' }, b.auth);
    expect(other.statusCode).toBe(409);
    expect(other.json().message).toContain('another collection');
    const again = await post(domains(a), { domain: 'links.shared-brand.com' }, a.auth);
    expect(again.statusCode).toBe(409);
    expect(again.json().message).toContain('this collection');
  });

  it('is not seen or changed from the wrong side', async () => {
    await register(a, 'private.brand-a.com');
    for (const [method, path] of [
      ['GET', '/private.brand-a.com'],
      ['POST', '/private.brand-a.com/verify'],
      ['DELETE', '/private.brand-a.com'],
    ] as const) {
      // B's key on A's paths: refused; B's paths: A's domain is not there.
      const onA = await t.inject({
        method,
        url: `${domains(a)}${path}`,
        headers: b.auth,
        payload: method === 'POST' ? {} : undefined,
      });
      expect([401, 404], `${method} ${path}`).toContain(onA.statusCode);
      const onB = await t.inject({
        method,
        url: `${domains(b)}${path}`,
        headers: b.auth,
        payload: method === 'POST' ? {} : undefined,
      });
      expect(onB.statusCode, `${method} ${path}`).toBe(404);
    }
    expect((await t.inject({ method: 'GET', url: domains(a) })).statusCode).toBe(401);
    const bList = await t.inject({ method: 'GET', url: domains(b), headers: b.auth });
    expect(bList.json().items.map((x: { domain: string }) => x.domain)).not.toContain('private.brand-a.com');
    // Still A's and unverified.
    const got = await t.inject({ method: 'GET', url: `${domains(a)}/private.brand-a.com`, headers: a.auth });
    expect(got.json()).toMatchObject({ domain: 'private.brand-a.com', verified: false });
  });
});

describe('domains: verification', () => {
  it('by a DNS TXT record, looked up through the injected resolver', async () => {
    const d = await register(a, 'dns.brand-a.com');
    const missing = await post(`${domains(a)}/dns.brand-a.com/verify`, {}, a.auth);
    expect(missing.statusCode).toBe(200);
    expect(missing.json()).toMatchObject({ verified: false });
    expect(missing.json().checkError).toContain('no TXT record at _platform-verify.dns.brand-a.com');
    txt.set('_platform-verify.dns.brand-a.com', [['platform-verify=someone-else']]);
    const wrong = await post(`${domains(a)}/dns.brand-a.com/verify`, { method: 'dns' }, a.auth);
    expect(wrong.json().checkError).toContain('do not include');
    // A long value may come split in strings: joined.
    const value = `platform-verify=${d.verification.token}`;
    txt.set('_platform-verify.dns.brand-a.com', [['v=spf1 -all'], [value.slice(0, 20), value.slice(20)]]);
    const ok = await post(`${domains(a)}/dns.brand-a.com/verify`, { method: 'dns' }, a.auth);
    expect(ok.json()).toMatchObject({ verified: true, checkError: null });
    expect(ok.json().verifiedAt).toEqual(expect.any(String));
  });

  it('by an HTTP token, fetched from a real local server with the domain as Host', async () => {
    let served = '';
    const hosts: string[] = [];
    const server: Server = createServer((req, res) => {
      hosts.push(String(req.headers.host));
      if (req.url === '/.well-known/platform-verify.txt' && req.headers.host === 'http.brand-a.com') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`${served}\n`);
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      t.app.services.links.domains.useChecks(
        defaultDomainChecks({ allowPrivateNetworks: true, connectTo: { host: '127.0.0.1', port } }),
      );
      const d = await register(a, 'http.brand-a.com');
      served = 'not-the-token';
      const wrong = await post(`${domains(a)}/http.brand-a.com/verify`, { method: 'http' }, a.auth);
      expect(wrong.json().verified).toBe(false);
      expect(wrong.json().checkError).toContain('does not answer the token');
      served = d.verification.token;
      const ok = await post(`${domains(a)}/http.brand-a.com/verify`, { method: 'http' }, a.auth);
      expect(ok.json(), ok.body).toMatchObject({ verified: true, checkError: null });
      expect(hosts).toContain('http.brand-a.com');
    } finally {
      t.app.services.links.domains.useChecks(localResolver);
      await new Promise((r) => server.close(r));
    }
  });

  it('the HTTP check keeps to public addresses unless private networks are allowed', async () => {
    const checks = defaultDomainChecks({ allowPrivateNetworks: false, connectTo: { host: '127.0.0.1', port: 9 } });
    const res = await checks.fetchHttpToken('guarded.brand-a.com', '/.well-known/platform-verify.txt');
    expect('error' in res && res.error).toContain('refused');
  });
});

describe('links on a domain', () => {
  let promo: { id: string; code: string; shortUrl: string };

  beforeAll(async () => {
    await verifiedDomain(a, 'go.brand-a.io');
  });

  it('are refused on a domain that is not the collection’s, or not verified', async () => {
    await register(a, 'pending.brand-a.io');
    const pending = await post(links(a), { url: 'https://a.example/x', domain: 'pending.brand-a.io' }, a.auth);
    expect(pending.statusCode).toBe(400);
    expect(pending.json().message).toContain('not verified');
    const others = await post(links(b), { url: 'https://b.example/x', domain: 'go.brand-a.io' }, b.auth);
    expect(others.statusCode).toBe(400);
    expect(others.json().message).toContain('not a domain of this collection');
  });

  it('live at https://<domain>/<code>, in answers and events; codes are unique per domain', async () => {
    promo = await createLink(a, { url: 'https://a.example/promo', code: 'promo', domain: 'GO.brand-a.io' });
    expect(promo).toMatchObject({
      domain: 'go.brand-a.io',
      shortUrl: 'https://go.brand-a.io/promo',
      trackConversions: false,
    });
    const created = (await eventsOf(a, 'link.created')).find((e) => e.data.link_id === promo.id);
    expect(created.data).toMatchObject({ short_url: 'https://go.brand-a.io/promo', domain: 'go.brand-a.io' });
    // The same code on the deployment's own domain is another address: B may hold it there.
    const own = await createLink(b, { url: 'https://b.example/promo', code: 'promo' });
    expect(own).toMatchObject({ domain: null, shortUrl: 'http://short.test/l/promo' });
    const twice = await post(links(a), { url: 'https://a.example/2', code: 'promo', domain: 'go.brand-a.io' }, a.auth);
    expect(twice.statusCode).toBe(409);
    // The own domain keeps its rule: unique across the deployment.
    const ownTwice = await post(links(a), { url: 'https://a.example/3', code: 'promo' }, a.auth);
    expect(ownTwice.statusCode).toBe(409);
  });

  it('the redirect resolves Host plus code; the deployment’s own domain works as before', async () => {
    for (const url of ['/l/promo', '/promo']) {
      const res = await visit(url, 'go.brand-a.io');
      expect(res.statusCode, url).toBe(302);
      expect(res.headers.location).toBe('https://a.example/promo');
    }
    const upper = await visit('/promo', 'GO.BRAND-A.IO:443');
    expect(upper.headers.location).toBe('https://a.example/promo');
    for (const host of ['short.test', undefined, '127.0.0.1:3000']) {
      const res = await visit('/l/promo', host);
      expect(res.headers.location, String(host)).toBe('https://b.example/promo');
      // The root path is a custom domain's only: elsewhere the unknown route it always was.
      const root = await visit('/promo', host);
      expect(root.statusCode).toBe(404);
      expect(root.json().message).toContain('Route GET /promo not found');
    }
    expect((await visit('/nothing-here', 'go.brand-a.io')).statusCode).toBe(404);
    expect((await visit('/l/nothing-here', 'go.brand-a.io')).statusCode).toBe(404);
    // The click is the domain link's.
    const clicks = await clicksOf(a, promo.id);
    expect(clicks.length).toBe(3);
  });

  it('with routing, a password and click ids: each works at the domain’s root as at /l/{code}', async () => {
    const iphone = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148';
    const routed = await createLink(a, {
      url: 'https://a.example/web?src=link',
      domain: 'go.brand-a.io',
      code: 'routed',
      rules: [{ when: { os: 'ios' }, url: 'https://apps.example/ios' }],
      trackConversions: true,
    });
    for (const url of ['/routed?utm_source=mail', '/l/routed?utm_source=mail']) {
      const phone = await t.inject({ method: 'GET', url, headers: { host: 'go.brand-a.io', 'user-agent': iphone } });
      // The rule's address, the visitor's query passed on, then the click id.
      expect(phone.headers.location, url).toMatch(
        /^https:\/\/apps\.example\/ios\?utm_source=mail&pl_cid=[0-9a-f]{32}$/,
      );
      const desk = await visit(url, 'go.brand-a.io');
      expect(desk.headers.location, url).toMatch(
        /^https:\/\/a\.example\/web\?src=link&utm_source=mail&pl_cid=[0-9a-f]{32}$/,
      );
    }
    // Four visits, four clicks of the domain's link, each with its own click id.
    const ids = (await clicksOf(a, routed.id)).map((c) => c.clickId);
    expect(ids).toHaveLength(4);
    expect(new Set(ids).size).toBe(4);
    // The same code on the deployment's own domain is another link, or none.
    expect((await visit('/l/routed')).statusCode).toBe(404);

    await createLink(a, {
      url: 'https://a.example/secret',
      domain: 'go.brand-a.io',
      code: 'locked',
      password: 'open sesame',
    });
    const gate = await visit('/locked', 'go.brand-a.io');
    expect(gate.statusCode).toBe(200);
    expect(gate.headers['content-type']).toMatch(/text\/html/);
    const form = (password: string, host?: string) =>
      t.inject({
        method: 'POST',
        url: '/locked',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(host ? { host } : {}) },
        payload: `password=${encodeURIComponent(password)}`,
      });
    expect((await form('wrong', 'go.brand-a.io')).statusCode).toBe(403);
    const open = await form('open sesame', 'go.brand-a.io');
    expect(open.statusCode).toBe(303);
    expect(open.headers.location).toBe('https://a.example/secret');
    // Elsewhere the root path is no route at all, password or not.
    expect((await form('open sesame')).statusCode).toBe(404);
  });

  it('moves between domains by PATCH, its old address answering 404', async () => {
    const l = await createLink(a, { url: 'https://a.example/moving', code: 'moving' });
    const moved = await t.inject({
      method: 'PATCH',
      url: `${links(a)}/${l.id}`,
      headers: a.auth,
      payload: { domain: 'go.brand-a.io' },
    });
    expect(moved.json()).toMatchObject({ domain: 'go.brand-a.io', shortUrl: 'https://go.brand-a.io/moving' });
    const updated = (await eventsOf(a, 'link.updated')).find((e) => e.data.link_id === l.id);
    expect(updated.data).toMatchObject({ changed_fields: ['domain'], previous: { domain: null } });
    expect((await visit('/moving', 'go.brand-a.io')).headers.location).toBe('https://a.example/moving');
    expect((await visit('/l/moving')).statusCode).toBe(404);
    // The own-domain code stays A's: B cannot take it.
    expect((await post(links(b), { url: 'https://b.example', code: 'moving' }, b.auth)).statusCode).toBe(409);
  });

  it('a domain with live links is not removed (409 saying what to do); once they are gone it is', async () => {
    await verifiedDomain(a, 'old.brand-a.io');
    const l = await createLink(a, { url: 'https://a.example/old', code: 'oldcode', domain: 'old.brand-a.io' });
    expect((await visit('/oldcode', 'old.brand-a.io')).statusCode).toBe(302);
    const refused = await t.inject({ method: 'DELETE', url: `${domains(a)}/old.brand-a.io`, headers: a.auth });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().message).toMatch(/1 live link.*move them.*or delete them/);
    expect((await t.inject({ method: 'DELETE', url: `${links(a)}/${l.id}`, headers: a.auth })).statusCode).toBe(200);
    const removed = await t.inject({ method: 'DELETE', url: `${domains(a)}/old.brand-a.io`, headers: a.auth });
    expect(removed.json()).toEqual({ success: true });
    expect((await visit('/oldcode', 'old.brand-a.io')).statusCode).toBe(404);
    // Should the domain come to B, A's codes on it are never handed on.
    await verifiedDomain(b, 'old.brand-a.io');
    const taken = await post(links(b), { url: 'https://b.example', code: 'oldcode', domain: 'old.brand-a.io' }, b.auth);
    expect(taken.statusCode).toBe(409);
    const fresh = await createLink(b, { url: 'https://b.example/new', code: 'newcode', domain: 'old.brand-a.io' });
    expect(fresh.shortUrl).toBe('https://old.brand-a.io/newcode');
    expect((await visit('/newcode', 'old.brand-a.io')).headers.location).toBe('https://b.example/new');
  });
});

/** The QR code's text, decoded from a PNG answer with jsqr. */
function decodePng(body: Buffer): string | undefined {
  const png = PNG.sync.read(body);
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data;
}

/** A small opaque PNG (a logo). */
function logoPng(side = 24): string {
  const png = new PNG({ width: side, height: side });
  for (let i = 0; i < side * side; i++) png.data.set([200, 30, 60, 255], i * 4);
  return `data:image/png;base64,${PNG.sync.write(png).toString('base64')}`;
}

describe('QR codes', () => {
  let link: { id: string; code: string; shortUrl: string };
  const qr = (c: CollectionWithUser, id: string, qs = '') =>
    t.inject({ method: 'GET', url: `${links(c)}/${id}/qr${qs}`, headers: c.auth });

  beforeAll(async () => {
    link = await createLink(a, { url: 'https://a.example/menu?table=4' });
  });

  it('a PNG decodes to the link’s address with the QR marker; following it records a click with trigger qr', async () => {
    const res = await qr(a, link.id, '?format=png&size=300');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    const png = PNG.sync.read(res.rawPayload);
    expect(png.width).toBeGreaterThanOrEqual(290);
    const text = decodePng(res.rawPayload);
    expect(text).toBe(`${link.shortUrl}?qr=1`);
    // Scan: follow the decoded address.
    const scanned = new URL(text as string);
    const res2 = await visit(`${scanned.pathname}${scanned.search}`, scanned.host);
    expect(res2.statusCode).toBe(302);
    expect(res2.headers.location).toBe('https://a.example/menu?table=4');
    await visit(`/l/${link.code}`);
    const clicks = await clicksOf(a, link.id);
    expect(clicks.map((c) => c.trigger).sort()).toEqual(['link', 'qr']);
    // The link's analytics break the scan out by trigger (bots included: the test's requests
    // carry no browser's user agent).
    const byTrigger = await t.inject({
      method: 'GET',
      url: `/admin/collection/${a.id}/links/${link.id}/analytics?groupBy=trigger&includeBots=true`,
      headers: a.auth,
    });
    expect(byTrigger.statusCode, byTrigger.body).toBe(200);
    const items = byTrigger.json().breakdown.items as { value: string; clicks: number }[];
    expect(Object.fromEntries(items.map((i) => [i.value, i.clicks]))).toEqual({ link: 1, qr: 1 });
  });

  it('colours, margin, error correction and a logo still decode', async () => {
    for (const qs of [
      '?fg=1a237e&bg=%23fff8e1&margin=1&level=L&size=256',
      '?level=H&margin=8',
      `?level=Q&logo=${encodeURIComponent(logoPng())}`,
    ]) {
      const res = await qr(a, link.id, qs);
      expect(res.statusCode, `${qs}: ${res.body.slice(0, 200)}`).toBe(200);
      expect(decodePng(res.rawPayload), qs).toBe(`${link.shortUrl}?qr=1`);
    }
    const dark = PNG.sync.read((await qr(a, link.id, '?fg=1a237e&bg=fff8e1&margin=4')).rawPayload);
    expect([...dark.data.subarray(0, 3)]).toEqual([0xff, 0xf8, 0xe1]); // the quiet zone: bg
    const withBody = await t.inject({
      method: 'POST',
      url: `${links(a)}/${link.id}/qr`,
      headers: a.auth,
      payload: { logo: logoPng(200), size: 600 },
    });
    expect(withBody.statusCode, withBody.body.slice(0, 200)).toBe(200);
    expect(decodePng(withBody.rawPayload)).toBe(`${link.shortUrl}?qr=1`);
  });

  it('SVG, with its colours and logo', async () => {
    const res = await qr(a, link.id, `?format=svg&fg=%23123456&logo=${encodeURIComponent(logoPng())}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/svg+xml; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.body).toMatch(/^<svg /);
    expect(res.body).toContain('stroke="#123456"');
    expect(res.body).toContain('<image ');
    expect(res.body).not.toContain('<script');
  });

  it('a link on a custom domain encodes its own address', async () => {
    const l = await createLink(a, { url: 'https://a.example/d', domain: 'go.brand-a.io' });
    const res = await qr(a, l.id);
    expect(decodePng(res.rawPayload)).toBe(`https://go.brand-a.io/${l.code}?qr=1`);
  });

  it('refuses bad options, and a logo that is no small PNG', async () => {
    for (const qs of [
      '?format=gif',
      '?size=10',
      '?size=5000',
      '?fg=zzzzzz',
      '?margin=99',
      '?level=X',
      '?fg=000000&bg=000000',
      `?level=M&logo=${encodeURIComponent(logoPng())}`,
      `?logo=${encodeURIComponent('data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=')}`,
      `?logo=${encodeURIComponent('data:image/png;base64,aGVsbG8=')}`,
      '?logo=https://evil.example/logo.png',
    ]) {
      const res = await qr(a, link.id, qs);
      expect(res.statusCode, qs).toBe(400);
    }
    const big = new PNG({ width: 1100, height: 4 });
    const huge = `data:image/png;base64,${PNG.sync.write(big).toString('base64')}`;
    const res = await t.inject({
      method: 'POST',
      url: `${links(a)}/${link.id}/qr`,
      headers: a.auth,
      payload: { logo: huge },
    });
    expect(res.statusCode).toBe(400);
  });

  it('is not given from the wrong side', async () => {
    const onA = await t.inject({ method: 'GET', url: `${links(a)}/${link.id}/qr`, headers: b.auth });
    expect([401, 404]).toContain(onA.statusCode);
    expect((await qr(b, link.id)).statusCode).toBe(404);
    expect((await t.inject({ method: 'GET', url: `${links(a)}/${link.id}/qr` })).statusCode).toBe(401);
  });
});

describe('attribution', () => {
  const append = (c: CollectionWithUser, payload: Record<string, unknown>) =>
    post(`/admin/collection/${c.id}/interactions/append`, payload, c.auth);
  const clickIdOf = (location: string) => new URL(location).searchParams.get('pl_cid');

  beforeAll(async () => {
    for (const c of [a, b]) {
      for (const id of ['signup', 'purchase']) {
        const res = await post(`/admin/collection/${c.id}/interactions`, { id, appId: 'shop' }, c.auth);
        expect(res.statusCode, res.body).toBe(200);
      }
    }
  });

  it('a tracked link appends a click id to the destination, stored with the click', async () => {
    const tracked = await createLink(a, { url: 'https://shop.example/p?x=1#top', trackConversions: true });
    const plain = await createLink(a, { url: 'https://shop.example/plain' });
    const res = await visit(`/l/${tracked.code}`);
    expect(res.headers.location).toMatch(/^https:\/\/shop\.example\/p\?x=1&pl_cid=[0-9a-f]{32}#top$/);
    const id = clickIdOf(res.headers.location as string);
    const again = clickIdOf((await visit(`/l/${tracked.code}`)).headers.location as string);
    expect(again).not.toBe(id);
    expect((await visit(`/l/${plain.code}`)).headers.location).toBe('https://shop.example/plain');
    // HEAD is no visit: no click id.
    const head = await t.inject({ method: 'HEAD', url: `/l/${tracked.code}` });
    expect(head.headers.location).toBe('https://shop.example/p?x=1#top');
    expect((await clicksOf(a, tracked.id)).map((c) => c.clickId).sort()).toEqual([id, again].sort());
    expect((await clicksOf(a, plain.id))[0].clickId).toBeNull();
    // trackConversions can be turned off.
    const off = await t.inject({
      method: 'PATCH',
      url: `${links(a)}/${tracked.id}`,
      headers: a.auth,
      payload: { trackConversions: false },
    });
    expect(off.json().trackConversions).toBe(false);
    expect((await visit(`/l/${tracked.code}`)).headers.location).toBe('https://shop.example/p?x=1#top');
  });

  it('an event carrying the click id is a conversion of that link, by interaction and outcome', async () => {
    const l = await createLink(a, { url: 'https://shop.example/c', trackConversions: true });
    const other = await createLink(a, { url: 'https://shop.example/other', trackConversions: true });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(clickIdOf((await visit(`/l/${l.code}`)).headers.location as string));
    const otherId = clickIdOf((await visit(`/l/${other.code}`)).headers.location as string);
    await append(a, { interactionId: 'signup', userId: 'v0', clickId: ids[0] });
    await append(a, { interactionId: 'signup', userId: 'v1', clickId: ids[1] });
    await append(a, { interactionId: 'purchase', userId: 'v1', outcome: 'paid', clickId: ids[1] });
    await append(a, { interactionId: 'purchase', userId: 'v1', outcome: 'paid', clickId: ids[1] });
    await append(a, { interactionId: 'signup', userId: 'w', clickId: otherId });
    await append(a, { interactionId: 'signup', userId: 'v9', clickId: 'f'.repeat(32) }); // no such click
    // B's event carrying A's click id is no conversion of A's link.
    await append(b, { interactionId: 'signup', userId: 'v0', clickId: ids[2] });
    const ev = await post(
      `/admin/collection/${a.id}/interactions/query`,
      { interactionId: 'signup', limit: 50 },
      a.auth,
    );
    expect(ev.statusCode, ev.body).toBe(200);
    expect(ev.json().find((r: { userId: string }) => r.userId === 'v0')).toMatchObject({ clickId: ids[0] });
    await t.app.services.links.redirects.flush();
    const conv = await t.inject({ method: 'GET', url: `${links(a)}/${l.id}/conversions`, headers: a.auth });
    expect(conv.statusCode, conv.body).toBe(200);
    expect(conv.json()).toMatchObject({
      linkId: l.id,
      total: 4,
      items: [
        { interactionId: 'purchase', outcome: 'paid', count: 2, clicks: 1 },
        { interactionId: 'signup', outcome: null, count: 2, clicks: 2 },
      ],
    });
    const all = await t.inject({ method: 'GET', url: `${links(a)}/conversions`, headers: a.auth });
    expect(all.statusCode, all.body).toBe(200);
    const mine = all.json().items.filter((i: { linkId: string }) => [l.id, other.id].includes(i.linkId));
    expect(mine).toEqual(
      expect.arrayContaining([
        { linkId: l.id, interactionId: 'purchase', outcome: 'paid', count: 2, clicks: 1 },
        { linkId: l.id, interactionId: 'signup', outcome: null, count: 2, clicks: 2 },
        { linkId: other.id, interactionId: 'signup', outcome: null, count: 1, clicks: 1 },
      ]),
    );
    // A window before the events: nothing.
    const before = await t.inject({
      method: 'GET',
      url: `${links(a)}/${l.id}/conversions?from=2020-01-01&to=2020-02-01`,
      headers: a.auth,
    });
    expect(before.json()).toMatchObject({ total: 0, items: [] });
    // B sees none of A's link, nor A's conversions.
    expect(
      (await t.inject({ method: 'GET', url: `${links(b)}/${l.id}/conversions`, headers: b.auth })).statusCode,
    ).toBe(404);
    expect(
      (await t.inject({ method: 'GET', url: `${links(a)}/${l.id}/conversions`, headers: b.auth })).statusCode,
    ).toBeOneOf([401, 404]);
    const bAll = await t.inject({ method: 'GET', url: `${links(b)}/conversions`, headers: b.auth });
    expect(bAll.json().items.some((i: { linkId: string }) => i.linkId === l.id)).toBe(false);
  });

  it('an A/B split’s conversions by variant (groupBy=route): constructed counts, and the clicks by route', async () => {
    const l = await createLink(a, {
      url: 'https://shop.example/ab',
      trackConversions: true,
      variants: [
        { url: 'https://shop.example/a', weight: 50 },
        { url: 'https://shop.example/b', weight: 50 },
      ],
    });
    // 40 visitors (a browser of their own each), sorted by the variant they were given.
    const byVariant: Record<string, string[]> = { a: [], b: [] };
    for (let i = 0; i < 40; i++) {
      const res = await t.inject({
        method: 'GET',
        url: `/l/${l.code}`,
        headers: { 'user-agent': `Mozilla/5.0 (X11; Linux x86_64; rv:130.0) Gecko/20100101 Firefox/130.${i}` },
      });
      const location = new URL(res.headers.location as string);
      byVariant[location.pathname.slice(1)].push(location.searchParams.get('pl_cid') as string);
    }
    expect(byVariant.a.length).toBeGreaterThan(2);
    expect(byVariant.b.length).toBeGreaterThan(2);
    // Constructed: 2 of variant a's visitors sign up, 1 of them buys; 3 of b's sign up.
    await append(a, { interactionId: 'signup', userId: 'ab1', clickId: byVariant.a[0] });
    await append(a, { interactionId: 'signup', userId: 'ab2', clickId: byVariant.a[1] });
    await append(a, { interactionId: 'purchase', userId: 'ab2', outcome: 'paid', clickId: byVariant.a[1] });
    for (let i = 0; i < 3; i++)
      await append(a, { interactionId: 'signup', userId: `ab${3 + i}`, clickId: byVariant.b[i] });
    await t.app.services.links.redirects.flush();
    const conv = await t.inject({
      method: 'GET',
      url: `${links(a)}/${l.id}/conversions?groupBy=route`,
      headers: a.auth,
    });
    expect(conv.statusCode, conv.body).toBe(200);
    expect(conv.json().total).toBe(6);
    expect(conv.json().items).toEqual([
      { interactionId: 'signup', outcome: null, count: 3, clicks: 3, route: 'variant:1' },
      { interactionId: 'signup', outcome: null, count: 2, clicks: 2, route: 'variant:0' },
      { interactionId: 'purchase', outcome: 'paid', count: 1, clicks: 1, route: 'variant:0' },
    ]);
    // Without groupBy the answer is as before: no route.
    const plain = await t.inject({ method: 'GET', url: `${links(a)}/${l.id}/conversions`, headers: a.auth });
    expect(plain.json().items[0]).not.toHaveProperty('route');
    // The clicks by route: each variant's visitors, exactly.
    const byRoute = await t.inject({
      method: 'GET',
      url: `${links(a)}/${l.id}/analytics?groupBy=route`,
      headers: a.auth,
    });
    expect(byRoute.statusCode, byRoute.body).toBe(200);
    const counts = Object.fromEntries(
      byRoute.json().breakdown.items.map((i: { value: string; clicks: number }) => [i.value, i.clicks]),
    );
    expect(counts).toEqual({ 'variant:0': byVariant.a.length, 'variant:1': byVariant.b.length });
    const listed = await clicksOf(a, l.id);
    expect(listed.map((c) => c.route).sort()).toEqual(
      [...byVariant.a.map(() => 'variant:0'), ...byVariant.b.map(() => 'variant:1')].sort(),
    );
    // groupBy=route is a link's: the other values are refused.
    const wrong = await t.inject({
      method: 'GET',
      url: `${links(a)}/${l.id}/conversions?groupBy=link`,
      headers: a.auth,
    });
    expect(wrong.statusCode).toBe(400);
  });

  it('a click id is bounded and returned with its event', async () => {
    const long = await append(a, { interactionId: 'signup', userId: 'v0', clickId: 'x'.repeat(101) });
    expect(long.statusCode).toBe(400);
    const odd = await append(a, { interactionId: 'signup', userId: 'v0', clickId: 'a b' });
    expect(odd.statusCode).toBe(400);
  });

  it('a journey from a link’s clicks to a purchase reports the constructed counts exactly', async () => {
    const l = await createLink(a, { url: 'https://shop.example/funnel', trackConversions: true });
    const N = 7;
    const M = 4;
    const K = 2;
    const ids: string[] = [];
    for (let i = 0; i < N; i++) ids.push(clickIdOf((await visit(`/l/${l.code}`)).headers.location as string) as string);
    await t.app.services.links.redirects.flush();
    const later = (s: number) => new Date(Date.now() + s * 1000).toISOString();
    // M visitors send an event with their click id; K of them buy later (without the click id).
    for (let i = 0; i < M; i++) {
      const res = await append(a, {
        interactionId: 'signup',
        userId: `j${i}`,
        outcome: 'success',
        clickId: ids[i],
        timestamp: later(10),
      });
      expect(res.statusCode, res.body).toBe(200);
    }
    for (let i = 0; i < K; i++) {
      await append(a, { interactionId: 'purchase', userId: `j${i}`, outcome: 'paid', timestamp: later(20) });
    }
    // Noise: a purchase by someone who never clicked; a signup without a click id; a purchase
    // by a clicker who did not sign up; B's events with A's click ids.
    await append(a, { interactionId: 'purchase', userId: 'stranger', outcome: 'paid', timestamp: later(20) });
    await append(a, { interactionId: 'signup', userId: 'j6', outcome: 'success', timestamp: later(10) });
    await append(a, { interactionId: 'purchase', userId: 'j6', outcome: 'paid', timestamp: later(20) });
    await append(b, {
      interactionId: 'signup',
      userId: 'j5',
      outcome: 'success',
      clickId: ids[5],
      timestamp: later(10),
    });
    const j = await post(
      `/admin/collection/${a.id}/journeys`,
      {
        name: 'Click to purchase',
        journeyType: 'event_triggered',
        data: {
          steps: [
            { id: 'click', config: { interactionId: `link:${l.id}` } },
            { id: 'signup', config: { interactionId: 'signup' } },
            { id: 'buy', config: { interactionId: 'purchase', outcome: 'paid' } },
          ],
        },
      },
      a.auth,
    );
    expect(j.statusCode, j.body).toBe(200);
    const funnel = await post(
      `/admin/collection/${a.id}/journeys.analytics/${j.json().id}/funnel-report`,
      { stepMappings: [] },
      a.auth,
    );
    expect(funnel.statusCode, funnel.body).toBe(200);
    const counts = funnel
      .json()
      .steps.map((s: { stepId: string; enteredCount: number; completedCount: number }) => [
        s.stepId,
        s.enteredCount,
        s.completedCount,
      ]);
    expect(counts).toEqual([
      ['click', N, N],
      ['signup', N, M],
      ['buy', M, K],
    ]);
    const stats = await post(
      `/admin/collection/${a.id}/journeys.analytics/${j.json().id}/stats`,
      { finalStepId: 'buy' },
      a.auth,
    );
    expect(stats.statusCode, stats.body).toBe(200);
    expect(stats.json()).toMatchObject({ totalEntered: N, completed: K });
    // B's journey over A's link sees no clicks.
    const jb = await post(
      `/admin/collection/${b.id}/journeys`,
      {
        name: 'Theirs',
        journeyType: 'event_triggered',
        data: {
          steps: [
            { id: 'click', config: { interactionId: `link:${l.id}` } },
            { id: 'signup', config: { interactionId: 'signup' } },
          ],
        },
      },
      b.auth,
    );
    const fb = await post(
      `/admin/collection/${b.id}/journeys.analytics/${jb.json().id}/funnel-report`,
      { stepMappings: [] },
      b.auth,
    );
    expect(fb.json().steps.map((s: { enteredCount: number }) => s.enteredCount)).toEqual([0, 0]);
  });
});
