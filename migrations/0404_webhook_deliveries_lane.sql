-- Webhook deliveries run in a lane of their own (migration 0305, engine.ts "Fairness"): the
-- delivery jobs already queued or running move to it. A registration whose attempts keep
-- failing is slowed down before it is disabled: `backoff_until` holds its next attempts back
-- (delivery.ts).
UPDATE jobs SET lane = 'deliveries'
  WHERE task = 'webhooks.deliver' AND status IN ('queued', 'errored', 'running');

ALTER TABLE webhooks ADD COLUMN backoff_until timestamptz;
