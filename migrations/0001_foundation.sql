-- Foundation: tenants, their credentials, platform settings, locations.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE platform_settings (
  key text PRIMARY KEY,
  value text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE collections (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  prefix text NOT NULL,
  key_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  PRIMARY KEY (collection_id, id)
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (key_hash);

-- Locations: collection_id is NULL for global (platform) locations, the one deliberate
-- exception to "every tenant row has a collection". Two trigram indexes keep `q` fast on
-- large tables: search_text serves the substring match on name and description, lower(name)
-- the typo-tolerant word-similarity fallback (cheap to recheck because names are short).
CREATE TABLE locations (
  id text PRIMARY KEY,
  collection_id text REFERENCES collections(id) ON DELETE CASCADE,
  name text NOT NULL,
  category text,
  description text,
  country_name text,
  country_code text,
  website_url text,
  logo_url text,
  phone text,
  email text,
  geofence jsonb,
  metadata jsonb,
  search_text text GENERATED ALWAYS AS (lower(name || ' ' || coalesce(description, ''))) STORED,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX locations_scope_name ON locations (collection_id, name, id);
CREATE INDEX locations_search_trgm ON locations USING gin (search_text gin_trgm_ops);
CREATE INDEX locations_name_trgm ON locations USING gin (lower(name) gin_trgm_ops);
