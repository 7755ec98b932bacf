-- A thread's replies, one row each (they were one jsonb array on the thread, which every
-- reply rewrote and every read returned: 60 replies of 900 KB made a 54 MB thread). A reply
-- is written once and never changed; the thread keeps reply_count and last_reply_at, updated
-- in the statement that inserts the reply (threads.repository.ts `appendReply`).
--
-- `seq` is the reply's id within its thread: its number, 1 for the first reply. The thread's
-- reply_count after the increment gives it, under the thread row's lock, so concurrent replies
-- get distinct numbers in the order they were stored, and pages in `seq` order join up.
-- `extra` holds the fields a client sent beyond the three every reply has (text, attachments, …).
CREATE TABLE app_thread_replies (
  collection_id text NOT NULL,
  thread_id text NOT NULL,
  seq integer NOT NULL,
  at timestamptz NOT NULL,
  author_id text NOT NULL,
  author_type text NOT NULL,
  extra jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (collection_id, thread_id, seq),
  FOREIGN KEY (collection_id, thread_id) REFERENCES app_threads (collection_id, id) ON DELETE CASCADE
);

-- The existing arrays, in their order. An entry always had at, authorId and authorType (the
-- service set them); the fallbacks only keep a hand-edited entry from stopping the migration.
INSERT INTO app_thread_replies (collection_id, thread_id, seq, at, author_id, author_type, extra)
SELECT t.collection_id, t.id, e.n::integer,
  coalesce(CASE WHEN jsonb_typeof(e.r->'at') = 'string' THEN (e.r->>'at')::timestamptz END, t.updated_at),
  coalesce(e.r->>'authorId', ''),
  coalesce(e.r->>'authorType', 'admin'),
  CASE WHEN jsonb_typeof(e.r) = 'object' THEN e.r - 'at' - 'authorId' - 'authorType' ELSE '{}'::jsonb END
FROM app_threads t, jsonb_array_elements(t.replies) WITH ORDINALITY AS e(r, n)
WHERE jsonb_typeof(t.replies) = 'array';

-- The next reply's number is reply_count + 1: never below the replies moved.
UPDATE app_threads SET reply_count = jsonb_array_length(replies)
WHERE jsonb_typeof(replies) = 'array' AND jsonb_array_length(replies) > reply_count;

ALTER TABLE app_threads DROP COLUMN replies;
