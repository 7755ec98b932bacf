-- Each claim carries its own expiry (claim time or last heartbeat + the claiming worker's
-- JOBS_LOCK_TIMEOUT_MS), so workers configured with different lock timeouts never take over
-- each other's live jobs: the sweep only compares lock_expires_at with now().
ALTER TABLE jobs ADD COLUMN lock_expires_at timestamptz;
CREATE INDEX jobs_lock_expiry ON jobs (lock_expires_at) WHERE status = 'running';
