-- Interactions and journeys. See docs/interactions.md for the storage design.

-- An interaction type: what may be recorded, and who may record or read it (permissions).
CREATE TABLE interaction_types (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  app_id text NOT NULL,
  permissions jsonb NOT NULL DEFAULT '{}'::jsonb,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, id)
);
CREATE INDEX interaction_types_app ON interaction_types (collection_id, app_id, id);

-- Interaction events: the high-volume table (tens of millions of rows per collection).
-- Narrow rows, a bigint surrogate key, no foreign key on the hot path (the type is checked by
-- the service), and one index per access path, each led by collection_id and ending in time
-- so that every window query is a range scan of one index.
CREATE TABLE interaction_events (
  collection_id text NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  event_id text NOT NULL,
  interaction_id text NOT NULL,
  app_id text,
  occurred_at timestamptz NOT NULL DEFAULT now(),
  user_id text,
  contact_id text,
  anon_id text,
  outcome text,
  scope text,
  broadcast_id text,
  journey_id text,
  metadata jsonb,
  source text NOT NULL DEFAULT 'admin',
  updated_at timestamptz,
  deleted_at timestamptz,
  PRIMARY KEY (collection_id, id)
);
-- Counts and queries by interaction over a time window (the main analytics path). INCLUDE
-- carries every column counts-by-outcome (with or without dedupeLatest) and the funnel's
-- completion lookups read, so they run as index-only scans once the visibility map is set.
CREATE INDEX interaction_events_by_interaction
  ON interaction_events (collection_id, interaction_id, occurred_at) INCLUDE (outcome, user_id, contact_id, deleted_at, id);
-- Everything in a time window (query without interaction, exports).
CREATE INDEX interaction_events_by_time ON interaction_events (collection_id, occurred_at);
-- One user's events (by-user, uniquePerUser checks, funnel completion lookups by userId).
CREATE INDEX interaction_events_by_user
  ON interaction_events (collection_id, user_id, interaction_id, occurred_at) WHERE user_id IS NOT NULL;
CREATE INDEX interaction_events_by_contact
  ON interaction_events (collection_id, contact_id, interaction_id, occurred_at) WHERE contact_id IS NOT NULL;
CREATE INDEX interaction_events_by_anon
  ON interaction_events (collection_id, anon_id, interaction_id, occurred_at) WHERE anon_id IS NOT NULL;
-- Journey entry (first event carrying journey_id), index-only.
CREATE INDEX interaction_events_by_journey
  ON interaction_events (collection_id, journey_id, occurred_at) INCLUDE (user_id, contact_id, deleted_at)
  WHERE journey_id IS NOT NULL;
-- Versions of one logical event (latestPerEventId, event update).
CREATE INDEX interaction_events_by_event_id ON interaction_events (collection_id, event_id, occurred_at);

CREATE TABLE journeys (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  app_id text,
  name text NOT NULL,
  active boolean NOT NULL DEFAULT true,
  journey_type text NOT NULL,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, id)
);
CREATE INDEX journeys_list ON journeys (collection_id, created_at, id);

-- Finished exports (task interactions.export), stored in the database in chunks so that any
-- API process can stream a file written by any worker process.
CREATE TABLE interaction_exports (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  job_id bigint NOT NULL,
  format text NOT NULL,
  row_count bigint NOT NULL DEFAULT 0,
  byte_count bigint NOT NULL DEFAULT 0,
  complete boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, job_id)
);
CREATE TABLE interaction_export_chunks (
  collection_id text NOT NULL,
  job_id bigint NOT NULL,
  seq integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (collection_id, job_id, seq),
  FOREIGN KEY (collection_id, job_id) REFERENCES interaction_exports (collection_id, job_id) ON DELETE CASCADE
);
