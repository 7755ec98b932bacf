-- Subscriptions narrowed by what an event is about (issue 24): {appIds, linkIds, interactionIds,
-- journeyIds}, each a list; NULL when the registration hears every event of its types.
-- `events` may now hold family wildcards (`case.*`) and `*`; the catalogue checks them on write.
ALTER TABLE webhooks ADD COLUMN filters jsonb;
