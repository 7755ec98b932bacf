-- link.clicked events noted by the redirect's click batches and published by the processes that
-- run jobs (issue 24: a click of a subscribed collection costs the redirect's process one row
-- per batch, not an event, a delivery and a job per click). One row per batch and collection:
-- the batch's clicks as a JSON array of tuples (`json`, kept as written: nothing to convert on
-- the redirect's side); removed when published (links click-events.ts).
CREATE TABLE link_click_events (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  seq bigserial,
  clicks json NOT NULL,
  noted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, seq)
);
