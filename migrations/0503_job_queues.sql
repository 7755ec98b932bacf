-- Flow control of named queues (docs/jobs.md, "Queues"; the claim: queues.repository.ts).
--
-- Before this migration a named queue ran one job at a time and could not be stopped. A row
-- here is a queue's settings; a queue without one keeps those defaults (1 at a time, no rate,
-- running), so existing queues behave as before and a queue needs no declaring.
-- - concurrency: how many of its jobs run at once (its first `concurrency` pending jobs in
--   enqueue order are claimable, less those running).
-- - rate_per_second: at most this many starts a second, spread evenly (a GCRA: `next_start_at`
--   is the theoretical time of the next start; a burst of a tenth of a second's worth, at least
--   one, may start together).
-- - paused: no job of the queue starts; running ones finish.
CREATE TABLE job_queues (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  name text NOT NULL,
  concurrency integer NOT NULL DEFAULT 1 CHECK (concurrency BETWEEN 1 AND 1000),
  rate_per_second double precision CHECK (rate_per_second > 0 AND rate_per_second <= 10000),
  paused boolean NOT NULL DEFAULT false,
  next_start_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, name)
);
