-- Issue 30, part 4: tables that age out (docs/operations.md "Tables that age out",
-- docs/design/operations.md "Monthly partitions"). interaction_events (0911) and link_clicks
-- (0912) become tables partitioned by month of their time column (UTC), with a DEFAULT
-- partition so that no insert fails for a time outside the months made. This file holds the one
-- structural step both the migrations and the upkeep (src/db/partitions.ts) take: making one
-- month's partition.
--
-- partition_month(parent, at): makes the partition `<parent>_yYYYYmMM` of the UTC month holding
-- `at`, in the parent's schema, unless it exists (then NULL; else its name). Rows of that month
-- already in the DEFAULT partition (an insert for a month not yet made) move into it: PostgreSQL
-- refuses a new partition whose range the default partition holds rows of. They move between
-- the partitions themselves, not through the parent, so the parent's statement triggers (the
-- interaction counters, latest, journey progress) do not fire: the rows are the same rows, and
-- what was counted stays counted. Years outside 1–9999 get no partition (their names would not
-- sort or parse); their rows stay in the default partition.
--
-- Locks: CREATE TABLE … PARTITION OF takes an ACCESS EXCLUSIVE lock on the parent for the rest
-- of the transaction (and on the default partition while it checks it holds no rows of the
-- month), so callers keep the transaction short and set lock_timeout (src/db/partitions.ts).
CREATE FUNCTION partition_month(parent text, at timestamptz) RETURNS text LANGUAGE plpgsql AS $fn$
DECLARE
  rel regclass := parent::regclass;
  nsp text;
  lo timestamptz := date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  hi timestamptz := (date_trunc('month', at AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
  name text;
  key text;
  def oid;
  moving boolean := false;
BEGIN
  IF NOT isfinite(at) OR extract(year FROM lo AT TIME ZONE 'UTC') NOT BETWEEN 1 AND 9999 THEN
    RETURN NULL;
  END IF;
  SELECT c.relnamespace::regnamespace::text, c.relname || to_char(lo AT TIME ZONE 'UTC', '"_y"YYYY"m"MM')
  INTO nsp, name FROM pg_class c WHERE c.oid = rel;
  IF to_regclass(format('%I.%I', nsp, name)) IS NOT NULL THEN
    RETURN NULL;
  END IF;
  SELECT a.attname, nullif(p.partdefid, 0) INTO key, def
  FROM pg_partitioned_table p JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
  WHERE p.partrelid = rel;
  IF key IS NULL THEN
    RAISE EXCEPTION '% is not a partitioned table', parent;
  END IF;
  IF def IS NOT NULL THEN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE %I >= %L AND %I < %L)', def::regclass, key, lo, key, hi)
    INTO moving;
  END IF;
  IF moving THEN
    -- Out of the default partition first (its check would refuse the new partition), kept in a
    -- temporary table until the partition exists.
    EXECUTE format('CREATE TEMP TABLE partition_moving ON COMMIT DROP AS SELECT * FROM %s WITH NO DATA', def::regclass);
    EXECUTE format(
      'WITH d AS (DELETE FROM %s WHERE %I >= %L AND %I < %L RETURNING *) INSERT INTO partition_moving SELECT * FROM d',
      def::regclass, key, lo, key, hi);
  END IF;
  EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s FOR VALUES FROM (%L) TO (%L)', nsp, name, rel, lo, hi);
  IF moving THEN
    -- OVERRIDING SYSTEM VALUE: on PostgreSQL 17 a partition shares its parent's identity column,
    -- whose kept values must stay (on 15 the partition's column is a plain one: no effect).
    EXECUTE format('INSERT INTO %I.%I OVERRIDING SYSTEM VALUE SELECT * FROM partition_moving', nsp, name);
    DROP TABLE partition_moving;
  END IF;
  RETURN name;
END
$fn$;
