-- A record's singleton key names its contact when it has one (`singletonKey` in
-- src/modules/app-objects/records/records.service.ts): a person's singleton is one per person
-- ("one registration per product per contact"), so two customers' records of one product no
-- longer share a key. Keys of records without a contact are unchanged. Only rows that have a
-- singleton key and a contact are written (singletons are few); the rest are read once.
-- A live row whose new key another live row already holds (possible only if a key's own text
-- ended in `|contact:<id>`) keeps its old key rather than failing the migration.
UPDATE app_records r
SET singleton_key = r.singleton_key || '|contact:' || r.contact_id
WHERE r.singleton_key IS NOT NULL
  AND r.contact_id IS NOT NULL
  AND NOT (r.deleted_at IS NULL AND EXISTS (
    SELECT 1 FROM app_records o
    WHERE o.collection_id = r.collection_id AND o.app_id = r.app_id AND o.deleted_at IS NULL
      AND o.singleton_key = r.singleton_key || '|contact:' || r.contact_id));
