/**
 * Foundation scenarios: public location get, and location search with q over 100,000
 * locations. Baselines in the same run: a bare Fastify route returning a constant, and a bare
 * Fastify route running the same single-row SELECT through the same driver on the same
 * database. Subjects and baselines run side by side and are loaded in interleaved rounds.
 * PostgreSQL (the target of the figures); PGlite's data directory has one owner, so
 * the embedded backend is measured with the service alone (BENCH_BACKEND=pglite).
 */
import { migrate, openDatabase } from '../src/db/index.ts';
import {
  benchDatabase,
  interleaved,
  type LoadResult,
  load,
  printTable,
  type Row,
  row,
  SUPER_KEY,
  spawnTs,
  startService,
} from './lib.ts';

const backend = (process.env.BENCH_BACKEND ?? 'postgres') as 'postgres' | 'pglite';
const LOCATIONS = Number(process.env.BENCH_LOCATIONS ?? 100_000);

// Names are made of 8,000 distinct pseudo-words (three of 20 syllables) so that, as in real
// data, a search term matches a few dozen places rather than a large share of the table.
const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ran',
  'te',
  'bur',
  'sel',
  'vo',
  'den',
  'pa',
  'ris',
  'gu',
  'hal',
  'no',
  'fe',
  'tor',
  'li',
  'wen',
  'sa',
  'dro',
];
const KINDS = ['store', 'office', 'depot', 'outlet', 'kiosk', 'warehouse', 'studio', 'lab'];
const word = (n: number) =>
  SYLLABLES[n % 20] + SYLLABLES[Math.floor(n / 20) % 20] + SYLLABLES[Math.floor(n / 400) % 20];
const WORDS = Array.from({ length: 12 }, (_, i) => word(i * 611 + 7));
/** Each search word with its second-to-last letter dropped: a typo only the fuzzy step finds. */
const TYPOS = WORDS.map((w) => w.slice(0, -2) + w.slice(-1));

const database = await benchDatabase(backend);
try {
  // Seed directly: one collection, LOCATIONS rows split between global and the collection's own.
  const db = await openDatabase({ databaseUrl: database.env.DATABASE_URL, dataDir: database.env.DATA_DIR ?? '' });
  await migrate(db);
  await db.query("INSERT INTO collections (id, name) VALUES ('bench', 'Bench')");
  await db.query(
    `WITH w AS (SELECT g, s[1 + g % 20] || s[1 + (g / 20) % 20] || s[1 + (g / 400) % 20] AS word,
                       s[1 + (g * 7) % 20] || s[1 + (g * 7 / 20) % 20] || s[1 + (g * 7 / 400) % 20] AS near
                FROM generate_series(1, $3::int) g, (SELECT $1::text[] AS s) syl)
     INSERT INTO locations (id, collection_id, name, category, description, country_code, country_name)
     SELECT 'loc_b' || g, CASE WHEN g % 2 = 0 THEN 'bench' ELSE NULL END,
            initcap(word) || ' ' || ($2::text[])[1 + g % 8] || ' ' || g,
            ($2::text[])[1 + g % 8], 'Location number ' || g || ' near ' || initcap(near),
            (ARRAY['DE','FR','GB','ES','AT','CZ','PL','PT','IE','NO','IT','GR'])[1 + g % 12], 'Country ' || (g % 12)
     FROM w`,
    [SYLLABLES, KINDS, LOCATIONS],
  );
  await db.query('ANALYZE locations');
  await db.close();
  const globalId = 'loc_b1';

  const rows: Row[] = [];
  const service = await startService(database.env);
  const baselines =
    backend === 'postgres'
      ? {
          constant: await spawnTs('bench/baseline-server.ts', { ...database.env, BASELINE: 'constant' }),
          select: await spawnTs('bench/baseline-server.ts', { ...database.env, BASELINE: 'location' }),
        }
      : undefined;
  try {
    const { key } = await fetch(`${service.url}/admin/collection/bench/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SUPER_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    }).then((r) => r.json() as Promise<{ key: string }>);
    for (const q of [WORDS[0], TYPOS[0]]) {
      const probe = await fetch(`${service.url}/admin/collection/bench/location/search?q=${q}&limit=20`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const body = (await probe.json()) as { count: number };
      if (!probe.ok || body.count === 0)
        throw new Error(`search probe for ${q}: ${probe.status} ${JSON.stringify(body)}`);
      console.log(`probe: q=${q} matches ${body.count}`);
    }

    const search = (terms: string[], connections: number) => {
      let i = 0;
      return load({
        url: `${service.url}/admin/collection/bench/location/search`,
        headers: { authorization: `Bearer ${key}` },
        connections,
        setupRequest: (req) => ({
          ...req,
          path: `/admin/collection/bench/location/search?q=${terms[i++ % terms.length]}&limit=20`,
        }),
      });
    };
    const subjects: Record<string, () => Promise<LoadResult>> = {
      get: () => load({ url: `${service.url}/public/location/${globalId}` }),
      // The same read with an admin key: what a credential costs once it is cached (auth hook,
      // rate-limit key), the query being the same.
      getKey: () =>
        load({ url: `${service.url}/public/location/${globalId}`, headers: { authorization: `Bearer ${key}` } }),
      search4: () => search(WORDS, 4),
      typo4: () => search(TYPOS, 4),
      search20: () => search(WORDS, 20),
    };
    if (baselines) {
      subjects.constant = () => load({ url: `${baselines.constant.url}/x` });
      subjects.select = () => load({ url: `${baselines.select.url}/x/${globalId}` });
    }
    const r = await interleaved(subjects);
    const base = r.select ? { name: 'same SELECT', result: r.select } : undefined;
    if (r.constant) rows.push(row('baseline: bare Fastify constant', r.constant));
    if (r.select) rows.push(row('baseline: bare Fastify same SELECT', r.select));
    rows.push(row('public location get', r.get, base));
    rows.push(row('public location get, cached admin key', r.getKey, base));
    rows.push(row(`location search, q over ${LOCATIONS} locations, 4 conn`, r.search4, base));
    rows.push(row(`location search, typo q (fuzzy fallback), 4 conn`, r.typo4, base));
    rows.push(row(`location search, q over ${LOCATIONS} locations, 20 conn`, r.search20, base));
  } finally {
    await service.stop();
    await baselines?.constant.stop();
    await baselines?.select.stop();
  }
  printTable(`Foundation (${backend}, median of interleaved rounds)`, rows);
} finally {
  await database.drop();
}
