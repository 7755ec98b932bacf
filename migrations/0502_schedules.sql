-- Schedules (issue 27, item 4): recurring jobs on a cron. A collection's schedule enqueues a job
-- of `task` with `payload` on every tick; a system schedule (no collection) runs one of the
-- service's own housekeeping functions, named by `name`, in the worker process that claims
-- its tick. Every worker takes the due rows FOR UPDATE SKIP LOCKED and advances `next_run_at`
-- in the same transaction, so a tick is claimed by exactly one process (docs/design/schedules.md).
CREATE TABLE schedules (
  id text PRIMARY KEY,
  -- NULL: a system schedule (housekeeping), upserted by the workers at start.
  collection_id text REFERENCES collections(id) ON DELETE CASCADE,
  name text NOT NULL,
  -- A 5-field cron read in `timezone`; or, for housekeeping whose cadence is a setting in
  -- milliseconds, `every_ms`. Exactly one of the two.
  cron text,
  every_ms integer CHECK (every_ms > 0),
  timezone text NOT NULL DEFAULT 'UTC',
  task text,
  payload jsonb,
  priority integer NOT NULL DEFAULT 0,
  max_attempts integer,
  queue_name text,
  catch_up text NOT NULL DEFAULT 'latest' CHECK (catch_up IN ('latest', 'none')),
  enabled boolean NOT NULL DEFAULT true,
  -- The next tick; NULL while disabled.
  next_run_at timestamptz,
  last_run_at timestamptz,
  -- Not a foreign key: the jobs' retention removes finished jobs, the schedule keeps the id.
  last_job_id bigint,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((cron IS NULL) <> (every_ms IS NULL)),
  CHECK (collection_id IS NULL OR (task IS NOT NULL AND cron IS NOT NULL))
);

CREATE UNIQUE INDEX schedules_collection_name ON schedules (collection_id, name);
-- NULLs are distinct in the index above: the system schedules' names are unique here.
CREATE UNIQUE INDEX schedules_system_name ON schedules (name) WHERE collection_id IS NULL;
-- The workers' one question: what is due, and when is the next one.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled;
