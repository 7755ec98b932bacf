-- The signing secret of a collection's `http` jobs (issue 27): each request such a job makes is
-- signed with it, as a webhook delivery is with its registration's. One row per collection,
-- made on first use; a rotation keeps the previous secret signing too until `previous_until`.
CREATE TABLE http_task_secrets (
  collection_id text PRIMARY KEY REFERENCES collections(id) ON DELETE CASCADE,
  secret text NOT NULL,
  previous_secret text,
  previous_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  rotated_at timestamptz
);
