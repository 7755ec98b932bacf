-- Funnel people exports keep their format as interaction exports do, so that both are files of
-- one shape (src/db/chunked-files.ts). Every people export so far is CSV.
ALTER TABLE funnel_exports ADD COLUMN format text NOT NULL DEFAULT 'csv';
