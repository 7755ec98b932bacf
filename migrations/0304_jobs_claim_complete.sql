-- The worker's two hot writes, the claim and the completion batch, as functions that plan with
-- sequential scans off, so that each job is looked up by its key whatever the statistics say.
--
-- The engine prepares its statements once per connection, and PostgreSQL then keeps a generic
-- plan. A worker that starts while the jobs table is small (a new deployment, a quiet spell
-- after a retention sweep) got a plan that found the picked jobs by a sequential scan and a
-- hash join, and kept it as the table grew, until autovacuum's next VACUUM or ANALYZE of the
-- table made it plan again. Measured (one worker, idle queue): a claim took 1.2 ms on a fresh
-- table, 5–6 ms after 10,000 jobs had gone through, 8–10 ms after 20,000 and 13–14 ms after
-- 30,000; 1.0–1.5 ms again after a VACUUM. Inside these functions the sequential scan is off:
-- the lookups by (collection_id, id) stay index scans, and the plans can still be kept.
--
-- The statements stay those of jobs.repository.ts before this migration (the repository calls
-- the functions; see its top for the lock order): completions lock their rows in id order
-- first; the claim takes what jobs_pick_free picks (locked, SKIP LOCKED).

CREATE FUNCTION jobs_claim_free(p_worker text, p_lock_ms double precision, p_tasks text[], p_limit integer)
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
    FROM jobs_pick_free(p_tasks, p_limit) AS next
    WHERE j.collection_id = next.collection_id AND j.id = next.id
    RETURNING j.collection_id, j.id, j.task, j.payload, j.priority, j.run_at, j.queue_name,
      j.attempts, j.max_attempts, j.progress;
END
$$;

-- p_done: [{"collectionId", "id", "result", "progress"}, …]. Answers the ids recorded: a job
-- missing from the answer had lost its claim (another worker holds it now).
CREATE FUNCTION jobs_complete(p_worker text, p_done jsonb)
  RETURNS TABLE (id bigint)
  LANGUAGE plpgsql VOLATILE
  ROWS 10
  SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    WITH d AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(p_done) AS d("collectionId" text, id bigint, result jsonb, progress jsonb)
    ), mine AS MATERIALIZED (
      SELECT j.collection_id, j.id FROM jobs j JOIN d ON j.collection_id = d."collectionId" AND j.id = d.id
      WHERE j.locked_by = p_worker AND j.status = 'running'
      ORDER BY j.id
      FOR UPDATE OF j
    )
    UPDATE jobs j SET status = 'completed', result = d.result, progress = coalesce(d.progress, j.progress),
      finished_at = now(), locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()
    FROM mine JOIN d ON d."collectionId" = mine.collection_id AND d.id = mine.id
    WHERE j.collection_id = mine.collection_id AND j.id = mine.id
    RETURNING j.id;
END
$$;
