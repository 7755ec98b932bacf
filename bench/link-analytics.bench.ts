/**
 * Collection-wide click analytics (issue 28, part C) over BENCH_CLICKS (default 1,000,000)
 * clicks of 1,000 links in the 30 days before the seed, on PostgreSQL (BENCH_BACKEND=pglite for
 * the embedded database).
 *
 *   npm run bench -- link-analytics
 *
 * The clicks are seeded by one generate_series INSERT (countries, devices, browsers, systems,
 * referers and UTM sources from small weighted sets, 5 % bots, 30,000 visitors), and the
 * rollup the click batch keeps (hourly, and daily for the breakdowns) is built from them by one INSERT … SELECT with the same
 * rule (a visitor's first click of a UTC day is its unique), so the reads see what a month of
 * real traffic would have left. Then each read is loaded for BENCH_SECONDS (default 8) on
 * BENCH_CONNECTIONS (default 4) connections: the collection's totals and daily series over the
 * 30 days, an hourly series over 7 days, breakdowns by country and by device, by referer host,
 * by link, by city and by referer URL (nearly one value per click: the worst case), bots
 * included once; and a link's own analytics (read from its clicks) for comparison.
 *
 * With BENCH_BASELINE_REF=<git ref>, that commit's service (checked out beside this one) reads
 * the same data set in the same run: each scenario is loaded on both in interleaved rounds
 * (BENCH_ROUNDS, default 3) and its row gives the p99 and p50 ratios, ours over the baseline's.
 *
 * Environment: BENCH_CLICKS, BENCH_SECONDS, BENCH_CONNECTIONS; BENCH_SCHEMA=<name> keeps the
 * data set in that schema of the PostgreSQL database (seeded once, reused by later runs, for
 * probing plans with psql); BENCH_SCENARIOS=<regular expression> loads only the scenarios whose
 * names match.
 */
import { migrate, openDatabase } from '../src/db/index.ts';
import {
  benchDatabase,
  checkoutAt,
  comparedRow,
  interleaved,
  load,
  printTable,
  type Row,
  row,
  SUPER_KEY,
  startService,
  startServiceAt,
} from './lib.ts';

const backend = (process.env.BENCH_BACKEND ?? 'postgres') as 'postgres' | 'pglite';
const CLICKS = Number(process.env.BENCH_CLICKS ?? 1_000_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const LINKS = 1000;
const COLLECTION = 'bench';
const HOUR = 3_600_000;

const KEEP = process.env.BENCH_SCHEMA || undefined;
const ONLY = new RegExp(process.env.BENCH_SCENARIOS ?? '');
const BASELINE_REF = process.env.BENCH_BASELINE_REF || undefined;
if (BASELINE_REF && backend === 'pglite')
  throw new Error('BENCH_BASELINE_REF needs PostgreSQL (one PGlite data directory has one process)');
const database = await benchDatabase(backend, { keep: KEEP });
const rows: Row[] = [];
const report = (r: Row) => {
  rows.push(r);
  console.log(
    `${r.scenario}: p50 ${r.p50?.toFixed(1) ?? '-'} ms, p99 ${r.p99?.toFixed(1) ?? '-'} ms${r.note ? ` (${r.note})` : ''}`,
  );
};
try {
  const db = await openDatabase({ databaseUrl: database.env.DATABASE_URL, dataDir: database.env.DATA_DIR ?? '' });
  await migrate(db);
  const { rows: seeded } = await db.query<{ end: Date | null }>(
    'SELECT max(clicked_at) AS end FROM link_clicks WHERE collection_id = $1',
    [COLLECTION],
  );
  // A kept data set is read over the 30 days it was seeded for.
  const end = seeded[0].end
    ? new Date(Math.ceil(seeded[0].end.getTime() / HOUR) * HOUR)
    : new Date(Math.floor(Date.now() / HOUR) * HOUR);
  const start = new Date(end.getTime() - 30 * 24 * HOUR);
  if (seeded[0].end) report({ scenario: `seed: skipped, schema ${KEEP} already has clicks` });
  else {
    const started = Date.now();
    await db.query('INSERT INTO collections (id, name) VALUES ($1, $1)', [COLLECTION]);
    await db.query(
      `INSERT INTO links (collection_id, id, code, destination_url, created_by)
     SELECT $1, 'lnk_bench_' || i, 'bench' || i, 'https://dest.example/' || i, 'bench' FROM generate_series(0, $2 - 1) i`,
      [COLLECTION, LINKS],
    );
    // Skewed picks: low indexes more often, as real traffic's few countries and browsers lead.
    await db.query(
      `INSERT INTO link_clicks (collection_id, link_id, clicked_at, ip_address, user_agent, referer, country, region, city,
       device_type, browser, os, utm_source, utm_medium, utm_campaign, trigger, visitor)
     SELECT $1, 'lnk_bench_' || (i % $3), t,
       '198.51.' || (v % 250) || '.' || (v / 250 % 250), 'Mozilla/5.0 bench ' || (v % 40),
       CASE WHEN r1 < 0.3 THEN '' ELSE 'https://site' || floor(r1 * r1 * 200)::int || '.example/p/' || (i % 977) END,
       (ARRAY['US','DE','GB','FR','IN','BR','JP','CA','ES','IT','NL','SE','PL','MX','AU','KR','CH','AT','BE',''])[1 + floor(r2 * r2 * 20)::int],
       'R' || floor(r2 * 30)::int, 'City ' || floor(r2 * r2 * 300)::int,
       CASE WHEN r3 < 0.05 THEN 'bot' WHEN r3 < 0.6 THEN 'mobile' WHEN r3 < 0.95 THEN 'desktop' ELSE 'tablet' END,
       (ARRAY['Chrome','Mobile Safari','Safari','Firefox','Edge','Samsung Internet'])[1 + floor(r4 * r4 * 6)::int],
       (ARRAY['iOS','Android','Windows','Mac OS','Linux'])[1 + floor(r4 * 5)::int],
       CASE WHEN r5 < 0.5 THEN '' ELSE (ARRAY['newsletter','twitter','facebook','linkedin','google','partner'])[1 + floor(r5 * 6)::int] END,
       CASE WHEN r5 < 0.5 THEN '' ELSE 'email' END,
       CASE WHEN r5 < 0.7 THEN '' ELSE 'campaign-' || floor(r5 * 10)::int END,
       CASE WHEN r1 < 0.1 THEN 'qr' ELSE 'link' END,
       substr(md5('visitor' || v || '/' || (t AT TIME ZONE 'UTC')::date), 1, 22)
     FROM (SELECT i, $4::timestamptz + (random() * ($5::timestamptz - $4::timestamptz)) AS t,
       floor(random() * 30000)::int AS v, random() AS r1, random() AS r2, random() AS r3, random() AS r4,
       random() AS r5 FROM generate_series(1, $2) i) g`,
      [COLLECTION, CLICKS, LINKS, start, end],
    );
    const clicksMs = Date.now() - started;
    // The rollup as the click batches would have left it (click-rollup.ts), built in one statement.
    await db.query(
      `INSERT INTO link_click_rollup (collection_id, dim, daily, hour, value, bot, clicks, uniques)
     SELECT collection_id, d.dim, g.daily,
       date_trunc(CASE WHEN g.daily THEN 'day' ELSE 'hour' END, clicked_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
       left(d.value, 500), bot, count(*), sum(u)
     FROM (
       SELECT c.*, device_type = 'bot' AS bot,
         (row_number() OVER (PARTITION BY (clicked_at AT TIME ZONE 'UTC')::date, visitor ORDER BY clicked_at, id) = 1)::int AS u
       FROM link_clicks c WHERE collection_id = $1
     ) c
     CROSS JOIN LATERAL (VALUES
       (0, ''), (1, country), (2, region), (3, city), (4, device_type), (5, browser), (6, os),
       (7, CASE WHEN referer = '' THEN '' ELSE lower(substring(referer FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#:]+)')) END),
       (8, referer), (9, utm_source), (10, utm_medium), (11, utm_campaign), (12, utm_term), (13, utm_content),
       (14, trigger), (15, link_id)
     ) AS d (dim, value)
     CROSS JOIN (VALUES (false), (true)) AS g (daily)
     WHERE NOT (g.daily AND d.dim = 0)
     GROUP BY 1, 2, 3, 4, 5, 6`,
      [COLLECTION],
    );
    // The ranked dims' months (migration 0650) as the click batches would have left them.
    await db.query(
      `INSERT INTO link_click_value_months (collection_id, dim, month, value, clicks)
     SELECT collection_id, dim, date_trunc('month', hour AT TIME ZONE 'UTC')::date, value, sum(clicks)
     FROM link_click_rollup WHERE collection_id = $1 AND dim = 8 AND daily GROUP BY 1, 2, 3, 4`,
      [COLLECTION],
    );
    await db.exec('VACUUM ANALYZE link_clicks');
    await db.exec('VACUUM ANALYZE link_click_value_months');
    await db.exec('VACUUM ANALYZE link_click_rollup');
    const { rows: counts } = await db.query<{ dim: number; n: number }>(
      'SELECT dim, count(*) AS n FROM link_click_rollup WHERE collection_id = $1 GROUP BY dim ORDER BY dim',
      [COLLECTION],
    );
    report({
      scenario: `seed: ${CLICKS} clicks of ${LINKS} links over 30 days, and their rollup`,
      note: `clicks ${(clicksMs / 1000).toFixed(1)} s, rollup ${((Date.now() - started - clicksMs) / 1000).toFixed(1)} s; rollup rows per dim ${counts.map((c) => `${c.dim}:${c.n}`).join(' ')}`,
    });
  }
  await db.close();

  const service = await startService({ ...database.env, ROLE: 'api' });
  const checkout = BASELINE_REF ? checkoutAt(BASELINE_REF) : undefined;
  const baseline = checkout ? await startServiceAt(checkout.dir, { ...database.env, ROLE: 'api' }) : undefined;
  try {
    const { key } = await fetch(`${service.url}/admin/collection/${COLLECTION}/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SUPER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    }).then((r) => r.json() as Promise<{ key: string }>);
    const headers = { authorization: `Bearer ${key}` };
    const month = `from=${start.toISOString()}&to=${end.toISOString()}`;
    const week = `from=${new Date(end.getTime() - 7 * 24 * HOUR).toISOString()}&to=${end.toISOString()}`;
    const base = `${service.url}/admin/collection/${COLLECTION}/links`;
    const scenarios: [string, string][] = [
      ['collection: totals and daily series, 30 days', `${base}/analytics?${month}&interval=day`],
      ['collection: hourly series, 7 days', `${base}/analytics?${week}&interval=hour`],
      ['collection: by country, 30 days', `${base}/analytics?${month}&groupBy=country`],
      ['collection: by device, 30 days', `${base}/analytics?${month}&groupBy=device`],
      ['collection: by device, 30 days, bots included', `${base}/analytics?${month}&groupBy=device&includeBots=true`],
      ['collection: by referer host, 30 days', `${base}/analytics?${month}&groupBy=referer`],
      ['collection: by link, 30 days', `${base}/analytics?${month}&groupBy=link`],
      ['collection: by city, 30 days', `${base}/analytics?${month}&groupBy=city`],
      // The worst case: almost every click has a referer address of its own.
      ['collection: by referer URL, 30 days', `${base}/analytics?${month}&groupBy=referer_url`],
      ['one link (its 1,000 clicks): by country, 30 days', `${base}/lnk_bench_7/analytics?${month}&groupBy=country`],
    ];
    for (const [name, url] of scenarios.filter(([name]) => ONLY.test(name))) {
      const probe = await fetch(url, { headers });
      if (!probe.ok) throw new Error(`${name}: ${probe.status} ${await probe.text()}`);
      const body = (await probe.json()) as { totals: { clicks: number; uniques: number } };
      const totals = `totals ${body.totals.clicks}/${body.totals.uniques}`;
      if (baseline && checkout) {
        // The same path on the baseline's port: the same data set, key and window.
        const before = url.replace(service.url, baseline.url);
        const r = await interleaved({
          now: () => load({ url, headers, connections: CONNECTIONS }),
          before: () => load({ url: before, headers, connections: CONNECTIONS }),
        });
        const compared = comparedRow(name, r.now, r.before, checkout.commit);
        report({ ...compared, note: [totals, compared.note].filter(Boolean).join('; ') });
        continue;
      }
      const r = await load({ url, headers, connections: CONNECTIONS });
      report({ ...row(name, r), note: [totals, row(name, r).note].filter(Boolean).join('; ') });
    }
  } finally {
    await service.stop();
    await baseline?.stop();
    checkout?.remove();
  }
  printTable(`Click analytics over ${CLICKS} clicks (${backend}, ${CONNECTIONS} connections)`, rows);
} finally {
  await database.drop();
}
