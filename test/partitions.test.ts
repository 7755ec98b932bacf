/**
 * Tables that age out (issue 30 part 4; docs/operations.md "Tables that age out"):
 * - migrations 0911/0912 move every existing row of interaction_events and link_clicks into
 *   the partitioned tables, unchanged, with the ids continuing;
 * - the upkeep makes the months ahead, moves a month's rows out of the default partition when
 *   it makes that month, and with retention drops whole months older than the cutoff (and the
 *   default partition's older rows), leaving every answer about the months kept as it was.
 * Both backends (PGlite here, PostgreSQL with TEST_DATABASE_URL).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropMonthsBefore, makeMonths, migrate, migrationFiles, monthlyPartitions } from '../src/db/index.ts';
import { EVENTS_TABLE } from '../src/modules/interactions/interactions.partitions.ts';
import { CLICKS_TABLE } from '../src/modules/links/click-partitions.ts';
import { createTestApp, type TestApp, type TestCollection } from './helpers/app.ts';
import { createTestDb, createTestDbBefore, onPostgres } from './helpers/db.ts';

describe('migrations 0911 and 0912 (existing rows into the partitioned tables)', () => {
  it('keeps every row as it was, in the partition of its month, and ids go on from the last one', async () => {
    const testDb = await createTestDbBefore('0910');
    try {
      const db = testDb.db;
      // Events over several months, one far in the past, one far ahead, one at -infinity; a
      // deleted one; versions of one event id. Through the table, so the triggers count them.
      await db.query(`
        INSERT INTO interaction_events (collection_id, event_id, interaction_id, app_id, occurred_at, user_id,
          contact_id, outcome, journey_id, metadata, deleted_at, org_id, extra, click_id)
        SELECT 'c' || (g % 2), 'ev' || (g % 40), 'quiz', 'app', timestamptz '2026-01-15T10:00:00Z' + g * interval '2 days 3 hours',
          'u' || (g % 7), CASE WHEN g % 3 = 0 THEN 'k' || g END, CASE WHEN g % 2 = 0 THEN 'pass' ELSE 'fail' END,
          CASE WHEN g % 5 = 0 THEN 'j1' END, jsonb_build_object('score', g), CASE WHEN g % 11 = 0 THEN now() END,
          CASE WHEN g % 4 = 0 THEN 'org' END, CASE WHEN g % 6 = 0 THEN '{"x": 1}'::jsonb END,
          CASE WHEN g % 9 = 0 THEN 'click' || g END
        FROM generate_series(1, 150) AS g`);
      await db.query(`
        INSERT INTO interaction_events (collection_id, event_id, interaction_id, occurred_at, outcome) VALUES
          ('c0', 'past', 'quiz', '1970-03-01T00:00:00Z', 'pass'),
          ('c0', 'future', 'quiz', '2999-12-31T23:59:59Z', 'pass'),
          ('c0', 'never', 'quiz', '-infinity', 'fail')`);
      await db.query(`
        INSERT INTO link_clicks (collection_id, link_id, clicked_at, country, device_type, click_id, utm_source, visitor)
        SELECT 'c' || (g % 2), 'l' || (g % 3), timestamptz '2026-02-27T23:00:00Z' + g * interval '1 day 7 hours',
          CASE WHEN g % 2 = 0 THEN 'DE' ELSE '' END, 'desktop', CASE WHEN g % 4 = 0 THEN 'cid' || g END,
          CASE WHEN g % 5 = 0 THEN 'news' ELSE '' END, 'v' || (g % 13)
        FROM generate_series(1, 120) AS g`);
      const snapshot = async () => ({
        events: (await db.query('SELECT to_jsonb(e) AS r FROM interaction_events e ORDER BY id')).rows,
        clicks: (await db.query('SELECT to_jsonb(c) AS r FROM link_clicks c ORDER BY id')).rows,
        counts: (
          await db.query(
            `SELECT collection_id, interaction_id, hour, outcome, sum(n)::int AS n FROM interaction_counts_hourly
             GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
          )
        ).rows,
        latest: (await db.query('SELECT * FROM interaction_latest ORDER BY 1, 2, 3, 4')).rows,
      });
      const old = await snapshot();
      expect(old.events).toHaveLength(153);
      expect(old.clicks).toHaveLength(120);

      const applied = await migrate(db);
      expect(applied).toEqual(expect.arrayContaining(migrationFiles().filter((f) => f >= '0910')));
      expect(await snapshot()).toEqual(old);

      // Partitioned, each row in its month's partition; the far-off and infinite ones in the
      // default partition only where the migration made no month for them.
      const kinds = await db.query<{ relname: string; relkind: string }>(
        `SELECT relname, relkind FROM pg_class WHERE oid IN ('interaction_events'::regclass, 'link_clicks'::regclass)`,
      );
      expect(kinds.rows.map((r) => r.relkind)).toEqual(['p', 'p']);
      const misplaced = await db.query(`
        SELECT e.event_id, tableoid::regclass::text AS part FROM interaction_events e
        WHERE tableoid::regclass::text <> 'interaction_events' || to_char(occurred_at AT TIME ZONE 'UTC', '"_y"YYYY"m"MM')
          AND isfinite(occurred_at)`);
      expect(misplaced.rows).toEqual([]);
      const inDefault = await db.query<{ event_id: string }>(
        'SELECT event_id FROM interaction_events_default ORDER BY event_id',
      );
      expect(inDefault.rows.map((r) => r.event_id)).toEqual(['never']);
      const clickParts = await db.query<{ n: number }>(`
        SELECT count(*)::int AS n FROM link_clicks c
        WHERE tableoid::regclass::text <> 'link_clicks' || to_char(clicked_at AT TIME ZONE 'UTC', '"_y"YYYY"m"MM')`);
      expect(clickParts.rows[0].n).toBe(0);

      // Ids go on: a new row's id is above every old one, and the triggers count it.
      const next = await db.query<{ id: number }>(
        `INSERT INTO interaction_events (collection_id, event_id, interaction_id, occurred_at, outcome)
         VALUES ('c0', 'new', 'quiz', '2026-03-03T00:00:00Z', 'pass') RETURNING id`,
      );
      expect(Number(next.rows[0].id)).toBe(154);
      const counted = await db.query<{ n: number }>(
        `SELECT sum(n)::int AS n FROM interaction_counts_hourly WHERE collection_id = 'c0' AND hour = '2026-03-03T00:00:00Z'`,
      );
      expect(counted.rows[0].n).toBe(1);
      const click = await db.query<{ id: number }>(
        `INSERT INTO link_clicks (collection_id, link_id, clicked_at) VALUES ('c0', 'l0', now()) RETURNING id`,
      );
      expect(Number(click.rows[0].id)).toBe(121);
    } finally {
      await testDb.drop();
    }
  });
});

describe('the upkeep of the monthly partitions', () => {
  // The run's clock: retention of 90 days makes 2027-03-17 the cutoff, so every month up to
  // February 2027 is dropped whole and March 2027 (partly younger) is kept.
  const NOW = new Date('2027-06-15T00:00:00Z');
  let t: TestApp;
  let c: TestCollection;
  let link: { id: string; code: string };
  const base = () => `/admin/collection/${c.id}`;

  const post = async (url: string, payload: Record<string, unknown>) => {
    const res = await t.inject({ method: 'POST', url: `${base()}${url}`, headers: c.auth, payload });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const get = async (url: string) => {
    const res = await t.inject({ method: 'GET', url: `${base()}${url}`, headers: c.auth });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const partitionOf = async (eventId: string) =>
    (
      await t.testDb.db.query<{ part: string }>(
        `SELECT tableoid::regclass::text AS part FROM interaction_events WHERE event_id = $1`,
        [eventId],
      )
    ).rows.map((r) => r.part.replace(/^.*\./, ''));

  // Month by month: when, and how many events and clicks.
  const MONTHS = ['2026-12', '2027-01', '2027-02', '2027-03', '2027-05'];

  beforeAll(async () => {
    t = await createTestApp({ EVENTS_RETENTION_DAYS: '90', CLICKS_RETENTION_DAYS: '90' });
    c = await t.createCollection();
    // The months of the data set made beforehand (whatever month the migration ran in).
    await makeMonths(t.testDb.db, EVENTS_TABLE, new Date('2026-12-01T00:00:00Z'), 6);
    await makeMonths(t.testDb.db, CLICKS_TABLE, new Date('2026-12-01T00:00:00Z'), 6);
    await post('/interactions', { id: 'quiz', appId: 'learn', permissions: {} });
    for (const [m, month] of MONTHS.entries()) {
      for (let i = 0; i <= m; i++) {
        await post('/interactions/append', {
          interactionId: 'quiz',
          userId: `u${i}`,
          outcome: i % 2 ? 'fail' : 'pass',
          timestamp: `${month}-${String(20 - i).padStart(2, '0')}T10:00:00.000Z`,
          metadata: { score: m * 10 + i },
          eventId: `e-${month}-${i}`,
        });
      }
    }
    link = await post('/links', { url: 'https://dest.example/' });
    const links = t.app.services.links;
    for (const [m, month] of MONTHS.entries()) {
      for (let i = 0; i <= m; i++) {
        links.redirects.recordClick({
          collectionId: c.id,
          linkId: link.id,
          code: link.code,
          destinationUrl: 'https://dest.example/',
          at: new Date(`${month}-${String(20 - i).padStart(2, '0')}T10:00:00.000Z`),
          ip: `203.0.113.${i + 1}`,
          userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0',
          referer: '',
          proxyCountry: i % 2 ? 'DE' : 'FR',
          proxyCity: '',
        });
      }
      await links.redirects.flush();
    }
  });
  afterAll(() => t?.close());

  /** Answers about the months kept (March 2027 onwards), read through the API. */
  const keptAnswers = async () => ({
    counts: await post('/interactions/counts-by-outcome', {
      interactionId: 'quiz',
      from: '2027-03-01T00:00:00.000Z',
      to: '2027-07-01T00:00:00.000Z',
    }),
    latest: await post('/interactions/counts-by-outcome', {
      interactionId: 'quiz',
      from: '2027-03-01T00:00:00.000Z',
      to: '2027-07-01T00:00:00.000Z',
      dedupeLatest: true,
    }),
    events: await post('/interactions/query', {
      interactionId: 'quiz',
      from: '2027-03-01T00:00:00.000Z',
      to: '2027-07-01T00:00:00.000Z',
    }),
    linkAnalytics: await get(
      `/links/${link.id}/analytics?from=2027-03-01T00:00:00.000Z&to=2027-06-01T00:00:00.000Z&interval=month&groupBy=country`,
    ),
    collectionAnalytics: await get(
      '/links/analytics?from=2027-03-01T00:00:00.000Z&to=2027-06-01T00:00:00.000Z&interval=month&groupBy=country',
    ),
    clicks: await get(`/links/${link.id}/clicks?from=2027-03-01T00:00:00.000Z&to=2027-07-01T00:00:00.000Z`),
    stats: await get(`/links/${link.id}/clicks/stats?from=2027-03-01T00:00:00.000Z&to=2027-06-01T00:00:00.000Z`),
  });

  it('sends an event of a month without a partition, far back or far ahead, to the default partition', async () => {
    await post('/interactions/append', {
      interactionId: 'quiz',
      userId: 'old',
      outcome: 'pass',
      timestamp: '1999-06-01T00:00:00.000Z',
      eventId: 'far-past',
    });
    await post('/interactions/append', {
      interactionId: 'quiz',
      userId: 'late',
      outcome: 'pass',
      timestamp: '2400-01-01T00:00:00.000Z',
      eventId: 'far-future',
    });
    // August 2027: not made yet (the upkeep run below makes it, moving this row).
    await post('/interactions/append', {
      interactionId: 'quiz',
      userId: 'aug',
      outcome: 'fail',
      timestamp: '2027-08-05T00:00:00.000Z',
      eventId: 'august',
    });
    expect(await partitionOf('far-past')).toEqual(['interaction_events_default']);
    expect(await partitionOf('far-future')).toEqual(['interaction_events_default']);
    expect(await partitionOf('august')).toEqual(['interaction_events_default']);
    expect(await partitionOf('e-2027-03-0')).toEqual(['interaction_events_y2027m03']);
  });

  it('makes the months ahead, drops the months wholly past the retention, and answers about the kept months as before', async () => {
    const before = await keptAnswers();
    expect(before.counts).toEqual([
      { outcome: 'pass', count: 5 },
      { outcome: 'fail', count: 4 },
    ]);
    expect(before.events).toHaveLength(9);
    const augustBefore = await post('/interactions/counts-by-outcome', {
      interactionId: 'quiz',
      from: '2027-08-01T00:00:00.000Z',
      to: '2027-09-01T00:00:00.000Z',
    });
    expect(augustBefore).toEqual([{ outcome: 'fail', count: 1 }]);

    // Counts over the months to be dropped: the hourly counters' answer, kept as counted.
    const droppedWindow = { interactionId: 'quiz', from: '2026-12-01T00:00:00.000Z', to: '2027-03-01T00:00:00.000Z' };
    const countedBefore = await post('/interactions/counts-by-outcome', droppedWindow);
    expect(countedBefore).toEqual([
      { outcome: 'pass', count: 4 },
      { outcome: 'fail', count: 2 },
    ]);

    const events = await t.app.services.interactions.partitions.maintain(NOW);
    const clicks = await t.app.services.links.partitions.maintain(NOW);

    // Dropped: every month ending on or before the cutoff, and only those.
    for (const report of [events, clicks]) {
      expect(report.postponed).toEqual([]);
      for (const m of ['y2026m12', 'y2027m01', 'y2027m02']) expect(report.dropped).toContain(`${report.table}_${m}`);
      expect(report.made).toEqual(
        expect.arrayContaining(['y2027m06', 'y2027m07', 'y2027m08', 'y2027m09'].map((m) => `${report.table}_${m}`)),
      );
    }
    for (const table of [EVENTS_TABLE, CLICKS_TABLE]) {
      const parts = await monthlyPartitions(t.testDb.db, table);
      const cutoff = NOW.getTime() - 90 * 86_400_000;
      expect(parts.filter((p) => p.to.getTime() <= cutoff)).toEqual([]);
      expect(parts.map((p) => p.name)).toEqual(
        expect.arrayContaining(['y2027m03', 'y2027m05', 'y2027m09'].map((m) => `${table.table}_${m}`)),
      );
    }
    // The default partition's row older than the cutoff deleted; the far-future one kept.
    expect(events.deletedFromDefault).toBe(1);
    expect(await partitionOf('far-past')).toEqual([]);
    expect(await partitionOf('far-future')).toEqual(['interaction_events_default']);
    // August's row moved into the month made for it, counted as before (not twice, not lost).
    expect(await partitionOf('august')).toEqual(['interaction_events_y2027m08']);
    expect(
      await post('/interactions/counts-by-outcome', {
        interactionId: 'quiz',
        from: '2027-08-01T00:00:00.000Z',
        to: '2027-09-01T00:00:00.000Z',
      }),
    ).toEqual(augustBefore);

    // Every answer about the months kept is the one it was.
    expect(await keptAnswers()).toEqual(before);
    // The dropped months' events and clicks are gone from what reads them.
    const gone = await post('/interactions/query', {
      interactionId: 'quiz',
      from: '2026-12-01T00:00:00.000Z',
      to: '2027-03-01T00:00:00.000Z',
    });
    expect(gone).toEqual([]);
    // What the counters counted stays counted (docs/operations.md "Tables that age out").
    expect(await post('/interactions/counts-by-outcome', droppedWindow)).toEqual(countedBefore);
    const { rows } = await t.testDb.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM link_clicks WHERE collection_id = $1 AND clicked_at < '2027-03-01T00:00:00Z'`,
      [c.id],
    );
    expect(rows[0].n).toBe(0);

    // A second run finds nothing to do.
    const again = await t.app.services.interactions.partitions.maintain(NOW);
    expect(again).toEqual({ table: 'interaction_events', made: [], dropped: [], deletedFromDefault: 0, postponed: [] });
  });

  it('drops nothing without a retention (the default)', async () => {
    const other = await createTestApp();
    try {
      await makeMonths(other.testDb.db, EVENTS_TABLE, new Date('2020-01-01T00:00:00Z'), 1);
      const report = await other.app.services.interactions.partitions.maintain(NOW);
      expect(report.dropped).toEqual([]);
      expect(report.deletedFromDefault).toBe(0);
      expect((await monthlyPartitions(other.testDb.db, EVENTS_TABLE)).map((p) => p.name)).toContain(
        'interaction_events_y2020m01',
      );
    } finally {
      await other.close();
    }
  });
});

describe.skipIf(!onPostgres)('the upkeep behind a long query (PostgreSQL)', () => {
  it('gives way when the table is held, and does it on the next run', async () => {
    const testDb = await createTestDb();
    const holder = new pg.Client({ connectionString: testDb.url });
    await holder.connect();
    try {
      const month = new Date('2031-01-01T00:00:00Z');
      // A long reader: its lock conflicts with the exclusive one a new partition needs.
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE interaction_events IN ACCESS SHARE MODE');
      expect(await makeMonths(testDb.db, EVENTS_TABLE, month, 1)).toEqual({
        made: [],
        postponed: ['make interaction_events 2031-01'],
      });
      await holder.query('COMMIT');
      expect(await makeMonths(testDb.db, EVENTS_TABLE, month, 1)).toEqual({
        made: ['interaction_events_y2031m01'],
        postponed: [],
      });
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE interaction_events IN ACCESS SHARE MODE');
      const held = await dropMonthsBefore(testDb.db, EVENTS_TABLE, new Date('2031-02-01T00:00:00Z'));
      expect(held.postponed).toContain('drop interaction_events_y2031m01');
      await holder.query('COMMIT');
      const done = await dropMonthsBefore(testDb.db, EVENTS_TABLE, new Date('2031-02-01T00:00:00Z'));
      expect(done.dropped).toContain('interaction_events_y2031m01');
    } finally {
      await holder.end();
      await testDb.drop();
    }
  });
});
