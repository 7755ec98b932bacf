-- Breakdown values in maintained progress (docs/journeys.md "Maintained progress", issue 29):
-- a journey may declare breakdown properties (`data.breakdownProperties`, at most 5); its
-- progress rows then keep, per property, the value that first-touch and last-touch attribution
-- give it, so that a funnel broken down by one of them reads the rows, not every entrant's
-- events.
--
-- journey_progress_state.props: the declared properties the rows follow, in order (null or
--   empty: none). Part of what the version follows: a change is a new version, rebuilt.
-- journey_progress.touch: null without properties; else, for P properties, P values per
--   position k = 0 .. L (1-based index k * P + p): k = 0 the journey entry's values (first
--   touch), k ≥ 1 the last touch of the chain cut after step k, which is the latest event, in
--   (occurred_at, id) order, among those that completed steps 1 .. k. Positions after L, up to
--   cardinality(completed_at), have L's values and are not stored (trailing repeats dropped):
--   the value at position k is at (least(k, L) * P + p), L = cardinality(touch) / P - 1. Most
--   people keep one plan through a journey, so most rows hold P values, not P per step: the
--   rows are read whole by every report over a period, and were 60 % wider with every
--   position stored (74 bytes more for one property and four steps).
--   A step's event is the first in that order at its completion time (the walk's, which
--   finds the first matching event at or after the step before). Kept by
--   journey_progress_refresh (the triggers) and the rebuild's bulk statement
--   (journeys.progress.repository.ts bulkProgress), both through journey_touch_of.
ALTER TABLE journey_progress_state ADD COLUMN props jsonb;
ALTER TABLE journey_progress ADD COLUMN touch text[];

-- A progress row's touch (above) from its times and `evs`, the recipient's live events at those
-- times in (occurred_at, id) order: each position's event is the first of them at its time that
-- is what the position needs (entry: carries the journey id; step k: the step's interaction and
-- outcome). The triggers' refresh and the rebuild's bulk statement both use it, so they keep
-- the same values. `evs` is gathered by a subquery of the caller's statement (the events at
-- `p_entered` or a `p_done` time), not by queries in here: a query in a function over the
-- partitioned events took 60–80 µs each at 10,000,000 events (its cached plan locks every
-- partition on each use), three times the probe itself.
CREATE FUNCTION journey_touch_of(p_props jsonb, p_steps jsonb, p_j text, p_entered timestamptz,
  p_done timestamptz[], evs interaction_events[])
RETURNS text[] LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
  props text[];
  result text[];
  vals text[];
  x interaction_events;
  e interaction_events;
  at timestamptz;
  lt_t timestamptz;
  lt_id bigint;
  lt_vals text[];
  p text;
  n integer;
BEGIN
  IF p_props IS NULL OR jsonb_array_length(p_props) = 0 THEN
    RETURN NULL;
  END IF;
  props := ARRAY(SELECT jsonb_array_elements_text(p_props));
  FOR k IN 0 .. coalesce(cardinality(p_done), 0) LOOP
    at := CASE WHEN k = 0 THEN p_entered ELSE p_done[k] END;
    x := NULL;
    FOREACH e IN ARRAY coalesce(evs, '{}') LOOP
      IF e.occurred_at = at AND (CASE WHEN k = 0 THEN e.journey_id = p_j
          ELSE e.interaction_id = p_steps -> (k - 1) ->> 'interactionId'
            AND e.outcome = p_steps -> (k - 1) ->> 'outcome' END) THEN
        x := e;
        EXIT;
      END IF;
    END LOOP;
    -- The names the service accepts (funnels.service.ts propertyRef), read as the walk reads
    -- them: metadata ->> key, so a JSON null, an absent key and no metadata are all NULL.
    vals := '{}';
    FOREACH p IN ARRAY props LOOP
      vals := vals || CASE p WHEN 'appId' THEN x.app_id WHEN 'outcome' THEN x.outcome WHEN 'source' THEN x.source
        WHEN 'interactionId' THEN x.interaction_id ELSE x.metadata ->> substr(p, 10) END;
    END LOOP;
    IF k = 0 THEN
      result := vals;
    ELSE
      -- Completion times never decrease along the chain: at a tie the later id is the later event.
      IF lt_t IS NULL OR at > lt_t OR x.id > lt_id THEN
        lt_t := at;
        lt_id := x.id;
        lt_vals := vals;
      END IF;
      result := result || lt_vals;
    END IF;
  END LOOP;
  -- Trailing repeats dropped (above): position 0 always stays.
  n := cardinality(result);
  WHILE n > cardinality(props) AND result[n - cardinality(props) + 1 : n] IS NOT DISTINCT FROM
      result[n - 2 * cardinality(props) + 1 : n - cardinality(props)] LOOP
    n := n - cardinality(props);
  END LOOP;
  RETURN result[1 : n];
END
$fn$;

-- journey_progress_refresh of 0207, unchanged but for: the state's props are read with its
-- steps, and each recomputed row's touch is written (journey_touch_of).
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
    SELECT DISTINCT k.c, k.j, k.f, k.rid, s.version, s.steps, s.props
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
    SELECT c, j, f, rid, version, steps, props, entered_at, entered_at AS at, '{}'::timestamptz[] AS done,
      '{}'::text[] AS done_by
    FROM entry WHERE entered_at IS NOT NULL
    UNION ALL
    SELECT ch.c, ch.j, ch.f, ch.rid, ch.version, ch.steps, ch.props, ch.entered_at, x.at, ch.done || x.at,
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
    SELECT c, j, f, rid, version, n_steps, entered_at, done, done_by,
      CASE WHEN props IS NOT NULL THEN journey_touch_of(props, steps, j, entered_at, done, (
        SELECT array_agg(u.ev ORDER BY (u.ev).occurred_at, (u.ev).id) FROM (
          SELECT x AS ev FROM interaction_events x
          WHERE f = 'userId' AND x.collection_id = c AND x.user_id = rid
            AND x.occurred_at = ANY(entered_at || done) AND x.deleted_at IS NULL
          UNION ALL
          SELECT x FROM interaction_events x
          WHERE f = 'contactId' AND x.collection_id = c AND x.contact_id = rid
            AND x.occurred_at = ANY(entered_at || done) AND x.deleted_at IS NULL
        ) u)) END AS touch
    FROM (
      SELECT DISTINCT ON (c, j, f, rid) c, j, f, rid, version, steps, props,
        jsonb_array_length(steps)::smallint AS n_steps, entered_at, done, done_by
      FROM chain ORDER BY c, j, f, rid, cardinality(done) DESC
    ) longest
  ), upd AS (
    UPDATE journey_progress p
    SET version = calc.version, n_steps = calc.n_steps, entered_at = calc.entered_at, completed_at = calc.done,
      touch = calc.touch
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
