-- Every thread and record has an authorType (the original types it as a required string).
-- Users' objects always had one (`user`, or what they sent); objects written by admins
-- (creates, upserts, imports) had none unless the admin named one, so NULL means "written
-- by an admin" and becomes `admin`. The default keeps an insert that leaves the column out
-- (an upsert of a process that has not been upgraded yet) on the same rule; NOT NULL makes it
-- hold from here on.
UPDATE app_threads SET author_type = 'admin' WHERE author_type IS NULL;
ALTER TABLE app_threads ALTER COLUMN author_type SET DEFAULT 'admin';
ALTER TABLE app_threads ALTER COLUMN author_type SET NOT NULL;

UPDATE app_records SET author_type = 'admin' WHERE author_type IS NULL;
ALTER TABLE app_records ALTER COLUMN author_type SET DEFAULT 'admin';
ALTER TABLE app_records ALTER COLUMN author_type SET NOT NULL;
