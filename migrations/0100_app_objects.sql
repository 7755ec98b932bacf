-- App objects: cases, threads and records of an app inside a collection, and the audit
-- trail of cases. Every object carries three JSON sections (data, owner, admin) and a
-- visibility (public | owner | admin). Soft delete: deleted_at set, row kept.

CREATE TABLE app_cases (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  app_id text NOT NULL,
  visibility text NOT NULL DEFAULT 'owner' CHECK (visibility IN ('public', 'owner', 'admin')),
  ref text,
  status text NOT NULL DEFAULT 'open',
  priority double precision,
  category text,
  assigned_to text,
  product_id text,
  proof_id text,
  contact_id text,
  data jsonb NOT NULL DEFAULT '{}',
  owner jsonb NOT NULL DEFAULT '{}',
  admin jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz,
  deleted_at timestamptz,
  PRIMARY KEY (collection_id, id)
);
-- Lists: newest first is the default order; status is the most common filter. Partial on live
-- rows, so that a list's count(*) is an index-only scan (deleted_at need not be read from the heap).
CREATE INDEX app_cases_app_created ON app_cases (collection_id, app_id, created_at DESC, id DESC)
  WHERE deleted_at IS NULL;
CREATE INDEX app_cases_app_status_created ON app_cases (collection_id, app_id, status, created_at DESC, id DESC)
  WHERE deleted_at IS NULL;
CREATE INDEX app_cases_app_contact ON app_cases (collection_id, app_id, contact_id, created_at DESC);

-- The audit trail: one row per create, update, delete and appended history entry.
CREATE TABLE app_case_history (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id bigserial NOT NULL,
  case_id text NOT NULL,
  app_id text NOT NULL,
  action text NOT NULL,
  actor_id text,
  actor_role text NOT NULL,
  changed_fields jsonb NOT NULL DEFAULT '[]',
  changes jsonb NOT NULL DEFAULT '{}',
  entry jsonb,
  target text,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (collection_id, id)
);
CREATE INDEX app_case_history_case ON app_case_history (collection_id, case_id, id);

CREATE TABLE app_threads (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  app_id text NOT NULL,
  visibility text NOT NULL DEFAULT 'owner' CHECK (visibility IN ('public', 'owner', 'admin')),
  slug text,
  title text,
  status text NOT NULL DEFAULT 'open',
  author_id text,
  author_type text,
  product_id text,
  proof_id text,
  contact_id text,
  parent_type text,
  parent_id text,
  reply_count integer NOT NULL DEFAULT 0,
  last_reply_at timestamptz,
  body jsonb NOT NULL DEFAULT '{}',
  replies jsonb NOT NULL DEFAULT '[]',
  tags jsonb NOT NULL DEFAULT '[]',
  data jsonb NOT NULL DEFAULT '{}',
  owner jsonb NOT NULL DEFAULT '{}',
  admin jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz,
  PRIMARY KEY (collection_id, id)
);
CREATE INDEX app_threads_app_created ON app_threads (collection_id, app_id, created_at DESC, id DESC)
  WHERE deleted_at IS NULL;
CREATE INDEX app_threads_parent ON app_threads (collection_id, app_id, parent_type, parent_id);
CREATE INDEX app_threads_tags ON app_threads USING gin (tags jsonb_path_ops);

CREATE TABLE app_records (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id text NOT NULL,
  app_id text NOT NULL,
  visibility text NOT NULL DEFAULT 'owner' CHECK (visibility IN ('public', 'owner', 'admin')),
  record_type text,
  ref text,
  scope_type text,
  scope_id text,
  custom_id text,
  custom_id_normalized text,
  source_system text,
  status text NOT NULL DEFAULT 'active',
  product_id text,
  variant_id text,
  batch_id text,
  proof_id text,
  contact_id text,
  author_id text,
  author_type text,
  parent_type text,
  parent_id text,
  starts_at timestamptz,
  expires_at timestamptz,
  specificity integer NOT NULL DEFAULT 0,
  facet_rule jsonb,
  singleton_key text,
  data jsonb NOT NULL DEFAULT '{}',
  owner jsonb NOT NULL DEFAULT '{}',
  admin jsonb NOT NULL DEFAULT '{}',
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz,
  PRIMARY KEY (collection_id, id)
);
CREATE INDEX app_records_app_created ON app_records (collection_id, app_id, created_at DESC, id DESC)
  WHERE deleted_at IS NULL;
CREATE INDEX app_records_app_status_created ON app_records (collection_id, app_id, status, created_at DESC, id DESC)
  WHERE deleted_at IS NULL;
CREATE INDEX app_records_parent ON app_records (collection_id, app_id, parent_type, parent_id);
-- `upsert` by ref: a ref names one record of an app (deleted ones included, so an upsert revives it).
CREATE UNIQUE INDEX app_records_ref ON app_records (collection_id, app_id, ref) WHERE ref IS NOT NULL;
-- singletonPer: at most one live record per key.
CREATE UNIQUE INDEX app_records_singleton ON app_records (collection_id, app_id, singleton_key)
  WHERE singleton_key IS NOT NULL AND deleted_at IS NULL;
