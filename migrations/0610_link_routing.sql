-- Routing of a short link (issue 28, part B): per-visitor rules, A/B variants, the query
-- string passed through, an expired link's fallback address, and an optional password.
-- rules: a JSON array [{when: {os?, device?, country?, language?}, url}], evaluated in order;
-- variants: a JSON array [{url, weight}]; both NULL when unused, so that a plain link's row and
-- its redirect stay as they were. The password is kept as an scrypt hash (never answered).
ALTER TABLE links
  ADD COLUMN rules jsonb,
  ADD COLUMN variants jsonb,
  ADD COLUMN pass_query boolean NOT NULL DEFAULT true,
  ADD COLUMN expired_url text,
  ADD COLUMN password_hash text;
