-- Issue 28, part C: click analytics (docs/links.md "Click analytics", docs/design/links.md).
--
-- What a click keeps besides what it kept: browser and OS (parsed from the user agent), region
-- (GeoIP or a trusted proxy's header), the five UTM parameters of the short address's query, and
-- the visitor: an HMAC of (address, user agent) under a salt of the click's UTC day, so visitors
-- of one day can be counted without keeping the raw address any longer than the click itself.
-- A bot is a click whose device type is `bot` (the user agent, classified by isbot): no column
-- of its own, so the clicks stored before this migration are classified the same way.
-- Constant defaults: adding the columns rewrites nothing. `trigger` is part A's (0600, the
-- same definition); IF NOT EXISTS keeps this file right whether or not that one ran before it.
ALTER TABLE link_clicks
  ADD COLUMN IF NOT EXISTS trigger text NOT NULL DEFAULT 'link',
  ADD COLUMN browser text NOT NULL DEFAULT '',
  ADD COLUMN os text NOT NULL DEFAULT '',
  ADD COLUMN region text NOT NULL DEFAULT '',
  ADD COLUMN utm_source text NOT NULL DEFAULT '',
  ADD COLUMN utm_medium text NOT NULL DEFAULT '',
  ADD COLUMN utm_campaign text NOT NULL DEFAULT '',
  ADD COLUMN utm_term text NOT NULL DEFAULT '',
  ADD COLUMN utm_content text NOT NULL DEFAULT '',
  ADD COLUMN visitor text NOT NULL DEFAULT '';

-- The salt of each UTC day's visitor hashes: random, made by the first click batch of the day,
-- deleted by housekeeping (links.forgetVisitorSalts) once the day is over and the next has begun.
-- Once a day's salt is gone its hashes cannot be recomputed from an address, even by us.
-- Not a tenant's data: one salt a day for the whole deployment.
CREATE TABLE link_visitor_salts (
  day date PRIMARY KEY,
  salt bytea NOT NULL
);

-- The visitors already seen on a day in a collection: a click batch inserts its visitors, and
-- those it inserted are the day's new visitors (a unique visitor is counted once a day, in the
-- hour of the first click stored). Only the last days are needed (housekeeping prunes the rest).
-- No foreign key (a lookup per new visitor on the click batch's path): removing a collection's
-- links removes its rows (the trigger below).
CREATE TABLE link_visitor_days (
  collection_id text NOT NULL,
  day date NOT NULL,
  visitor text NOT NULL,
  PRIMARY KEY (collection_id, day, visitor)
);

-- Collection-wide counts per UTC hour, dimension and value, bots apart, kept by the click batch
-- in its own transaction: collection-wide analytics read hundreds of rows where the clicks are
-- millions. dim: 0 every click (value ''), 1 country, 2 region, 3 city, 4 device, 5 browser,
-- 6 os, 7 referer host, 8 referer URL, 9-13 utm_source, utm_medium, utm_campaign, utm_term,
-- utm_content, 14 trigger, 15 link (value: the link id). Values are cut at 500 characters (the
-- key must fit an index entry). `uniques`: the clicks that were their visitor's first of the day
-- in the collection. `daily`: the same counts per UTC day (`hour` is the day's midnight), for
-- dims 1-15 only: a breakdown reads the window's whole days from them and only its partial days'
-- hours, 24 times fewer rows for the dimensions with many values (links, cities, referers).
CREATE TABLE link_click_rollup (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  dim smallint NOT NULL,
  daily boolean NOT NULL,
  hour timestamptz NOT NULL,
  value text NOT NULL,
  bot boolean NOT NULL,
  clicks bigint NOT NULL,
  uniques bigint NOT NULL,
  -- The counts ride in the index: a read is an index-only scan (no visit to rows scattered over
  -- the table by the batches' upserts: 23 against 126 ms for `groupBy=link` over 30 days of a
  -- million clicks, measured with the bench's data set).
  PRIMARY KEY (collection_id, dim, daily, hour, value, bot) INCLUDE (clicks, uniques)
);

-- The clicks stored before this migration, counted (no visitor: no uniques; what they did not
-- keep is ''). The referer host as the click statistics read it (links.repository.ts).
INSERT INTO link_click_rollup (collection_id, dim, daily, hour, value, bot, clicks, uniques)
SELECT collection_id, dim, daily,
  date_trunc(CASE WHEN daily THEN 'day' ELSE 'hour' END, clicked_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
  left(value, 500), bot, count(*), 0
FROM (
  SELECT c.collection_id, c.clicked_at, c.device_type = 'bot' AS bot, d.dim, d.value
  FROM link_clicks c
  JOIN collections k ON k.id = c.collection_id
  CROSS JOIN LATERAL (VALUES
    (0, ''), (1, c.country), (2, c.region), (3, c.city), (4, c.device_type), (5, c.browser), (6, c.os),
    (7, CASE WHEN c.referer = '' THEN ''
      ELSE coalesce(lower(substring(c.referer FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#:]+)')), left(c.referer, 100)) END),
    (8, c.referer), (9, c.utm_source), (10, c.utm_medium), (11, c.utm_campaign), (12, c.utm_term),
    (13, c.utm_content), (14, c.trigger), (15, c.link_id)
  ) AS d (dim, value)
) x
CROSS JOIN (VALUES (false), (true)) AS g (daily)
WHERE NOT (daily AND dim = 0)
GROUP BY 1, 2, 3, 4, 5, 6;

-- A link row really deleted (only with its collection) takes its collection's visitor days too.
CREATE FUNCTION link_visitor_days_follow_removed_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM link_visitor_days v USING (SELECT DISTINCT collection_id FROM removed) r
  WHERE v.collection_id = r.collection_id;
  RETURN NULL;
END
$$;
CREATE TRIGGER links_removed_take_visitor_days AFTER DELETE ON links
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION link_visitor_days_follow_removed_links();
