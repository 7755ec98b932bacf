-- Which way of its link a click was sent (routing.ts): `destination`, `rule:<i>` (the link's
-- rules[i] matched) or `variant:<i>` (its variants[i] was drawn), so that an A/B split can be
-- read by clicks and conversions (docs/links.md, "Routing"). Clicks stored before this
-- migration did not keep it: ''.
ALTER TABLE link_clicks ADD COLUMN route text NOT NULL DEFAULT '';
