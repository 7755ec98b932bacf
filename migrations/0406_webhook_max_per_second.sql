-- A registration's own rate limit (issue 24, item 6): at most `max_per_second` attempts a
-- second to its receiver from one worker process (delivery.ts); NULL = no limit. Attempts
-- beyond it are put off (a new job for the same attempt, nothing counted), as at the
-- in-flight limit. Bounded like the API's field, so a hand-written UPDATE cannot store 0 (which
-- would put every attempt off forever).
ALTER TABLE webhooks ADD COLUMN max_per_second integer
  CONSTRAINT webhooks_max_per_second_range CHECK (max_per_second BETWEEN 1 AND 10000);
