-- Each interaction's count of recorded events, for `interaction.milestone` (docs/interactions.md,
-- Milestones). One row per interaction, raised by the service in the transaction that stores
-- the events (`UPDATE ... RETURNING n`): the row lock makes concurrent writers take turns, so
-- each sees the count before and after its own events exactly and every threshold is crossed
-- by exactly one transaction. It counts events recorded (appends and submits, each version
-- row); deleting or restoring an event does not change it, so a milestone is never sent twice.
CREATE TABLE interaction_totals (
  collection_id text NOT NULL,
  interaction_id text NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (collection_id, interaction_id)
);

-- Interactions that already have events start from their count (the hourly rollup counts the
-- live ones; deleted events, which it leaves out, are left out here too), so that their next
-- event does not announce thresholds passed long ago.
INSERT INTO interaction_totals (collection_id, interaction_id, n)
SELECT collection_id, interaction_id, sum(n) FROM interaction_counts_hourly
GROUP BY collection_id, interaction_id HAVING sum(n) > 0;
