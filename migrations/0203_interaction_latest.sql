-- Each identity's latest event per interaction, kept exact by triggers, so that counts-by-outcome
-- with dedupeLatest reads counters instead of sorting every event of the window (10,000,000
-- events: no answer within 5 s before, see docs/interactions.md "dedupeLatest").
--
-- interaction_latest holds, for every (interaction, idField, id) that has a live (not deleted)
-- event, the event that wins `DISTINCT ON (interaction_id, <id>) ORDER BY occurred_at DESC, id
-- DESC`: the definition the event-scanning query uses. id_field is 'userId' or 'contactId'.
-- interaction_latest_counts counts those rows by the hour of their event and their outcome
-- ('' for none), striped over 16 slots like interaction_counts_hourly, so that concurrent appends
-- do not queue on one counter row.
--
-- Maintenance:
-- - INSERT: an upsert that only moves forward ((occurred_at, id) greater), so concurrent inserts
--   for one identity need no other lock: the later writer re-checks against the committed row.
--   The row remembers the values it replaced (prev_*), so one statement can take the replaced
--   event out of the counters and put the new one in.
-- - UPDATE and DELETE (an event's outcome changed, an event deleted or restored): the latest may
--   move backwards, so each touched identity's row is locked (a placeholder is inserted first
--   when it has none), then recomputed from the events by a later statement, whose snapshot
--   sees every transaction that held the lock before.
CREATE TABLE interaction_latest (
  collection_id text NOT NULL,
  interaction_id text NOT NULL,
  id_field text NOT NULL,
  rid text NOT NULL,
  -- interaction_events.id of the latest event; 0 only in a placeholder inside a transaction.
  event_row bigint NOT NULL,
  occurred_at timestamptz NOT NULL,
  outcome text,
  prev_occurred_at timestamptz,
  prev_outcome text,
  PRIMARY KEY (collection_id, interaction_id, id_field, rid)
);

CREATE TABLE interaction_latest_counts (
  collection_id text NOT NULL,
  interaction_id text NOT NULL,
  id_field text NOT NULL,
  hour timestamptz NOT NULL,
  outcome text NOT NULL,
  slot smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (collection_id, id_field, interaction_id, hour, outcome, slot)
);

CREATE FUNCTION interaction_latest_insert() RETURNS trigger LANGUAGE plpgsql
  -- Row estimates of jsonb_to_recordset and transition tables are guesses; JIT compiling
  -- these small statements on such guesses costs 400 ms each.
  SET jit = off AS $fn$
BEGIN
  WITH cand AS (
    SELECT DISTINCT ON (r.collection_id, r.interaction_id, v.f, v.rid)
      r.collection_id, r.interaction_id, v.f, v.rid, r.id, r.occurred_at, r.outcome
    FROM new_rows r, LATERAL (VALUES ('userId', r.user_id), ('contactId', r.contact_id)) AS v(f, rid)
    WHERE v.rid IS NOT NULL AND r.deleted_at IS NULL
    ORDER BY r.collection_id, r.interaction_id, v.f, v.rid, r.occurred_at DESC, r.id DESC
  ), up AS (
    INSERT INTO interaction_latest AS l (collection_id, interaction_id, id_field, rid, event_row, occurred_at, outcome)
    SELECT collection_id, interaction_id, f, rid, id, occurred_at, outcome FROM cand ORDER BY 1, 2, 3, 4
    ON CONFLICT (collection_id, interaction_id, id_field, rid) DO UPDATE
      SET event_row = excluded.event_row, occurred_at = excluded.occurred_at, outcome = excluded.outcome,
          prev_occurred_at = l.occurred_at, prev_outcome = l.outcome
      WHERE (excluded.occurred_at, excluded.event_row) > (l.occurred_at, l.event_row)
    RETURNING l.collection_id, l.interaction_id, l.id_field, l.occurred_at, l.outcome,
      l.prev_occurred_at, l.prev_outcome, (l.xmax = 0) AS fresh
  )
  INSERT INTO interaction_latest_counts AS c (collection_id, interaction_id, id_field, hour, outcome, slot, n)
  SELECT collection_id, interaction_id, id_field, hour, o, pg_backend_pid() % 16, sum(n) FROM (
    SELECT collection_id, interaction_id, id_field, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00') AS hour,
      coalesce(outcome, '') AS o, 1 AS n FROM up
    UNION ALL
    SELECT collection_id, interaction_id, id_field, date_bin('1 hour', prev_occurred_at, timestamptz '2000-01-01 00:00:00+00'),
      coalesce(prev_outcome, ''), -1 FROM up WHERE NOT fresh
  ) x
  GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0 ORDER BY 1, 3, 2, 4, 5
  ON CONFLICT (collection_id, id_field, interaction_id, hour, outcome, slot) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END
$fn$;

-- Recomputes the latest rows of the identities in `keys` (jsonb array of {c, i, f, rid}) from the
-- events. Called by the UPDATE/DELETE trigger and by the rebuild; see the header for the locking.
CREATE FUNCTION interaction_latest_refresh(keys jsonb) RETURNS void LANGUAGE plpgsql
  -- Row estimates of jsonb_to_recordset and transition tables are guesses; JIT compiling
  -- these small statements on such guesses costs 400 ms each.
  SET jit = off AS $fn$
BEGIN
  -- 1. Lock every key's row, inserting a placeholder where there is none, in one pass in key
  -- order (the insert trigger's order too). DO UPDATE, not DO NOTHING and a later FOR UPDATE:
  -- it waits for a row another transaction holds and, when that one deleted the row, inserts
  -- the placeholder instead, so the key is always locked. (DO NOTHING would pass over a row that
  -- is only locked, the FOR UPDATE would then skip it once deleted, and the counters below
  -- would count a key without a row.) The no-op SET changes no indexed column: a HOT update.
  INSERT INTO interaction_latest AS l (collection_id, interaction_id, id_field, rid, event_row, occurred_at)
  SELECT DISTINCT k.c, k.i, k.f, k.rid, 0, '-infinity'::timestamptz
  FROM jsonb_to_recordset(keys) AS k(c text, i text, f text, rid text) ORDER BY 1, 2, 3, 4
  ON CONFLICT (collection_id, interaction_id, id_field, rid) DO UPDATE SET event_row = l.event_row;
  -- 2. A new statement, so a new snapshot: recompute, write, and count the difference.
  WITH k AS (
    SELECT DISTINCT * FROM jsonb_to_recordset(keys) AS k(c text, i text, f text, rid text)
  ), cur AS (
    SELECT l.* FROM interaction_latest l JOIN k
      ON l.collection_id = k.c AND l.interaction_id = k.i AND l.id_field = k.f AND l.rid = k.rid
  ), calc AS (
    SELECT k.c, k.i, k.f, k.rid, n.id, n.occurred_at, n.outcome
    FROM k LEFT JOIN LATERAL (
      SELECT * FROM (
        SELECT e.id, e.occurred_at, e.outcome FROM interaction_events e
        WHERE k.f = 'userId' AND e.collection_id = k.c AND e.user_id = k.rid AND e.interaction_id = k.i
          AND e.deleted_at IS NULL
        UNION ALL
        SELECT e.id, e.occurred_at, e.outcome FROM interaction_events e
        WHERE k.f = 'contactId' AND e.collection_id = k.c AND e.contact_id = k.rid AND e.interaction_id = k.i
          AND e.deleted_at IS NULL
      ) e ORDER BY e.occurred_at DESC, e.id DESC LIMIT 1
    ) n ON true
  ), upd AS (
    UPDATE interaction_latest l
    SET event_row = calc.id, occurred_at = calc.occurred_at, outcome = calc.outcome,
        prev_occurred_at = NULL, prev_outcome = NULL
    FROM calc
    WHERE calc.id IS NOT NULL AND l.collection_id = calc.c AND l.interaction_id = calc.i
      AND l.id_field = calc.f AND l.rid = calc.rid
  ), del AS (
    DELETE FROM interaction_latest l USING calc
    WHERE calc.id IS NULL AND l.collection_id = calc.c AND l.interaction_id = calc.i
      AND l.id_field = calc.f AND l.rid = calc.rid
  )
  INSERT INTO interaction_latest_counts AS c (collection_id, interaction_id, id_field, hour, outcome, slot, n)
  SELECT collection_id, interaction_id, id_field, hour, o, pg_backend_pid() % 16, sum(n) FROM (
    SELECT collection_id, interaction_id, id_field, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00') AS hour,
      coalesce(outcome, '') AS o, -1 AS n FROM cur WHERE event_row <> 0
    UNION ALL
    SELECT c, i, f, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'), coalesce(outcome, ''), 1 FROM calc WHERE id IS NOT NULL
  ) x
  GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0 ORDER BY 1, 3, 2, 4, 5
  ON CONFLICT (collection_id, id_field, interaction_id, hour, outcome, slot) DO UPDATE SET n = c.n + excluded.n;
END
$fn$;

CREATE FUNCTION interaction_latest_change() RETURNS trigger LANGUAGE plpgsql
  -- Row estimates of jsonb_to_recordset and transition tables are guesses; JIT compiling
  -- these small statements on such guesses costs 400 ms each.
  SET jit = off AS $fn$
DECLARE
  keys jsonb;
BEGIN
  -- Each branch names only the transition tables its event has (DELETE has no new_rows).
  IF TG_OP = 'UPDATE' THEN
    SELECT jsonb_agg(DISTINCT jsonb_build_object('c', r.collection_id, 'i', r.interaction_id, 'f', v.f, 'rid', v.rid))
    INTO keys
    FROM (SELECT * FROM old_rows UNION ALL SELECT * FROM new_rows) r,
      LATERAL (VALUES ('userId', r.user_id), ('contactId', r.contact_id)) AS v(f, rid)
    WHERE v.rid IS NOT NULL;
  ELSE
    SELECT jsonb_agg(DISTINCT jsonb_build_object('c', r.collection_id, 'i', r.interaction_id, 'f', v.f, 'rid', v.rid))
    INTO keys
    FROM old_rows r, LATERAL (VALUES ('userId', r.user_id), ('contactId', r.contact_id)) AS v(f, rid)
    WHERE v.rid IS NOT NULL;
  END IF;
  IF keys IS NOT NULL THEN PERFORM interaction_latest_refresh(keys); END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER interaction_latest_insert AFTER INSERT ON interaction_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_latest_insert();
CREATE TRIGGER interaction_latest_update AFTER UPDATE ON interaction_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_latest_change();
CREATE TRIGGER interaction_latest_delete AFTER DELETE ON interaction_events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_latest_change();

-- The events already stored: their latest rows and counters, as the triggers would have made
-- them (a sort of the whole table, once; in byte order, the cheapest comparison, which gives
-- the same groups). The time index is built after the rows are in: cheaper than keeping it
-- up to date row by row in another order than the rows arrive.
INSERT INTO interaction_latest (collection_id, interaction_id, id_field, rid, event_row, occurred_at, outcome)
SELECT DISTINCT ON (e.collection_id COLLATE "C", e.interaction_id COLLATE "C", v.f COLLATE "C", v.rid COLLATE "C")
  e.collection_id, e.interaction_id, v.f, v.rid, e.id, e.occurred_at, e.outcome
FROM interaction_events e, LATERAL (VALUES ('userId', e.user_id), ('contactId', e.contact_id)) AS v(f, rid)
WHERE e.deleted_at IS NULL AND v.rid IS NOT NULL
ORDER BY e.collection_id COLLATE "C", e.interaction_id COLLATE "C", v.f COLLATE "C", v.rid COLLATE "C",
  e.occurred_at DESC, e.id DESC;
-- The part-hour at a window's start, and whether anything lies at or after a window's end.
CREATE INDEX interaction_latest_time ON interaction_latest (collection_id, id_field, interaction_id, occurred_at) INCLUDE (outcome);
-- Statistics now, not when autovacuum gets to it: without them the planner scans the table.
ANALYZE interaction_latest;
INSERT INTO interaction_latest_counts (collection_id, interaction_id, id_field, hour, outcome, slot, n)
SELECT collection_id, interaction_id, id_field, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'),
  coalesce(outcome, ''), 0, count(*)
FROM interaction_latest GROUP BY 1, 2, 3, 4, 5;
ANALYZE interaction_latest_counts;
