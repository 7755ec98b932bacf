-- An app's own tasks (issue 27, item 3: workers over HTTP, the Faktory / SQS model). A
-- collection declares a task by name; its jobs are enqueued like any job but in the `app` lane,
-- which no engine of ours claims: the app's workers lease them over HTTP (POST .../jobs/lease)
-- and report back (heartbeat, progress, complete, fail). See docs/workers.md and
-- docs/design/workers.md.
CREATE TABLE app_tasks (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text NOT NULL DEFAULT '',
  max_attempts integer NOT NULL CHECK (max_attempts BETWEEN 1 AND 25),
  -- How long a lease lasts without a heartbeat: then the job goes back to the queue.
  lease_seconds integer NOT NULL CHECK (lease_seconds BETWEEN 5 AND 3600),
  -- A JSON Schema the payload of every enqueue is checked against; NULL: any object.
  payload_schema jsonb,
  example jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, name)
);

-- The lease's path: one collection's due jobs of one task, in claim order. `jobs_lane_pending`
-- (0305) leads with (lane, collection) and orders by priority and due time whatever the task,
-- so a lease of task Y would step over every pending job of task X of the collection first;
-- here each task has its own range, and a lease of several tasks reads each one's head.
CREATE INDEX jobs_app_pending ON jobs (collection_id, task, priority DESC, run_at, id)
  WHERE lane = 'app' AND status IN ('queued', 'errored') AND queue_name IS NULL;
