-- Short links, their clicks, and webhooks: registrations, the event outbox, deliveries and
-- the log of every delivery attempt.

-- A link is soft deleted (deleted_at) so that its code stays reserved: a printed or shared
-- short address must never start pointing somewhere else after its link was removed.
CREATE TABLE links (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  code text NOT NULL,
  destination_url text NOT NULL,
  title text,
  tags jsonb NOT NULL DEFAULT '[]'::jsonb,
  expires_at timestamptz,
  clicks bigint NOT NULL DEFAULT 0,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz,
  PRIMARY KEY (collection_id, id)
);
-- Codes are unique per deployment: /l/{code} carries no collection.
CREATE UNIQUE INDEX links_code ON links (code);
CREATE INDEX links_listing ON links (collection_id, created_at DESC, id) WHERE deleted_at IS NULL;

CREATE TABLE link_clicks (
  collection_id text NOT NULL,
  link_id text NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  clicked_at timestamptz NOT NULL,
  ip_address text NOT NULL DEFAULT '',
  user_agent text NOT NULL DEFAULT '',
  referer text NOT NULL DEFAULT '',
  country text NOT NULL DEFAULT '',
  city text NOT NULL DEFAULT '',
  device_type text NOT NULL DEFAULT '',
  PRIMARY KEY (collection_id, link_id, id),
  FOREIGN KEY (collection_id, link_id) REFERENCES links (collection_id, id) ON DELETE CASCADE
);
CREATE INDEX link_clicks_time ON link_clicks (collection_id, link_id, clicked_at DESC);

-- The signing secret is kept in clear: signing needs it (HMAC), as in every webhook service.
CREATE TABLE webhooks (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  url text NOT NULL,
  events jsonb NOT NULL,
  active boolean NOT NULL DEFAULT true,
  description text,
  secret text NOT NULL,
  consecutive_failures integer NOT NULL DEFAULT 0,
  disabled_at timestamptz,
  disabled_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, id)
);

-- The outbox: one row per event, written in the transaction of the change that caused it.
-- `body` is the exact JSON sent to receivers, so every attempt carries the same bytes.
CREATE TABLE webhook_events (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  type text NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, id)
);
CREATE INDEX webhook_events_time ON webhook_events (collection_id, created_at);

-- One delivery per (event, registration). `attempt_count` counts every attempt ever made;
-- a job carries the attempt number it is for, so a stale or duplicated job changes nothing.
CREATE TABLE webhook_deliveries (
  collection_id text NOT NULL,
  id text NOT NULL,
  webhook_id text NOT NULL,
  event_id text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempt_count integer NOT NULL DEFAULT 0,
  retries_left integer NOT NULL,
  next_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, id),
  UNIQUE (collection_id, webhook_id, event_id),
  FOREIGN KEY (collection_id, webhook_id) REFERENCES webhooks (collection_id, id) ON DELETE CASCADE,
  FOREIGN KEY (collection_id, event_id) REFERENCES webhook_events (collection_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_listing ON webhook_deliveries (collection_id, webhook_id, created_at DESC, id);

CREATE TABLE webhook_attempts (
  collection_id text NOT NULL,
  delivery_id text NOT NULL,
  attempt integer NOT NULL,
  webhook_id text NOT NULL,
  trigger text NOT NULL CHECK (trigger IN ('automatic', 'retry', 'redeliver', 'test')),
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  status_code integer,
  outcome text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'refused')),
  error text,
  response_excerpt text,
  PRIMARY KEY (collection_id, delivery_id, attempt),
  FOREIGN KEY (collection_id, delivery_id) REFERENCES webhook_deliveries (collection_id, id) ON DELETE CASCADE
);
