-- Live cases per (collection, app, status), so that a case list filtered by status alone can
-- answer its exact `total` without counting hundreds of thousands of index entries.
-- Writers only append deltas (+1/-1) from a trigger, in the writing transaction: no hot row,
-- no lock order, no deadlock. Readers sum the deltas of their key; a reader that finds many
-- deltas folds them into one row per status in a single statement (DELETE ... RETURNING).
CREATE TABLE app_case_counts (
  collection_id text NOT NULL,
  app_id text NOT NULL,
  status text NOT NULL,
  n bigint NOT NULL
);
CREATE INDEX app_case_counts_key ON app_case_counts (collection_id, app_id, status);

CREATE FUNCTION app_case_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
    IF TG_OP = 'DELETE' OR NEW.deleted_at IS NOT NULL OR NEW.status IS DISTINCT FROM OLD.status THEN
      INSERT INTO app_case_counts VALUES (OLD.collection_id, OLD.app_id, OLD.status, -1);
    END IF;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
    IF TG_OP = 'INSERT' OR OLD.deleted_at IS NOT NULL OR NEW.status IS DISTINCT FROM OLD.status THEN
      INSERT INTO app_case_counts VALUES (NEW.collection_id, NEW.app_id, NEW.status, 1);
    END IF;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER app_case_counts_track AFTER INSERT OR UPDATE OF status, deleted_at OR DELETE ON app_cases
  FOR EACH ROW EXECUTE FUNCTION app_case_counts_track();

-- Cases that exist before the trigger (none on a new install) are counted once here.
INSERT INTO app_case_counts (collection_id, app_id, status, n)
SELECT collection_id, app_id, status, count(*) FROM app_cases WHERE deleted_at IS NULL GROUP BY 1, 2, 3;
