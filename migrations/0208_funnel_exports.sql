-- Funnel people exports (issue 29): the CSV a `journeys.peopleExport` job writes, stored in the
-- database in ~1 MiB chunks as interaction exports are (any API process serves the download,
-- whichever worker wrote it). A retried attempt starts over (its partial rows are replaced).
CREATE TABLE funnel_exports (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  job_id bigint NOT NULL,
  row_count bigint NOT NULL DEFAULT 0,
  byte_count bigint NOT NULL DEFAULT 0,
  complete boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, job_id)
);
CREATE TABLE funnel_export_chunks (
  collection_id text NOT NULL,
  job_id bigint NOT NULL,
  seq integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (collection_id, job_id, seq),
  FOREIGN KEY (collection_id, job_id) REFERENCES funnel_exports (collection_id, job_id) ON DELETE CASCADE
);
