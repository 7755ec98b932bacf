-- Leaner click storage. Clicks are the one table written at the rate of public traffic, and
-- measured per stored click (bench/links.bench.ts, docs/benchmarks.md) the foreign key to
-- links cost as much as the insert itself: it runs one lookup per row. Two indexes where one
-- serves every read cost the rest.
--   * One index: the primary key leads with what the click list filters and sorts on.
--   * No foreign key. Integrity is kept by the writer instead: a batch locks its links' rows
--     (the click counter update) and stores clicks only for links it found, so a click can
--     neither precede its link nor outlive a link removed meanwhile.
--   * A link row that is really deleted (only ever with its collection: links themselves are
--     soft deleted) takes its clicks along, once per statement rather than once per row.
ALTER TABLE link_clicks DROP CONSTRAINT link_clicks_collection_id_link_id_fkey;
ALTER TABLE link_clicks DROP CONSTRAINT link_clicks_pkey;
DROP INDEX link_clicks_time;
ALTER TABLE link_clicks ADD PRIMARY KEY (collection_id, link_id, clicked_at, id);

CREATE FUNCTION link_clicks_follow_removed_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM link_clicks c USING removed r WHERE c.collection_id = r.collection_id AND c.link_id = r.id;
  RETURN NULL;
END
$$;
CREATE TRIGGER links_removed_take_clicks AFTER DELETE ON links
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION link_clicks_follow_removed_links();
