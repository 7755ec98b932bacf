-- A registration is disabled after WEBHOOK_DISABLE_AFTER_FAILURES consecutive failed
-- *deliveries* (a delivery fails when its last automatic retry fails), not attempts
-- (CONTRACT §8): read per attempt, a receiver down for seconds during a burst was disabled in
-- 8.5 s. `consecutive_failures` (the API's `consecutiveFailures`) now counts failed deliveries;
-- `attempt_failures` counts failed attempts, once per backoff round, for the backoff's length
-- (delivery.ts). The counts kept so far were attempts: they move to `attempt_failures`, and
-- every registration starts with no failed delivery counted.
ALTER TABLE webhooks ADD COLUMN attempt_failures integer NOT NULL DEFAULT 0;
UPDATE webhooks SET attempt_failures = consecutive_failures, consecutive_failures = 0 WHERE consecutive_failures <> 0;
