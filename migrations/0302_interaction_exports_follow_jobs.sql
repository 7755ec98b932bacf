-- An export file belongs to the interactions.export job that wrote it, and goes when the jobs'
-- retention (JOBS_RETENTION_HOURS) removes that job: without this, a removed job's file could
-- no longer be downloaded (the download needs the finished job) yet stayed in the database.
-- It links the interactions module's table to the jobs module's, so it takes a number in the
-- later of the two ranges: both tables exist by then on a fresh database.
DELETE FROM interaction_exports e
WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.collection_id = e.collection_id AND j.id = e.job_id);
ALTER TABLE interaction_exports
  ADD CONSTRAINT interaction_exports_job_fkey FOREIGN KEY (collection_id, job_id)
  REFERENCES jobs (collection_id, id) ON DELETE CASCADE;
