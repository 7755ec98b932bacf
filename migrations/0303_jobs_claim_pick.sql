-- Which due jobs a claim takes (outside named queues), most urgent first, as a function whose
-- plan does not depend on the table's statistics.
--
-- The claim is `ORDER BY priority DESC, run_at, id LIMIT n FOR UPDATE SKIP LOCKED`, meant to
-- read the first n entries of the `jobs_pending` index. When the statistics say there are
-- hardly any pending jobs (a table never analyzed, or analyzed while empty or between bursts:
-- the normal life of a queue), the planner instead reads every pending job through a bitmap
-- scan and sorts them all to keep n: the cost of each claim grows with the backlog
-- (measured: 1.3 ms instead of 0.3 ms per claim at 3,000 pending jobs, and 4 worker processes
-- draining a burst at a third of their speed until autovacuum analyzed the table). Inside this
-- function sorting is switched off, which leaves the ordered index scan as the one plan.
-- The claim itself (the UPDATE that starts the picked jobs) stays in jobs.repository.ts.
CREATE FUNCTION jobs_pick_free(p_tasks text[], p_limit integer)
  RETURNS TABLE (collection_id text, id bigint)
  LANGUAGE plpgsql VOLATILE
  -- What a claim asks for (its free slots), not the 1000 rows assumed of a function: the
  -- UPDATE of the picked jobs then looks each one up by its key instead of hashing the table.
  ROWS 10
  SET enable_sort = off
AS $$
BEGIN
  RETURN QUERY
    SELECT j.collection_id, j.id FROM jobs j
    WHERE j.status IN ('queued', 'errored') AND j.run_at <= now() AND j.queue_name IS NULL
      AND j.task = ANY(p_tasks)
    ORDER BY j.priority DESC, j.run_at, j.id
    LIMIT p_limit
    FOR UPDATE OF j SKIP LOCKED;
END
$$;
