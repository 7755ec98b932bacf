-- Every code a collection has ever held stays that collection's: a printed address or QR code
-- must never start leading to another collection's page. Until now a deleted link's code was
-- reserved (its row stays), but a link renamed away from a code left that code free for
-- anyone. A code is claimed here when a link first takes it, and the claim outlives the rename
-- and the deletion: the same collection may take the code back, no other collection ever can.
--
-- Unique on `code` alone, like links.code: the short address carries no collection, so a claim
-- by one collection must conflict with a claim by any other. The claim is made in the same
-- transaction as the link's insert or rename, so two collections racing for a code meet on
-- this index and one of them is refused.
CREATE TABLE link_codes (
  collection_id text NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  code text NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, code)
);
CREATE UNIQUE INDEX link_codes_code ON link_codes (code);

-- The codes links hold now (live or deleted) are claimed by their collections. Codes given up
-- by a rename before this migration cannot be recovered (nothing recorded them): they stay
-- free for whoever takes them first.
INSERT INTO link_codes (collection_id, code, claimed_at)
SELECT collection_id, code, created_at FROM links
ON CONFLICT DO NOTHING;
