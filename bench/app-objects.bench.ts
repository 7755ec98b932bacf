/**
 * App-object scenarios: case create, case list with a status filter and sort over 1,000,000
 * cases in one collection, and thread reply. Baselines in the same run: a bare Fastify
 * constant route, and a bare Fastify route running the list's page SELECT through the same
 * driver on the same database. Backend: PostgreSQL by default; BENCH_BACKEND=pglite.
 */
import { migrate, openDatabase } from '../src/db/index.ts';
import { benchDatabase, call, load, printTable, type Row, row, SUPER_KEY, spawnTs, startService } from './lib.ts';

const backend = (process.env.BENCH_BACKEND ?? 'postgres') as 'postgres' | 'pglite';
const CASES = Number(process.env.BENCH_CASES ?? 1_000_000);
const THREADS = 200;
// A realistic spread: most cases are closed, a minority open at any time.
const STATUSES = [
  'closed',
  'closed',
  'closed',
  'closed',
  'closed',
  'closed',
  'resolved',
  'resolved',
  'open',
  'pending',
];
const LIST_SQL = `SELECT * FROM app_cases WHERE collection_id = 'bench' AND app_id = 'helpdesk' AND deleted_at IS NULL
  AND status = $1 ORDER BY created_at DESC, id DESC LIMIT 50`;

const database = await benchDatabase(backend);
try {
  const db = await openDatabase({ databaseUrl: database.env.DATABASE_URL, dataDir: database.env.DATA_DIR ?? '' });
  await migrate(db);
  await db.query("INSERT INTO collections (id, name) VALUES ('bench', 'Bench')");
  const started = Date.now();
  // Bulk load in chunks (one statement each) so PGlite's memory stays bounded too.
  const CHUNK = 250_000;
  for (let from = 1; from <= CASES; from += CHUNK) {
    await db.query(
      `INSERT INTO app_cases (collection_id, id, app_id, visibility, ref, status, priority, category, contact_id,
         data, created_at, updated_at, closed_at)
       SELECT 'bench', 'case_b' || g, 'helpdesk', 'owner', 'REF-' || g, ($1::text[])[1 + g % 10], 1 + g % 5,
              'cat-' || (g % 12), 'contact-' || (g % 50000), jsonb_build_object('n', g),
              now() - make_interval(secs => g * 30), now() - make_interval(secs => g * 30),
              CASE WHEN ($1::text[])[1 + g % 10] IN ('closed', 'resolved') THEN now() - make_interval(secs => g * 29) END
       FROM generate_series($2::int, $3::int) g`,
      [STATUSES, from, Math.min(from + CHUNK - 1, CASES)],
    );
  }
  // The status counters got one delta per seeded case from their trigger; fold them as a reader would.
  const { foldCounts } = await import('../src/modules/app-objects/cases/cases.repository.ts');
  await foldCounts(db, 'bench', 'helpdesk');
  await db.exec('VACUUM ANALYZE app_cases');
  await db.exec('VACUUM ANALYZE app_case_counts');
  await db.close();
  console.log(`seeded ${CASES} cases in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const rows: Row[] = [];
  const constant = await spawnTs('bench/baseline-server.ts', { ...database.env, BASELINE: 'constant' });
  const constantResult = await load({ url: `${constant.url}/x` });
  await constant.stop();
  rows.push(row('baseline: bare Fastify constant', constantResult));

  const select = await spawnTs('bench/baseline-server.ts', {
    ...database.env,
    BASELINE: 'select',
    SELECT_SQL: LIST_SQL,
  });
  const selectResult = await load({ url: `${select.url}/x/open`, connections: 4 });
  await select.stop();
  rows.push(row('baseline: bare Fastify list page SELECT, 4 conn', selectResult));

  const service = await startService(database.env);
  try {
    const base = service.url;
    const { key } = await call<{ key: string }>(base, 'POST', '/admin/collection/bench/api-keys', { name: 'bench' });
    const auth = { authorization: `Bearer ${key}` };
    const { token } = await call<{ token: string }>(base, 'POST', '/admin/collection/bench/user-tokens', {
      userId: 'bench-user',
    });
    const app = `${base}/admin/collection/bench/app/helpdesk`;

    const create = await load({
      url: `${app}/cases`,
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        category: 'bench',
        priority: 2,
        data: { subject: 'Printer on fire' },
        owner: { phone: 'x' },
      }),
      connections: 10,
    });
    rows.push(row('case create (admin, with audit row)', create, { name: 'constant', result: constantResult }));

    for (const connections of [4, 20]) {
      let i = 0;
      const filters = ['status=open', 'status=pending', 'status=in:open,pending', 'status=resolved'];
      const list = await load({
        url: `${app}/cases`,
        headers: auth,
        connections,
        setupRequest: (req) => ({
          ...req,
          path: `/admin/collection/bench/app/helpdesk/cases?${filters[i++ % filters.length]}&sort=createdAt:desc&limit=50`,
        }),
      });
      rows.push(
        row(`case list, status filter + sort, ${CASES} cases, ${connections} conn`, list, {
          name: 'list page SELECT',
          result: selectResult,
        }),
      );
    }

    const threadIds: string[] = [];
    for (let t = 0; t < THREADS; t++) {
      const th = await call<{ id: string }>(
        base,
        'POST',
        '/admin/collection/bench/app/helpdesk/threads',
        { visibility: 'public' },
        key,
      );
      threadIds.push(th.id);
    }
    let n = 0;
    const reply = await load({
      url: `${base}/public/collection/bench/app/helpdesk/threads/${threadIds[0]}/reply`,
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ text: 'Have you tried turning it off and on again?' }),
      connections: 10,
      setupRequest: (req) => ({
        ...req,
        path: `/public/collection/bench/app/helpdesk/threads/${threadIds[n++ % THREADS]}/reply`,
      }),
    });
    rows.push(
      row(`thread reply (user token, ${THREADS} threads)`, reply, { name: 'constant', result: constantResult }),
    );
  } finally {
    await service.stop();
  }
  printTable(`App objects (${backend})`, rows);
} finally {
  await database.drop();
}
void SUPER_KEY;
