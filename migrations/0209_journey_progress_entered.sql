-- Maintained progress answers a funnel with a period too (docs/journeys.md "Maintained
-- progress"): a recipient whose journey entry lies in the period has, within it, exactly the
-- steps its progress row completed before the period's end. This index finds those rows by
-- entry time, so such a funnel reads the period's entrants rather than every step event since
-- the journey began. Without INCLUDE: a covering index was measured 0.41 against 0.57 s for
-- 229,000 entrants but is almost the table's size again, written on every progress change.
CREATE INDEX journey_progress_entered
  ON journey_progress (collection_id, journey_id, id_field, version, entered_at);
