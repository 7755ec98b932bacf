-- Fair claims: lanes, turns between collections, a per-collection budget (engine.ts, "Fairness").
--
-- Before this migration a claim took the most urgent due jobs of the whole table
-- (`priority DESC, run_at, id`): one collection's backlog, or its jobs at priority 1000, went
-- ahead of every other collection's work, and deliveries to receivers that never answer held
-- every slot of a worker for the webhook timeout (measured: another collection's delivery
-- delayed from 12–29 ms to 49.7 s).
--
-- - `lane`: the slots a job runs in. A task declares its lane (default `default`; webhook
--   deliveries run in `deliveries`), and each lane has its own slots in every worker, so no
--   tenant job can take a delivery's slot, nor the other way round.
-- - The pick walks the collections that have pending jobs in the lane, in descending collection
--   order from a cursor the worker keeps (the last collection it served), wrapping around to
--   the largest once: each collection in turn gives its most urgent due jobs (priority orders a
--   collection's own jobs only), up to what it may still hold (its budget less what this worker
--   already runs of it). Descending, because the look-up of the next collection then lands on
--   the end of its range of the index, its newest jobs: the start holds the entries of jobs
--   already claimed until VACUUM removes them, which an ascending look-up stepped over
--   (measured after the bench's throughput runs, pickup p50: ascending 0.8–0.9 ms against
--   graphile-worker's 0.6 ms; descending 0.7–0.9 ms against its 0.7–0.9 ms in the same run).
-- - Ordered by `collection_id COLLATE "C"` (bytes), so that the worker's cursor compares
--   the way the index does, whatever the database's collation.

ALTER TABLE jobs ADD COLUMN lane text NOT NULL DEFAULT 'default';

-- Replaces `jobs_pending` (priority DESC, run_at, id) as the claim's path: the next collection
-- with pending jobs in a lane is the next entry, and a collection's jobs in claim order follow.
CREATE INDEX jobs_lane_pending ON jobs (lane, (collection_id COLLATE "C"), priority DESC, run_at, id)
  WHERE status IN ('queued', 'errored') AND queue_name IS NULL;
DROP INDEX jobs_pending;
-- The timer's look-up of the next future job (nextDue), which read jobs_pending in full before.
CREATE INDEX jobs_due ON jobs (run_at) WHERE status IN ('queued', 'errored');

DROP FUNCTION jobs_claim_free(text, double precision, text[], integer);
DROP FUNCTION jobs_pick_free(text[], integer);

-- p_after: the collection the worker served last ('' for none). p_held / p_held_counts: the
-- collections this worker holds jobs of in the lane, and how many. p_budget: the most one
-- collection may hold. p_max_visits bounds the walk (collections with only future jobs, or at
-- their budget, are passed over at the cost of two index probes each).
CREATE FUNCTION jobs_pick_fair(p_lane text, p_tasks text[], p_limit integer, p_after text,
    p_held text[], p_held_counts integer[], p_budget integer, p_max_visits integer)
  RETURNS TABLE (collection_id text, id bigint)
  LANGUAGE plpgsql VOLATILE
  ROWS 10
  SET enable_sort = off
AS $$
#variable_conflict use_column
DECLARE
  c text := p_after;
  -- Next look-up from the top (the largest collection) rather than below `c`.
  top boolean := p_after = '';
  wrapped boolean := p_after = '';
  taken integer := 0;
  got integer;
  room integer;
  visits integer := 0;
BEGIN
  LOOP
    EXIT WHEN taken >= p_limit OR visits >= p_max_visits;
    IF top THEN
      SELECT j.collection_id INTO c FROM jobs j
        WHERE j.lane = p_lane AND j.status IN ('queued', 'errored') AND j.queue_name IS NULL
        ORDER BY (j.collection_id COLLATE "C") DESC LIMIT 1;
      top := false;
    ELSE
      SELECT j.collection_id INTO c FROM jobs j
        WHERE j.lane = p_lane AND j.status IN ('queued', 'errored') AND j.queue_name IS NULL
          AND (j.collection_id COLLATE "C") < (c COLLATE "C")
        ORDER BY (j.collection_id COLLATE "C") DESC LIMIT 1;
    END IF;
    IF NOT FOUND THEN
      EXIT WHEN wrapped;
      wrapped := true;
      top := true;
      CONTINUE;
    END IF;
    -- Round the circle once: the cursor's own collection comes last.
    EXIT WHEN wrapped AND p_after <> '' AND (c COLLATE "C") < (p_after COLLATE "C");
    visits := visits + 1;
    room := least(p_limit - taken, p_budget - coalesce(p_held_counts[array_position(p_held, c)], 0));
    CONTINUE WHEN room <= 0;
    RETURN QUERY
      SELECT j.collection_id, j.id FROM jobs j
      WHERE j.lane = p_lane AND (j.collection_id COLLATE "C") = (c COLLATE "C")
        AND j.status IN ('queued', 'errored') AND j.queue_name IS NULL
        AND j.run_at <= now() AND j.task = ANY(p_tasks)
      ORDER BY j.priority DESC, j.run_at, j.id
      LIMIT room
      FOR UPDATE OF j SKIP LOCKED;
    GET DIAGNOSTICS got = ROW_COUNT;
    taken := taken + got;
  END LOOP;
END
$$;

-- The claim of 0304 on the fair pick; what "running" writes is unchanged (its twin for named
-- queues is `startRunning` in jobs.repository.ts).
CREATE FUNCTION jobs_claim_fair(p_worker text, p_lock_ms double precision, p_lane text, p_tasks text[],
    p_limit integer, p_after text, p_held text[], p_held_counts integer[], p_budget integer, p_max_visits integer)
  RETURNS TABLE (collection_id text, id bigint, task text, payload jsonb, priority integer,
    run_at timestamptz, queue_name text, attempts integer, max_attempts integer, progress jsonb)
  LANGUAGE plpgsql VOLATILE
  ROWS 10
  SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    UPDATE jobs j SET status = 'running', attempts = j.attempts + 1, locked_at = now(), locked_by = p_worker,
      lock_expires_at = now() + make_interval(secs => p_lock_ms / 1000), updated_at = now()
    FROM jobs_pick_fair(p_lane, p_tasks, p_limit, p_after, p_held, p_held_counts, p_budget, p_max_visits) AS next
    WHERE j.collection_id = next.collection_id AND j.id = next.id
    RETURNING j.collection_id, j.id, j.task, j.payload, j.priority, j.run_at, j.queue_name,
      j.attempts, j.max_attempts, j.progress;
END
$$;
