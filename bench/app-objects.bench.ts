/**
 * App-object scenarios: case create, case list with a status filter and sort over 1,000,000
 * cases in one collection, and thread reply. Baselines in the same run: a bare Fastify
 * constant route, and a bare Fastify route running the list's page SELECT through the same
 * driver on the same database. Backend: PostgreSQL by default; BENCH_BACKEND=pglite.
 */
import { migrate, openDatabase } from '../src/db/index.ts';
import {
  benchDatabase,
  call,
  interleaved,
  type LoadResult,
  load,
  printTable,
  type Row,
  row,
  spawnTs,
  startService,
} from './lib.ts';

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
  const service = await startService(database.env);
  // Baselines run beside the service so that interleaved rounds see the same background load.
  const baselines =
    backend === 'postgres'
      ? {
          constant: await spawnTs('bench/baseline-server.ts', { ...database.env, BASELINE: 'constant' }),
          select: await spawnTs('bench/baseline-server.ts', {
            ...database.env,
            BASELINE: 'select',
            SELECT_SQL: LIST_SQL,
          }),
        }
      : undefined;
  try {
    const base = service.url;
    const { key } = await call<{ key: string }>(base, 'POST', '/admin/collection/bench/api-keys', { name: 'bench' });
    const auth = { authorization: `Bearer ${key}` };
    const { token } = await call<{ token: string }>(base, 'POST', '/admin/collection/bench/user-tokens', {
      userId: 'bench-user',
    });
    const app = `${base}/admin/collection/bench/app/helpdesk`;
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
    const probe = await call<{ pagination: { total: number } }>(
      base,
      'GET',
      '/admin/collection/bench/app/helpdesk/cases?status=open&limit=1',
      undefined,
      key,
    );
    console.log(`probe: status=open matches ${probe.pagination.total}`);

    const filters = ['status=open', 'status=pending', 'status=in:open,pending', 'status=resolved'];
    const list = (connections: number) => {
      let i = 0;
      return load({
        url: `${app}/cases`,
        headers: auth,
        connections,
        setupRequest: (req) => ({
          ...req,
          path: `/admin/collection/bench/app/helpdesk/cases?${filters[i++ % filters.length]}&sort=createdAt:desc&limit=50`,
        }),
      });
    };
    let n = 0;
    const subjects: Record<string, () => Promise<LoadResult>> = {
      create: () =>
        load({
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
        }),
      list4: () => list(4),
      list20: () => list(20),
      reply: () =>
        load({
          url: `${base}/public/collection/bench/app/helpdesk/threads/${threadIds[0]}/reply`,
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
          body: JSON.stringify({ text: 'Have you tried turning it off and on again?' }),
          connections: 10,
          setupRequest: (req) => ({
            ...req,
            path: `/public/collection/bench/app/helpdesk/threads/${threadIds[n++ % THREADS]}/reply`,
          }),
        }),
    };
    if (baselines) {
      subjects.constant = () => load({ url: `${baselines.constant.url}/x` });
      subjects.select = () => load({ url: `${baselines.select.url}/x/open`, connections: 4 });
    }
    const r = await interleaved(subjects);
    const constant = r.constant ? { name: 'constant', result: r.constant } : undefined;
    const select = r.select ? { name: 'list page SELECT', result: r.select } : undefined;
    if (r.constant) rows.push(row('baseline: bare Fastify constant', r.constant));
    if (r.select) rows.push(row('baseline: bare Fastify list page SELECT, 4 conn', r.select));
    rows.push(row('case create (admin, with audit row), 10 conn', r.create, constant));
    rows.push(row(`case list, status filter + sort, ${CASES} cases, 4 conn`, r.list4, select));
    rows.push(row(`case list, status filter + sort, ${CASES} cases, 20 conn`, r.list20, select));
    rows.push(row(`thread reply (user token, ${THREADS} threads), 10 conn`, r.reply, constant));
  } finally {
    await service.stop();
    await baselines?.constant.stop();
    await baselines?.select.stop();
  }
  printTable(`App objects (${backend}, median of interleaved rounds)`, rows);
} finally {
  await database.drop();
}
