-- Click milestones (issue 24): a link's own thresholds for `link.clicks.milestone` events, a
-- JSON array of positive integers; NULL takes the default (10, 100, 1,000, …).
ALTER TABLE links ADD COLUMN click_milestones jsonb;
