-- Less written per job (docs/design/jobs.md, "What a job costs the database"; measured in
-- docs/benchmarks.md, issue 27's fourth session).
--
-- 1. `jobs_due` held every pending job, though its one reader (the engine's timer, nextDue)
--    asks only for jobs due later than when it looked. A job enqueued to run now has
--    run_at = created_at (both the transaction's now()); it is announced by the NOTIFY of its
--    insert, never by the timer. So the index keeps only jobs due after they were made (a
--    runAt in the future, a retry's backoff, a job released or retried: run_at moved on), and
--    an immediate job's insert writes one index entry fewer.
-- 2. A completed job of an internal task (`visible` false: webhook deliveries, journey
--    progress, the service's own work) is deleted by its completion, as graphile-worker does,
--    instead of being rewritten as `completed` and deleted again by retention a week later:
--    nothing reads it (the API shows visible jobs only, and each of those tasks keeps its own
--    record: delivery attempts, journey progress). A row rewritten costs a new row version and
--    two index entries (the key and `jobs_finished`); a delete marks the row. Failures of
--    internal jobs are kept as before, for the operator.

DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at) WHERE status IN ('queued', 'errored') AND run_at > created_at;

CREATE OR REPLACE FUNCTION jobs_complete(p_worker text, p_done jsonb)
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
      SELECT j.collection_id, j.id, j.visible FROM jobs j JOIN d ON j.collection_id = d."collectionId" AND j.id = d.id
      WHERE j.locked_by = p_worker AND j.status = 'running'
      ORDER BY j.id
      FOR UPDATE OF j
    ), gone AS (
      DELETE FROM jobs j USING mine
      WHERE j.collection_id = mine.collection_id AND j.id = mine.id AND NOT mine.visible
      RETURNING j.id
    ), kept AS (
      UPDATE jobs j SET status = 'completed', result = d.result, progress = coalesce(d.progress, j.progress),
        finished_at = now(), locked_at = NULL, locked_by = NULL, lock_expires_at = NULL, updated_at = now()
      FROM mine JOIN d ON d."collectionId" = mine.collection_id AND d.id = mine.id
      WHERE j.collection_id = mine.collection_id AND j.id = mine.id AND mine.visible
      RETURNING j.id
    )
    SELECT gone.id FROM gone UNION ALL SELECT kept.id FROM kept;
END
$$;
