/**
 * Upkeep of tables partitioned by month (migrations 0910–0912; docs/operations.md "Tables that
 * age out", docs/design/operations.md "Monthly partitions"): SQL about structure, so here and
 * not in a module. The owning module runs `maintainMonthly` for its table from a system
 * schedule (interactions: interaction_events, links: link_clicks).
 *
 * A table's partitions:
 * - `<table>_yYYYYmMM`: the UTC month it names, [first instant, first instant of the next);
 *   made by partition_month (migration 0910), which moves that month's rows out of the default
 *   partition where there are any;
 * - `<table>_default`: every time no monthly partition covers, so no insert ever fails (a far
 *   past or future time, a month not yet made).
 *
 * Retention (off unless days are given) drops a monthly partition only when its whole month
 * lies before the cutoff (DROP TABLE: no row is read, no dead row is left for vacuum), and
 * deletes the default partition's rows older than the cutoff a bounded batch at a time.
 * Both act on the partitions themselves, so the parent's statement triggers do not fire: what
 * the service maintains from the rows (counters, latest, progress, rollups) stays as counted.
 *
 * Locks: making or dropping a partition takes an ACCESS EXCLUSIVE lock on the parent, for an
 * instant once granted. Each runs in its own short transaction under LOCK_TIMEOUT: behind a
 * long query it gives up rather than queue every reader and writer behind itself, and the
 * next run does it.
 */
import type { Db, Tx } from './client.ts';

/** The months made ahead of the current one (which is always made). */
export const MONTHS_AHEAD = 3;
/** How long a structural change waits for the parent's lock before leaving it to the next run. */
const LOCK_TIMEOUT = '1s';
/** Rows of the default partition deleted per statement, and statements per run at most. */
const DEFAULT_BATCH = 10_000;
const DEFAULT_BATCHES = 100;

export interface MonthlyTable {
  /** The partitioned table; a plain lower-case identifier. */
  table: string;
  /** Its partition key: the rows' time. */
  column: string;
}

export interface MonthPartition {
  name: string;
  /** Schema-qualified and quoted, for DDL. */
  qualified: string;
  from: Date;
  to: Date;
}

export interface UpkeepReport {
  table: string;
  /** Partitions made this run. */
  made: string[];
  /** Partitions dropped this run (their whole month before the cutoff). */
  dropped: string[];
  /** Rows of the default partition older than the cutoff, deleted this run. */
  deletedFromDefault: number;
  /** Changes left to the next run: their lock was not granted within LOCK_TIMEOUT. */
  postponed: string[];
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function checked(t: MonthlyTable): MonthlyTable {
  // Interpolated into DDL and DML (identifiers take no parameters): only plain names pass.
  if (!IDENTIFIER.test(t.table) || !IDENTIFIER.test(t.column)) throw new Error(`bad partitioned table ${t.table}`);
  return t;
}

/** The first instant (UTC) of the month holding `at`, moved by `k` months. */
export function monthStart(at: Date, k = 0): Date {
  // setUTCFullYear, not Date.UTC: the latter reads years 0–99 as 1900–1999.
  const d = new Date(0);
  d.setUTCFullYear(at.getUTCFullYear(), at.getUTCMonth() + k, 1);
  return d;
}

const lockNotGranted = (err: unknown) => (err as { code?: string }).code === '55P03';

/** Runs a structural change in its own transaction under LOCK_TIMEOUT; false if the lock was not granted. */
async function briefly(db: Db, fn: (tx: Tx) => Promise<void>): Promise<boolean> {
  try {
    await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await fn(tx);
    });
    return true;
  } catch (err) {
    if (lockNotGranted(err)) return false;
    throw err;
  }
}

/** The table's monthly partitions, oldest first (the default partition is not among them). */
export async function monthlyPartitions(db: Db, t: MonthlyTable): Promise<MonthPartition[]> {
  const { table } = checked(t);
  const { rows } = await db.query<{ name: string; qualified: string }>(
    `SELECT c.relname AS name, format('%I.%I', n.nspname, c.relname) AS qualified
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE i.inhparent = $1::regclass ORDER BY c.relname`,
    [table],
  );
  const pattern = new RegExp(`^${table}_y(\\d{4})m(\\d{2})$`);
  const out: MonthPartition[] = [];
  for (const r of rows) {
    const m = pattern.exec(r.name);
    if (!m) continue;
    const from = new Date(0);
    from.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, 1);
    out.push({ name: r.name, qualified: r.qualified, from, to: monthStart(from, 1) });
  }
  return out;
}

/** Makes the partitions of the `months` months from the one holding `from`; answers those made. */
export async function makeMonths(
  db: Db,
  t: MonthlyTable,
  from: Date,
  months: number,
): Promise<{ made: string[]; postponed: string[] }> {
  const { table } = checked(t);
  const made: string[] = [];
  const postponed: string[] = [];
  for (let k = 0; k < months; k++) {
    const at = monthStart(from, k);
    const ok = await briefly(db, async (tx) => {
      const { rows } = await tx.query<{ name: string | null }>('SELECT partition_month($1, $2) AS name', [table, at]);
      if (rows[0].name) made.push(rows[0].name);
    });
    if (!ok) postponed.push(`make ${table} ${at.toISOString().slice(0, 7)}`);
  }
  return { made, postponed };
}

/** Drops the monthly partitions whose whole month lies before `cutoff`; answers those dropped. */
export async function dropMonthsBefore(
  db: Db,
  t: MonthlyTable,
  cutoff: Date,
): Promise<{ dropped: string[]; postponed: string[] }> {
  const dropped: string[] = [];
  const postponed: string[] = [];
  for (const p of await monthlyPartitions(db, t)) {
    if (p.to.getTime() > cutoff.getTime()) continue;
    const ok = await briefly(db, async (tx) => {
      await tx.query(`DROP TABLE ${p.qualified}`);
    });
    if (ok) dropped.push(p.name);
    else postponed.push(`drop ${p.name}`);
  }
  return { dropped, postponed };
}

/**
 * Deletes rows older than `cutoff` from the default partition, `batch` rows per statement
 * (short row locks, small WAL bursts), `batches` statements at most (the next run goes on).
 */
export async function deleteFromDefaultBefore(
  db: Db,
  t: MonthlyTable,
  cutoff: Date,
  batch = DEFAULT_BATCH,
  batches = DEFAULT_BATCHES,
): Promise<number> {
  const { table, column } = checked(t);
  const { rows } = await db.query<{ name: string | null }>(
    `SELECT nullif(partdefid, 0)::regclass::text AS name FROM pg_partitioned_table WHERE partrelid = $1::regclass`,
    [table],
  );
  const def = rows[0]?.name;
  if (!def) return 0;
  let deleted = 0;
  for (let i = 0; i < batches; i++) {
    // By ctid, so each statement finds its rows once (a TID scan), whatever indexes there are.
    const { rowCount } = await db.query(
      `DELETE FROM ${def} WHERE ctid = ANY (ARRAY(SELECT ctid FROM ${def} WHERE ${column} < $1 LIMIT $2))`,
      [cutoff, batch],
    );
    deleted += rowCount;
    if (rowCount < batch) break;
  }
  return deleted;
}

/**
 * One run of a table's upkeep: the current month and MONTHS_AHEAD more made; with
 * `retentionDays` (> 0), the months wholly before now − retentionDays dropped and the default
 * partition's older rows deleted. Idempotent: a run cut off leaves the rest to the next.
 */
export async function maintainMonthly(
  db: Db,
  t: MonthlyTable & { retentionDays: number; now?: Date },
): Promise<UpkeepReport> {
  const now = t.now ?? new Date();
  const ahead = await makeMonths(db, t, now, MONTHS_AHEAD + 1);
  const report: UpkeepReport = {
    table: t.table,
    made: ahead.made,
    dropped: [],
    deletedFromDefault: 0,
    postponed: ahead.postponed,
  };
  if (t.retentionDays > 0) {
    const cutoff = new Date(now.getTime() - t.retentionDays * 86_400_000);
    const old = await dropMonthsBefore(db, t, cutoff);
    report.dropped = old.dropped;
    report.postponed.push(...old.postponed);
    report.deletedFromDefault = await deleteFromDefaultBefore(db, t, cutoff);
  }
  return report;
}
