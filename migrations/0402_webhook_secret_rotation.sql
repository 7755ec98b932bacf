-- Rotating a signing secret without breaking receivers mid-deploy: for a grace period the
-- replaced secret still signs every attempt next to the new one, so a receiver verifies with
-- whichever secret it holds (docs/webhooks.md#rotating-the-secret).
ALTER TABLE webhooks
  ADD COLUMN previous_secret text,
  ADD COLUMN previous_secret_expires_at timestamptz;
