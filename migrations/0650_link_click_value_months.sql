-- The top referer URLs of a window without grouping every value the window holds.
--
-- A breakdown by referer URL groups the window's daily rollup rows by value: over 30 days of a
-- million clicks that is 600,000 rows into 170,000 values, about half a second of one core in
-- the best single statement (docs/benchmarks.md). The answer needs only the top `limit` values
-- (the rest is `other`, read from dim 0). So a ranked dim keeps, per collection and UTC month,
-- each value's clicks (bots included), and its breakdown runs the threshold algorithm: read the
-- k values with the most clicks in each month the window touches, count those candidates
-- exactly from the rollup (the index below), and stop once the limit-th of them has more clicks
-- than any value not read could have (the sum of each month's k-th count); else k grows, and
-- past a bound the grouping statement answers as before (links/analytics.repository.ts).
--
-- Only dim 8 (referer URL) is ranked: the one dim whose values are per page rather than a short
-- list, and the only breakdown measured past 200 ms. The months are kept by the click batch in
-- the rollup's own statement; nothing prunes them but the collection's removal, as the rollup,
-- so a month's count is never below what the rollup holds for it (months whose clicks were
-- dropped by retention still count: an upper bound stays one).
CREATE TABLE link_click_value_months (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  dim smallint NOT NULL,
  month date NOT NULL,
  value text NOT NULL,
  clicks bigint NOT NULL,
  PRIMARY KEY (collection_id, dim, month, value)
);

-- A month's values, most clicks first: the threshold algorithm's sorted reads.
CREATE INDEX link_click_value_months_ranked ON link_click_value_months (collection_id, dim, month, clicks DESC);

-- A ranked dim's rollup rows by value: the exact count of each candidate over the window.
CREATE INDEX link_click_rollup_ranked_by_value ON link_click_rollup (collection_id, value, daily, hour)
  INCLUDE (bot, clicks, uniques) WHERE dim = 8;

-- The months of the clicks counted so far, from the daily rows (every click of a dim other than
-- 0 is in one).
INSERT INTO link_click_value_months (collection_id, dim, month, value, clicks)
SELECT collection_id, dim, date_trunc('month', hour AT TIME ZONE 'UTC')::date, value, sum(clicks)
FROM link_click_rollup
WHERE dim = 8 AND daily
GROUP BY 1, 2, 3, 4;
