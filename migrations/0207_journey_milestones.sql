-- Analytics milestones of journeys (docs/journeys.md "Milestones"): the step completions and
-- journey completions maintained progress sees, noted by the triggers' own function in the
-- transaction of the interaction event that made them, and published as webhook events
-- (journey.step.completed, journey.completed) by the journeys module's publisher, which marks
-- them published in the transaction that writes them to the outbox.
--
-- journey_milestones: one row per recipient and step (step_id) ever, and one per recipient for
--   the journey's completion (step_id '': a step's id is never empty). The key is the memory
--   that keeps each from being announced twice (a step completed again after a delete took it
--   back, a rebuild, steps that changed); rows stay once published. published_at is null until
--   the publisher has written the event. A rebuild's bulk statement notes nothing: it recomputes
--   the past, it does not see recipients move.
CREATE TABLE journey_milestones (
  collection_id text NOT NULL,
  journey_id text NOT NULL,
  id_field text NOT NULL,
  rid text NOT NULL,
  step_id text NOT NULL,
  -- 1-based position among the journey's steps (the last one's for a journey completion).
  step smallint NOT NULL,
  step_name text,
  n_steps smallint NOT NULL,
  entered_at timestamptz NOT NULL,
  completed_at timestamptz NOT NULL,
  -- The interaction event (its eventId) whose arrival completed it, as progress saw it.
  event_id text,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  noted_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz,
  PRIMARY KEY (collection_id, journey_id, id_field, rid, step_id)
);
-- What the publisher has still to send, per collection in the order noted.
CREATE INDEX journey_milestones_pending ON journey_milestones (collection_id, seq) WHERE published_at IS NULL;

-- The journey's steps as the service reads them (definedSteps in journeys.service.ts): the
-- objects of data.steps with a non-empty string id (or stepId), in order, numbered from 1;
-- their name (or title) when they have one. Progress is kept only when every one is mapped, so
-- the k-th kept step is the k-th of these.
CREATE FUNCTION journey_defined_steps(data jsonb)
RETURNS TABLE (k integer, step_id text, name text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT (row_number() OVER (ORDER BY n))::integer, id,
    CASE WHEN jsonb_typeof(v -> 'name') = 'string' THEN v ->> 'name'
         WHEN jsonb_typeof(v -> 'title') = 'string' THEN v ->> 'title' END
  FROM (
    SELECT n, v, CASE WHEN jsonb_typeof(v -> 'id') = 'string' THEN v ->> 'id'
                      WHEN jsonb_typeof(v -> 'stepId') = 'string' THEN v ->> 'stepId' END AS id
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(data -> 'steps') = 'array' THEN data -> 'steps' ELSE '[]'::jsonb END)
      WITH ORDINALITY AS s(v, n)
    WHERE jsonb_typeof(v) = 'object'
  ) s
  WHERE id IS NOT NULL AND id <> ''
$fn$;

-- journey_progress_refresh of 0204, unchanged but for: the chain keeps the eventId of each
-- completing event (done_by), and the steps a recipient completes beyond its row's are noted
-- as milestones (reached, noted), with a NOTIFY per collection that noted any.
CREATE OR REPLACE FUNCTION journey_progress_refresh(keys jsonb) RETURNS void LANGUAGE plpgsql
  -- Row estimates of jsonb_to_recordset and transition tables are guesses; JIT compiling
  -- these small statements on such guesses costs 400 ms each.
  SET jit = off AS $fn$
DECLARE
  noted_in text[];
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
    SELECT c, j, f, rid, version, steps, entered_at, entered_at AS at, '{}'::timestamptz[] AS done,
      '{}'::text[] AS done_by
    FROM entry WHERE entered_at IS NOT NULL
    UNION ALL
    SELECT ch.c, ch.j, ch.f, ch.rid, ch.version, ch.steps, ch.entered_at, x.at, ch.done || x.at,
      ch.done_by || x.event_id
    FROM chain ch
    CROSS JOIN LATERAL (
      SELECT e.occurred_at AS at, e.event_id FROM (
        SELECT e.occurred_at, e.event_id FROM interaction_events e
        WHERE ch.f = 'userId' AND e.collection_id = ch.c AND e.user_id = ch.rid
          AND e.interaction_id = ch.steps -> cardinality(ch.done) ->> 'interactionId'
          AND e.outcome = ch.steps -> cardinality(ch.done) ->> 'outcome'
          AND e.occurred_at >= ch.at AND e.deleted_at IS NULL
        UNION ALL
        SELECT e.occurred_at, e.event_id FROM interaction_events e
        WHERE ch.f = 'contactId' AND e.collection_id = ch.c AND e.contact_id = ch.rid
          AND e.interaction_id = ch.steps -> cardinality(ch.done) ->> 'interactionId'
          AND e.outcome = ch.steps -> cardinality(ch.done) ->> 'outcome'
          AND e.occurred_at >= ch.at AND e.deleted_at IS NULL
      ) e ORDER BY e.occurred_at LIMIT 1
    ) x
    WHERE cardinality(ch.done) < jsonb_array_length(ch.steps)
  ), calc AS (
    SELECT DISTINCT ON (c, j, f, rid) c, j, f, rid, version, jsonb_array_length(steps)::smallint AS n_steps,
      entered_at, done, done_by
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
  ), counted AS (
    INSERT INTO journey_progress_counts AS t (collection_id, journey_id, version, id_field, step, slot, entered, completed, seconds)
    SELECT c, j, version, f, step, pg_backend_pid() % 16, sum(sign * entered), sum(sign * completed), sum(sign * seconds)
    FROM contrib
    GROUP BY 1, 2, 3, 4, 5 HAVING sum(sign * entered) <> 0 OR sum(sign * completed) <> 0 OR sum(sign * seconds) <> 0
    ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (collection_id, journey_id, version, id_field, step, slot) DO UPDATE
      SET entered = t.entered + excluded.entered, completed = t.completed + excluded.completed,
          seconds = t.seconds + excluded.seconds
  ), reached AS (
    -- Milestones: the steps the recipient completes now beyond those its row held (a
    -- placeholder holds none). The row before may be of an older version (the steps changed and
    -- the rebuild has not reached it): its first steps count as held, by position.
    SELECT calc.c, calc.j, calc.f, calc.rid, s.s AS step, calc.n_steps, calc.entered_at,
      calc.done[s.s] AS completed_at, calc.done_by[s.s] AS event_id
    FROM calc
    JOIN cur ON cur.collection_id = calc.c AND cur.journey_id = calc.j AND cur.id_field = calc.f AND cur.rid = calc.rid
    CROSS JOIN LATERAL generate_series(cardinality(cur.completed_at) + 1, cardinality(calc.done)) AS s(s)
  ), noted AS (
    -- Each step once per recipient ever (the key), and the journey's completion once (step_id
    -- ''), with the last step: a step completed again after a delete took it back, or under
    -- steps that changed, is not announced twice.
    INSERT INTO journey_milestones AS m (collection_id, journey_id, id_field, rid, step_id, step, step_name, n_steps,
      entered_at, completed_at, event_id)
    SELECT r.c, r.j, r.f, r.rid, CASE WHEN x.journey THEN '' ELSE d.step_id END, r.step, d.name, r.n_steps,
      r.entered_at, r.completed_at, r.event_id
    FROM reached r
    JOIN journeys jr ON jr.collection_id = r.c AND jr.id = r.j
    JOIN journey_defined_steps(jr.data) d ON d.k = r.step
    CROSS JOIN LATERAL (VALUES (false), (true)) AS x(journey)
    WHERE NOT x.journey OR r.step = r.n_steps
    ORDER BY r.c, r.j, r.f, r.rid, r.step, x.journey
    ON CONFLICT (collection_id, journey_id, id_field, rid, step_id) DO NOTHING
    RETURNING m.collection_id
  )
  SELECT array_agg(DISTINCT collection_id) INTO noted_in FROM noted;
  -- Wakes the publisher (journeys.milestones.ts) at commit; nothing if the change rolls back.
  IF noted_in IS NOT NULL THEN
    PERFORM pg_notify('journey_milestones', c) FROM unnest(noted_in) AS c;
  END IF;
END
$fn$;
