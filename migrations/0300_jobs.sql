-- Background jobs (src/modules/jobs/engine.ts explains the life cycle).
-- One row per job. Workers claim rows with FOR UPDATE SKIP LOCKED; `locked_by`/`locked_at`
-- identify the live claim (refreshed by a heartbeat) so a dead worker's job is reclaimed
-- after the lock timeout. Finished rows keep result / last_error until retention removes them.
CREATE TABLE jobs (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id bigserial NOT NULL,
  task text NOT NULL,
  payload jsonb,
  priority integer NOT NULL DEFAULT 0,
  run_at timestamptz NOT NULL DEFAULT now(),
  key text,
  queue_name text,
  status text NOT NULL DEFAULT 'queued'
    CHECK (status IN ('queued', 'running', 'errored', 'completed', 'failed', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL CHECK (max_attempts >= 1),
  last_error text,
  progress jsonb,
  result jsonb,
  visible boolean NOT NULL,
  locked_at timestamptz,
  locked_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (collection_id, id)
);

-- Claim path: pending jobs by urgency. Partial, so finished rows never slow it down.
CREATE INDEX jobs_pending ON jobs (priority DESC, run_at, id) WHERE status IN ('queued', 'errored');
-- Named queues: the head of each queue and whether one of its jobs is running.
CREATE INDEX jobs_queue ON jobs (collection_id, queue_name, id)
  WHERE queue_name IS NOT NULL AND status IN ('queued', 'errored', 'running');
-- Lock timeout sweep and heartbeats.
CREATE INDEX jobs_running ON jobs (locked_by, locked_at) WHERE status = 'running';
-- Idempotent enqueue: at most one pending job per key in a collection.
CREATE UNIQUE INDEX jobs_pending_key ON jobs (collection_id, key)
  WHERE key IS NOT NULL AND status IN ('queued', 'errored');
-- Listing and retention.
CREATE INDEX jobs_list ON jobs (collection_id, created_at DESC, id DESC) WHERE visible;
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
