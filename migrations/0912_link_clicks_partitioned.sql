-- link_clicks partitioned by month of clicked_at (UTC), every row kept: as 0911 does for
-- interaction_events (see there and docs/design/operations.md "Monthly partitions").
--
-- - The primary key (collection_id, link_id, clicked_at, id) of 0401 already holds the
--   partition key: unchanged.
-- - The unique index on click ids (0600) must hold it too: (collection_id, click_id,
--   clicked_at). A click id is 128 random bits made by the redirect for that one click
--   (links attribution.ts), so its uniqueness never rested on the index; the index still serves
--   every lookup by click id (attribution, journeys' link steps), which lead with the same
--   columns.
-- - No trigger hangs on link_clicks (the click batch keeps the rollup in its own transaction;
--   links' statement trigger of 0401 deletes from link_clicks by name).
-- - The identity continues where the old table's stopped.
-- - The columns are the old table's (LIKE), so a column added before this (0630's `route`)
--   comes along.
ALTER TABLE link_clicks RENAME TO link_clicks_unpartitioned;
ALTER TABLE link_clicks_unpartitioned RENAME CONSTRAINT link_clicks_pkey TO link_clicks_unpartitioned_pkey;
ALTER SEQUENCE link_clicks_id_seq RENAME TO link_clicks_unpartitioned_id_seq;
DROP INDEX link_clicks_click_id;

-- The old table's columns, in its order, whatever migrations before this one added (LIKE):
-- types, NOT NULL, defaults, the identity's options. Not its indexes: the key must change.
CREATE TABLE link_clicks (
  LIKE link_clicks_unpartitioned INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS
    INCLUDING STORAGE,
  PRIMARY KEY (collection_id, link_id, clicked_at, id)
) PARTITION BY RANGE (clicked_at);
CREATE TABLE link_clicks_default PARTITION OF link_clicks DEFAULT;

DO $do$
DECLARE
  m timestamptz;
  next_id bigint;
BEGIN
  FOR m IN
    SELECT DISTINCT date_trunc('month', clicked_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    FROM link_clicks_unpartitioned WHERE isfinite(clicked_at)
    UNION
    SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => k)) AT TIME ZONE 'UTC'
    FROM generate_series(0, 3) AS k
    ORDER BY 1
  LOOP
    PERFORM partition_month('link_clicks', m);
  END LOOP;
  -- Same columns in the same order (LIKE above), ids as they were.
  INSERT INTO link_clicks OVERRIDING SYSTEM VALUE SELECT * FROM link_clicks_unpartitioned;
  SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END INTO next_id
  FROM link_clicks_unpartitioned_id_seq;
  EXECUTE format('ALTER TABLE link_clicks ALTER COLUMN id RESTART WITH %s', next_id);
END
$do$;
DROP TABLE link_clicks_unpartitioned;

CREATE UNIQUE INDEX link_clicks_click_id ON link_clicks (collection_id, click_id, clicked_at) WHERE click_id IS NOT NULL;

ANALYZE link_clicks;
