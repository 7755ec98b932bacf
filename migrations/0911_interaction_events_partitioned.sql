-- interaction_events partitioned by month of occurred_at (UTC), every row kept (issue 30 part 4;
-- docs/design/operations.md "Monthly partitions"). A table cannot be turned into a partitioned
-- one in place: the old table is renamed, a partitioned one of the same name and columns is
-- made, the rows are copied with their ids, and the old table is dropped, all in the migration's
-- one transaction (a failure leaves the table as it was).
--
-- What changes and why:
-- - The columns are the old table's (LIKE): whatever an earlier migration added comes along.
-- - The primary key must include the partition key: (collection_id, id, occurred_at). Ids still
--   come from one identity sequence, so (collection_id, id) stays unique in practice; nothing
--   relies on the database refusing a duplicate id (no foreign key, no ON CONFLICT names it:
--   one logical event's versions share event_id, serialised by an advisory lock,
--   interactions.events.repository.ts). A lookup by id probes each partition's key index.
-- - The identity continues where the old table's stopped (RESTART WITH its next value).
-- - Indexes and triggers are made after the copy: one sorted build per index instead of the
--   rows inserted one by one, and the triggers must not count the copied rows a second time
--   (the counters, latest and progress they keep already count them).
-- - Partitions: one per UTC month holding a row (partition_month, 0910), and the current month
--   and the next three; rows of other times (a far past or future, ±infinity) go to the
--   DEFAULT partition. The upkeep (interactions.maintainPartitions) makes the months ahead.
ALTER TABLE interaction_events RENAME TO interaction_events_unpartitioned;
ALTER TABLE interaction_events_unpartitioned RENAME CONSTRAINT interaction_events_pkey TO interaction_events_unpartitioned_pkey;
ALTER SEQUENCE interaction_events_id_seq RENAME TO interaction_events_unpartitioned_id_seq;
DROP INDEX interaction_events_by_interaction, interaction_events_by_time, interaction_events_by_user,
  interaction_events_by_contact, interaction_events_by_anon, interaction_events_by_journey,
  interaction_events_by_event_id, interaction_events_by_click;

-- The old table's columns, in its order, whatever migrations before this one added (LIKE):
-- types, NOT NULL, defaults, the identity's options. Not its indexes: the key must change.
CREATE TABLE interaction_events (
  LIKE interaction_events_unpartitioned INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS
    INCLUDING STORAGE,
  PRIMARY KEY (collection_id, id, occurred_at)
) PARTITION BY RANGE (occurred_at);
CREATE TABLE interaction_events_default PARTITION OF interaction_events DEFAULT;

DO $do$
DECLARE
  m timestamptz;
  next_id bigint;
BEGIN
  FOR m IN
    SELECT DISTINCT date_trunc('month', occurred_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    FROM interaction_events_unpartitioned WHERE isfinite(occurred_at)
    UNION
    SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => k)) AT TIME ZONE 'UTC'
    FROM generate_series(0, 3) AS k
    ORDER BY 1
  LOOP
    PERFORM partition_month('interaction_events', m);
  END LOOP;
  -- Same columns in the same order (LIKE above), ids as they were.
  INSERT INTO interaction_events OVERRIDING SYSTEM VALUE SELECT * FROM interaction_events_unpartitioned;
  SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END INTO next_id
  FROM interaction_events_unpartitioned_id_seq;
  EXECUTE format('ALTER TABLE interaction_events ALTER COLUMN id RESTART WITH %s', next_id);
END
$do$;
DROP TABLE interaction_events_unpartitioned;

-- The indexes of 0200 and 0600, unchanged; on the parent, so every partition (made now or by the
-- upkeep) has them.
CREATE INDEX interaction_events_by_interaction
  ON interaction_events (collection_id, interaction_id, occurred_at) INCLUDE (outcome, user_id, contact_id, deleted_at, id);
CREATE INDEX interaction_events_by_time ON interaction_events (collection_id, occurred_at);
CREATE INDEX interaction_events_by_user
  ON interaction_events (collection_id, user_id, interaction_id, occurred_at) WHERE user_id IS NOT NULL;
CREATE INDEX interaction_events_by_contact
  ON interaction_events (collection_id, contact_id, interaction_id, occurred_at) WHERE contact_id IS NOT NULL;
CREATE INDEX interaction_events_by_anon
  ON interaction_events (collection_id, anon_id, interaction_id, occurred_at) WHERE anon_id IS NOT NULL;
CREATE INDEX interaction_events_by_journey
  ON interaction_events (collection_id, journey_id, occurred_at) INCLUDE (user_id, contact_id, deleted_at)
  WHERE journey_id IS NOT NULL;
CREATE INDEX interaction_events_by_event_id ON interaction_events (collection_id, event_id, occurred_at);
CREATE INDEX interaction_events_by_click
  ON interaction_events (collection_id, click_id, occurred_at) INCLUDE (interaction_id, outcome, deleted_at)
  WHERE click_id IS NOT NULL;

-- The statement triggers of 0200, 0203 and 0204, on the parent: a statement on
-- interaction_events fires them once whatever partitions its rows are in (an update that moves
-- a row to another month's partition is still an UPDATE to them). A statement naming a
-- partition itself fires none: only the upkeep does that (partition_month's move, retention).
CREATE TRIGGER interaction_counts_insert AFTER INSERT ON interaction_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_counts_apply();
CREATE TRIGGER interaction_counts_update AFTER UPDATE ON interaction_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_counts_apply();
CREATE TRIGGER interaction_counts_delete AFTER DELETE ON interaction_events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_counts_apply();
CREATE TRIGGER interaction_latest_insert AFTER INSERT ON interaction_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_latest_insert();
CREATE TRIGGER interaction_latest_update AFTER UPDATE ON interaction_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_latest_change();
CREATE TRIGGER interaction_latest_delete AFTER DELETE ON interaction_events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_latest_change();
CREATE TRIGGER journey_progress_insert AFTER INSERT ON interaction_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION journey_progress_change();
CREATE TRIGGER journey_progress_update AFTER UPDATE ON interaction_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION journey_progress_change();
CREATE TRIGGER journey_progress_delete AFTER DELETE ON interaction_events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION journey_progress_change();

-- Statistics now: without them the planner guesses on a table of millions of rows.
ANALYZE interaction_events;
