-- Hourly rollup of interaction events by outcome, kept exact by statement-level triggers, so
-- counts-by-outcome over any window reads hours instead of events (see docs/interactions.md).
-- An outcome of '' stands for "no outcome" (the API refuses empty outcomes).
-- `slot` stripes each counter over 16 rows chosen by the writing connection, so concurrent
-- appends of one (type, hour, outcome) do not queue on one row lock until commit; reads sum
-- the slots.
CREATE TABLE interaction_counts_hourly (
  collection_id text NOT NULL,
  interaction_id text NOT NULL,
  hour timestamptz NOT NULL,
  app_id text NOT NULL,
  outcome text NOT NULL,
  slot smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (collection_id, interaction_id, hour, app_id, outcome, slot)
);
CREATE INDEX interaction_counts_hourly_time ON interaction_counts_hourly (collection_id, hour);

-- One upsert per statement, whatever its row count; rows are locked in key order so that two
-- statements touching the same hours cannot deadlock. Deleted events are not counted.
CREATE FUNCTION interaction_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  -- Each branch names only the transition tables its event has (DELETE has no new_rows).
  IF TG_OP = 'INSERT' THEN
    INSERT INTO interaction_counts_hourly AS c (collection_id, interaction_id, hour, app_id, outcome, slot, n)
    SELECT collection_id, interaction_id, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'),
           coalesce(app_id, ''), coalesce(outcome, ''), pg_backend_pid() % 16, count(*)
    FROM new_rows WHERE deleted_at IS NULL
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (collection_id, interaction_id, hour, app_id, outcome, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO interaction_counts_hourly AS c (collection_id, interaction_id, hour, app_id, outcome, slot, n)
    SELECT collection_id, interaction_id, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'),
           coalesce(app_id, ''), coalesce(outcome, ''), pg_backend_pid() % 16, sum(d)
    FROM (
      SELECT collection_id, interaction_id, occurred_at, app_id, outcome, -1 AS d FROM old_rows WHERE deleted_at IS NULL
      UNION ALL
      SELECT collection_id, interaction_id, occurred_at, app_id, outcome, 1 AS d FROM new_rows WHERE deleted_at IS NULL
    ) x
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(d) <> 0 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (collection_id, interaction_id, hour, app_id, outcome, slot) DO UPDATE SET n = c.n + excluded.n;
  ELSE
    INSERT INTO interaction_counts_hourly AS c (collection_id, interaction_id, hour, app_id, outcome, slot, n)
    SELECT collection_id, interaction_id, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'),
           coalesce(app_id, ''), coalesce(outcome, ''), pg_backend_pid() % 16, -count(*)
    FROM old_rows WHERE deleted_at IS NULL
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (collection_id, interaction_id, hour, app_id, outcome, slot) DO UPDATE SET n = c.n + excluded.n;
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER interaction_counts_insert AFTER INSERT ON interaction_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_counts_apply();
CREATE TRIGGER interaction_counts_update AFTER UPDATE ON interaction_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_counts_apply();
CREATE TRIGGER interaction_counts_delete AFTER DELETE ON interaction_events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_counts_apply();
