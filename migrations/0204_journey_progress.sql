-- Each recipient's progress through a journey, kept exact by triggers on interaction_events, so
-- that a funnel report, stats or step recipients without a period read counters and one index
-- instead of joining every entrant's events (docs/journeys.md "Maintained progress").
--
-- journey_progress_state: per journey, the steps its progress follows ([{interactionId,
--   outcome}] in order: the journey's own mappings, written by the journeys service; null when
--   a step has none and nothing is kept) and a version that grows whenever they change. `ready`
--   once the rebuild job has gone through every entrant of that version; until then queries
--   scan the events. Rows of older versions are removed by that job.
-- journey_progress: per recipient (id_field 'userId' or 'contactId', rid), its entry (its first
--   live event carrying journey_id) and the completion times of the steps it completed in
--   order (completed_at[k] = first mapped event at or after entering step k, entering step k+1).
--   The same definition the event-scanning funnel uses, without a period.
-- journey_progress_counts: per version, idField and step, the recipients that entered and
--   completed it and the sum of their seconds to complete (numeric: exact under + and −),
--   striped over 16 slots like the other counters.
--
-- Locking is as for interaction_latest (0203): a recipient's row is locked (a placeholder is
-- inserted first where there is none) before a later statement recomputes it, so two
-- transactions touching one recipient recompute one after the other, each seeing the other's
-- events. The rebuild goes through the same function, a few thousand recipients at a time.
CREATE TABLE journey_progress_state (
  collection_id text NOT NULL,
  journey_id text NOT NULL,
  version integer NOT NULL,
  steps jsonb,
  ready boolean NOT NULL DEFAULT false,
  PRIMARY KEY (collection_id, journey_id),
  FOREIGN KEY (collection_id, journey_id) REFERENCES journeys (collection_id, id) ON DELETE CASCADE
);

CREATE TABLE journey_progress (
  collection_id text NOT NULL,
  journey_id text NOT NULL,
  id_field text NOT NULL,
  rid text NOT NULL,
  -- The state's version the row follows; -1 only in a placeholder inside a transaction.
  version integer NOT NULL,
  n_steps smallint NOT NULL,
  entered_at timestamptz NOT NULL,
  completed_at timestamptz[] NOT NULL,
  PRIMARY KEY (collection_id, journey_id, id_field, rid)
);
-- Recipients of a step by how far they got (pending = exactly k steps completed), in id order.
CREATE INDEX journey_progress_reached
  ON journey_progress (collection_id, journey_id, id_field, version, (cardinality(completed_at)), rid);

CREATE TABLE journey_progress_counts (
  collection_id text NOT NULL,
  journey_id text NOT NULL,
  version integer NOT NULL,
  id_field text NOT NULL,
  step smallint NOT NULL,
  slot smallint NOT NULL,
  entered bigint NOT NULL,
  completed bigint NOT NULL,
  seconds numeric NOT NULL,
  PRIMARY KEY (collection_id, journey_id, version, id_field, step, slot)
);

-- Recipients touched while a journey's progress was being rebuilt (state not ready): the
-- rebuild's bulk statement reads a snapshot and may write a row older than a trigger's, so it
-- recomputes these one by one after it.
CREATE TABLE journey_progress_dirty (
  collection_id text NOT NULL,
  journey_id text NOT NULL,
  id_field text NOT NULL,
  rid text NOT NULL,
  PRIMARY KEY (collection_id, journey_id, id_field, rid)
);

-- What one progress row adds to its version's counters: per step s it entered (s = 1, or step
-- s − 1 completed), 1 entered, 1 if completed, and the seconds completing it took.
CREATE FUNCTION journey_progress_contrib(entered_at timestamptz, done timestamptz[], n_steps smallint)
RETURNS TABLE (step smallint, entered integer, completed integer, seconds numeric)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT s::smallint, 1, (s <= cardinality(done))::int,
    CASE WHEN s <= cardinality(done)
      THEN extract(epoch FROM done[s] - CASE WHEN s = 1 THEN entered_at ELSE done[s - 1] END) ELSE 0 END
  FROM generate_series(1, least(cardinality(done) + 1, n_steps)) AS s
$fn$;

-- Recomputes the progress of the recipients in `keys` (jsonb array of {c, j, f, rid}) in the
-- journeys' current version; a recipient without a live entry loses its row.
CREATE FUNCTION journey_progress_refresh(keys jsonb) RETURNS void LANGUAGE plpgsql
  -- Row estimates of jsonb_to_recordset and transition tables are guesses; JIT compiling
  -- these small statements on such guesses costs 400 ms each.
  SET jit = off AS $fn$
BEGIN
  -- 1. Lock every recipient's row, inserting a placeholder where there is none, in one pass in
  -- key order. DO UPDATE waits for a row another transaction holds and inserts the placeholder
  -- when that one deleted it, so every key ends up locked (see interaction_latest_refresh in
  -- 0203 for why DO NOTHING and a FOR UPDATE could lose one).
  INSERT INTO journey_progress AS p (collection_id, journey_id, id_field, rid, version, n_steps, entered_at, completed_at)
  SELECT DISTINCT k.c, k.j, k.f, k.rid, -1, 0, '-infinity'::timestamptz, '{}'::timestamptz[]
  FROM jsonb_to_recordset(keys) AS k(c text, j text, f text, rid text) ORDER BY 1, 2, 3, 4
  ON CONFLICT (collection_id, journey_id, id_field, rid) DO UPDATE SET n_steps = p.n_steps;
  -- 2. A new statement, so a new snapshot: recompute, write, and count the difference.
  WITH RECURSIVE k AS (
    SELECT DISTINCT k.c, k.j, k.f, k.rid, s.version, s.steps
    FROM jsonb_to_recordset(keys) AS k(c text, j text, f text, rid text)
    LEFT JOIN journey_progress_state s ON s.collection_id = k.c AND s.journey_id = k.j
  ), cur AS (
    SELECT p.* FROM journey_progress p JOIN k
      ON p.collection_id = k.c AND p.journey_id = k.j AND p.id_field = k.f AND p.rid = k.rid
  ), entry AS MATERIALIZED (
    SELECT k.*, (
      SELECT min(e.occurred_at) FROM (
        SELECT e.occurred_at FROM interaction_events e
        WHERE k.f = 'userId' AND e.collection_id = k.c AND e.user_id = k.rid AND e.journey_id = k.j
          AND e.deleted_at IS NULL
        UNION ALL
        SELECT e.occurred_at FROM interaction_events e
        WHERE k.f = 'contactId' AND e.collection_id = k.c AND e.contact_id = k.rid AND e.journey_id = k.j
          AND e.deleted_at IS NULL
      ) e
    ) AS entered_at
    FROM k WHERE k.steps IS NOT NULL
  ), chain AS (
    SELECT c, j, f, rid, version, steps, entered_at, entered_at AS at, '{}'::timestamptz[] AS done
    FROM entry WHERE entered_at IS NOT NULL
    UNION ALL
    SELECT ch.c, ch.j, ch.f, ch.rid, ch.version, ch.steps, ch.entered_at, x.at, ch.done || x.at
    FROM chain ch
    CROSS JOIN LATERAL (
      SELECT e.occurred_at AS at FROM (
        SELECT e.occurred_at FROM interaction_events e
        WHERE ch.f = 'userId' AND e.collection_id = ch.c AND e.user_id = ch.rid
          AND e.interaction_id = ch.steps -> cardinality(ch.done) ->> 'interactionId'
          AND e.outcome = ch.steps -> cardinality(ch.done) ->> 'outcome'
          AND e.occurred_at >= ch.at AND e.deleted_at IS NULL
        UNION ALL
        SELECT e.occurred_at FROM interaction_events e
        WHERE ch.f = 'contactId' AND e.collection_id = ch.c AND e.contact_id = ch.rid
          AND e.interaction_id = ch.steps -> cardinality(ch.done) ->> 'interactionId'
          AND e.outcome = ch.steps -> cardinality(ch.done) ->> 'outcome'
          AND e.occurred_at >= ch.at AND e.deleted_at IS NULL
      ) e ORDER BY e.occurred_at LIMIT 1
    ) x
    WHERE cardinality(ch.done) < jsonb_array_length(ch.steps)
  ), calc AS (
    SELECT DISTINCT ON (c, j, f, rid) c, j, f, rid, version, jsonb_array_length(steps)::smallint AS n_steps,
      entered_at, done
    FROM chain ORDER BY c, j, f, rid, cardinality(done) DESC
  ), upd AS (
    UPDATE journey_progress p
    SET version = calc.version, n_steps = calc.n_steps, entered_at = calc.entered_at, completed_at = calc.done
    FROM calc
    WHERE p.collection_id = calc.c AND p.journey_id = calc.j AND p.id_field = calc.f AND p.rid = calc.rid
  ), del AS (
    DELETE FROM journey_progress p USING k
    WHERE p.collection_id = k.c AND p.journey_id = k.j AND p.id_field = k.f AND p.rid = k.rid
      AND NOT EXISTS (SELECT 1 FROM calc WHERE calc.c = k.c AND calc.j = k.j AND calc.f = k.f AND calc.rid = k.rid)
  ), contrib AS (
    SELECT r.c, r.j, r.version, r.f, x.step, r.sign, x.entered, x.completed, x.seconds
    FROM (
      SELECT collection_id AS c, journey_id AS j, version, id_field AS f, n_steps, entered_at, completed_at AS done, -1 AS sign
      FROM cur WHERE version >= 0
      UNION ALL
      SELECT c, j, version, f, n_steps, entered_at, done, 1 FROM calc
    ) r, journey_progress_contrib(r.entered_at, r.done, r.n_steps) x
  )
  INSERT INTO journey_progress_counts AS t (collection_id, journey_id, version, id_field, step, slot, entered, completed, seconds)
  SELECT c, j, version, f, step, pg_backend_pid() % 16, sum(sign * entered), sum(sign * completed), sum(sign * seconds)
  FROM contrib
  GROUP BY 1, 2, 3, 4, 5 HAVING sum(sign * entered) <> 0 OR sum(sign * completed) <> 0 OR sum(sign * seconds) <> 0
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (collection_id, journey_id, version, id_field, step, slot) DO UPDATE
    SET entered = t.entered + excluded.entered, completed = t.completed + excluded.completed,
        seconds = t.seconds + excluded.seconds;
END
$fn$;

-- The recipients a statement on interaction_events may have moved: in every kept journey that
-- the events enter (journey_id) or one of whose steps their interaction and outcome complete
-- (an event of a step's interaction with another outcome completes nothing; an outcome
-- changed by an update is seen in the old row or the new one).
CREATE FUNCTION journey_progress_change() RETURNS trigger LANGUAGE plpgsql
  -- Row estimates of jsonb_to_recordset and transition tables are guesses; JIT compiling
  -- these small statements on such guesses costs 400 ms each.
  SET jit = off AS $fn$
DECLARE
  keys jsonb;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT jsonb_agg(DISTINCT jsonb_build_object('c', s.collection_id, 'j', s.journey_id, 'f', v.f, 'rid', v.rid))
    INTO keys
    FROM new_rows r
    JOIN journey_progress_state s ON s.collection_id = r.collection_id AND s.steps IS NOT NULL
      AND (s.journey_id = r.journey_id OR s.steps @> jsonb_build_array(jsonb_build_object('interactionId', r.interaction_id, 'outcome', r.outcome)))
    CROSS JOIN LATERAL (VALUES ('userId', r.user_id), ('contactId', r.contact_id)) AS v(f, rid)
    WHERE v.rid IS NOT NULL;
  ELSIF TG_OP = 'UPDATE' THEN
    SELECT jsonb_agg(DISTINCT jsonb_build_object('c', s.collection_id, 'j', s.journey_id, 'f', v.f, 'rid', v.rid))
    INTO keys
    FROM (SELECT * FROM old_rows UNION ALL SELECT * FROM new_rows) r
    JOIN journey_progress_state s ON s.collection_id = r.collection_id AND s.steps IS NOT NULL
      AND (s.journey_id = r.journey_id OR s.steps @> jsonb_build_array(jsonb_build_object('interactionId', r.interaction_id, 'outcome', r.outcome)))
    CROSS JOIN LATERAL (VALUES ('userId', r.user_id), ('contactId', r.contact_id)) AS v(f, rid)
    WHERE v.rid IS NOT NULL;
  ELSE
    SELECT jsonb_agg(DISTINCT jsonb_build_object('c', s.collection_id, 'j', s.journey_id, 'f', v.f, 'rid', v.rid))
    INTO keys
    FROM old_rows r
    JOIN journey_progress_state s ON s.collection_id = r.collection_id AND s.steps IS NOT NULL
      AND (s.journey_id = r.journey_id OR s.steps @> jsonb_build_array(jsonb_build_object('interactionId', r.interaction_id, 'outcome', r.outcome)))
    CROSS JOIN LATERAL (VALUES ('userId', r.user_id), ('contactId', r.contact_id)) AS v(f, rid)
    WHERE v.rid IS NOT NULL;
  END IF;
  IF keys IS NOT NULL THEN
    PERFORM journey_progress_refresh(keys);
    INSERT INTO journey_progress_dirty (collection_id, journey_id, id_field, rid)
    SELECT DISTINCT k.c, k.j, k.f, k.rid FROM jsonb_to_recordset(keys) AS k(c text, j text, f text, rid text)
    JOIN journey_progress_state s ON s.collection_id = k.c AND s.journey_id = k.j AND NOT s.ready
    ORDER BY 1, 2, 3, 4
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER journey_progress_insert AFTER INSERT ON interaction_events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION journey_progress_change();
CREATE TRIGGER journey_progress_update AFTER UPDATE ON interaction_events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION journey_progress_change();
CREATE TRIGGER journey_progress_delete AFTER DELETE ON interaction_events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION journey_progress_change();

-- Everything derived from one collection's events, rebuilt from them: for bulk loads that ran
-- with the triggers disabled (the benchmark's seeding), and for repair. Holds a SHARE lock on
-- interaction_events (writers wait) for as long as it runs. Sorts run in memory (work_mem).
CREATE FUNCTION interactions_rebuild_derived(p_collection text) RETURNS void LANGUAGE plpgsql
  SET work_mem = '256MB' AS $fn$
DECLARE
  time_index text;
BEGIN
  LOCK TABLE interaction_events IN SHARE MODE;
  DELETE FROM interaction_counts_hourly WHERE collection_id = p_collection;
  INSERT INTO interaction_counts_hourly (collection_id, interaction_id, hour, app_id, outcome, slot, n)
  SELECT collection_id, interaction_id, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'),
         coalesce(app_id, ''), coalesce(outcome, ''), 0, count(*)
  FROM interaction_events WHERE collection_id = p_collection AND deleted_at IS NULL
  GROUP BY 1, 2, 3, 4, 5;

  DELETE FROM interaction_latest WHERE collection_id = p_collection;
  DELETE FROM interaction_latest_counts WHERE collection_id = p_collection;
  -- As in 0203: a byte-order sort, and the time index built after the rows are in (writers
  -- wait on the SHARE lock anyway). Its definition is read, not repeated.
  time_index := pg_get_indexdef('interaction_latest_time'::regclass);
  DROP INDEX interaction_latest_time;
  INSERT INTO interaction_latest (collection_id, interaction_id, id_field, rid, event_row, occurred_at, outcome)
  SELECT DISTINCT ON (interaction_id COLLATE "C", f COLLATE "C", rid COLLATE "C")
    p_collection, interaction_id, f, rid, id, occurred_at, outcome
  FROM interaction_events e, LATERAL (VALUES ('userId', e.user_id), ('contactId', e.contact_id)) AS v(f, rid)
  WHERE e.collection_id = p_collection AND e.deleted_at IS NULL AND v.rid IS NOT NULL
  ORDER BY interaction_id COLLATE "C", f COLLATE "C", rid COLLATE "C", occurred_at DESC, id DESC;
  EXECUTE time_index;
  INSERT INTO interaction_latest_counts (collection_id, interaction_id, id_field, hour, outcome, slot, n)
  SELECT collection_id, interaction_id, id_field, date_bin('1 hour', occurred_at, timestamptz '2000-01-01 00:00:00+00'),
  coalesce(outcome, ''), 0, count(*)
  FROM interaction_latest WHERE collection_id = p_collection
  GROUP BY 1, 2, 3, 4, 5;
  -- Statistics now: without them the planner scans the tables it was meant to spare.
  ANALYZE interaction_latest;
  ANALYZE interaction_latest_counts;

  -- Journey progress is rebuilt by the journeys.progress task, not here: the collection's kept
  -- journeys are forgotten, and worker processes adopt them again when they start.
  DELETE FROM journey_progress WHERE collection_id = p_collection;
  DELETE FROM journey_progress_counts WHERE collection_id = p_collection;
  DELETE FROM journey_progress_dirty WHERE collection_id = p_collection;
  DELETE FROM journey_progress_state WHERE collection_id = p_collection;
END
$fn$;
