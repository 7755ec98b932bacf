-- The fields clients of the original service send with an event besides ours: the organisation,
-- the product, proof, variant and batch it concerns, an event type, the client's own free-text
-- source tag (`source` already holds the channel, admin or public, so the tag has its own
-- column), and any further fields of the body (`extra`), returned with the event.
-- Nullable columns without a default: PostgreSQL only records them in the catalogue, so this
-- is instant on a table of tens of millions of rows (no rewrite, no scan) and existing rows
-- read them as NULL. No index: no query filters on them.
ALTER TABLE interaction_events
  ADD COLUMN org_id text,
  ADD COLUMN product_id text,
  ADD COLUMN proof_id text,
  ADD COLUMN variant_id text,
  ADD COLUMN batch_id text,
  ADD COLUMN event_type text,
  ADD COLUMN source_tag text,
  ADD COLUMN extra jsonb;
